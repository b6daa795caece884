/*
 * source_cupti_load.c - loading what the CUPTI engines call: libcuda and
 * libcupti with dlopen, never linked (a library that may be injected into
 * any process must not drag CUDA in), their entry points resolved into
 * the engine's state, and their errors put in words a user can act on
 * (no driver, the toolkit's stub, a profiling restriction, another tool
 * attached).
 */
#include "cupti_int.h"

#include <dlfcn.h>
#include <stdio.h>

static void *sym(void *lib, const char *name, const char **missing)
{
    void *p = dlsym(lib, name);
    if (!p && !*missing)
        *missing = name;
    return p;
}

int cupti_load_cuda(cupti_state *s, char *why, size_t whylen)
{
    const char *missing = NULL;
    s->cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!s->cuda)
        s->cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!s->cuda) {
        snprintf(why, whylen,
                 "cupti: libcuda.so.1 not found (no NVIDIA driver?): %.120s",
                 dlerror());
        return GPUFL_EUNAVAIL;
    }
    s->cuInit = (gfl_cuInit_fn)sym(s->cuda, "cuInit", &missing);
    s->cuDriverGetVersion =
        (gfl_cuDriverGetVersion_fn)sym(s->cuda, "cuDriverGetVersion", &missing);
    s->cuDeviceGetCount =
        (gfl_cuDeviceGetCount_fn)sym(s->cuda, "cuDeviceGetCount", &missing);
    s->cuDeviceGet = (gfl_cuDeviceGet_fn)sym(s->cuda, "cuDeviceGet", &missing);
    s->cuDeviceGetAttribute = (gfl_cuDeviceGetAttribute_fn)sym(
        s->cuda, "cuDeviceGetAttribute", &missing);
    s->cuDeviceGetName =
        (gfl_cuDeviceGetName_fn)sym(s->cuda, "cuDeviceGetName", &missing);
    /* optional: the header macros rename these; dlsym needs the real names */
    s->cuDeviceGetUuid =
        (gfl_cuDeviceGetUuid_fn)dlsym(s->cuda, "cuDeviceGetUuid_v2");
    s->cuDeviceTotalMem =
        (gfl_cuDeviceTotalMem_fn)dlsym(s->cuda, "cuDeviceTotalMem_v2");
    if (missing) {
        snprintf(why, whylen, "cupti: libcuda.so.1 lacks %s", missing);
        return GPUFL_EUNAVAIL;
    }
    return 0;
}

const char *cupti_cuda_err_name(int rc)
{
    switch (rc) {
    case GFL_CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE: no CUDA GPU";
    case GFL_CUDA_ERROR_STUB_LIBRARY:
        return "CUDA_ERROR_STUB_LIBRARY: libcuda.so.1 is the toolkit's stub, "
               "not the driver";
    case GFL_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
        return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: libcuda.so.1 and the "
               "kernel module differ";
    case GFL_CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    default: return "CUDA error";
    }
}

/* Explicit setting, then a CUPTI the application already loaded (two
 * copies in one process fight over the driver's tool interface), then
 * the default search path, then the toolkit's usual places
 * (docs/cupti-internals.md#library-loading). */
int cupti_load_cupti(cupti_state *s, char *why, size_t whylen)
{
    static const char *const where[] = {
        "/usr/local/cuda/lib64/libcupti.so.13",
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
        "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13",
    };
    const char *missing = NULL;
    const char *name = "libcupti.so.13";
    if (s->cfg.lib[0]) {
        name = s->cfg.lib;
        s->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    } else {
        s->lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
        if (!s->lib)
            s->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        for (size_t i = 0; !s->lib && i < sizeof where / sizeof where[0]; i++)
            s->lib = dlopen(where[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (!s->lib) {
        snprintf(why, whylen, "cupti: cannot load %.200s%s: %.120s", name,
                 s->cfg.lib[0] ? " (GPUFL_CUPTI_LIB)" : "", dlerror());
        return GPUFL_EUNAVAIL;
    }
#define GFL_SYM(field, fname)                                                  \
    s->field = (gfl_##fname##_fn)sym(s->lib, #fname, &missing)
    GFL_SYM(GetVersion, cuptiGetVersion);
    GFL_SYM(Subscribe, cuptiSubscribe);
    GFL_SYM(EnableCallback, cuptiEnableCallback);
    GFL_SYM(RegisterCallbacks, cuptiActivityRegisterCallbacks);
    GFL_SYM(Enable, cuptiActivityEnable);
    GFL_SYM(GetNextRecord, cuptiActivityGetNextRecord);
    GFL_SYM(FlushAll, cuptiActivityFlushAll);
    GFL_SYM(GetTimestamp, cuptiGetTimestamp);
#undef GFL_SYM
    s->GetResultString =
        (gfl_cuptiGetResultString_fn)dlsym(s->lib, "cuptiGetResultString");
    s->GetNumDropped = (gfl_cuptiActivityGetNumDroppedRecords_fn)dlsym(
        s->lib, "cuptiActivityGetNumDroppedRecords");
    s->EnableAndDump =
        (gfl_cuptiActivityEnable_fn)dlsym(s->lib, "cuptiActivityEnableAndDump");
    s->Disable =
        (gfl_cuptiActivityDisable_fn)dlsym(s->lib, "cuptiActivityDisable");
    if (missing) {
        snprintf(why, whylen, "cupti: %.200s lacks %s (not a CUDA 13 CUPTI?)",
                 name, missing);
        return GPUFL_EUNAVAIL;
    }
    return 0;
}

void cupti_reason(cupti_state *s, int rc, const char *call, char *why,
                  size_t whylen)
{
    const char *str = NULL;
    if (s->GetResultString && s->GetResultString(rc, &str) != 0)
        str = NULL;
    switch (rc) {
    case GFL_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
        snprintf(why, whylen,
                 "cupti: %s: insufficient privileges for GPU profiling "
                 "(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES; the driver restricts "
                 "profiling to administrators: NVreg_RestrictProfilingToAdmin"
                 "Users=1)",
                 call);
        break;
    case GFL_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        snprintf(why, whylen,
                 "cupti: %s: another CUPTI tool is attached to this process "
                 "(Nsight, a framework profiler, a debugger)",
                 call);
        break;
    case GFL_CUPTI_ERROR_UNKNOWN:
        snprintf(why, whylen,
                 "cupti: %s failed (CUPTI_ERROR_UNKNOWN: no GPU or driver?)",
                 call);
        break;
    default:
        snprintf(why, whylen, "cupti: %s failed: %.100s (%d)", call,
                 str ? str : "CUPTI error", rc);
    }
    s->stopping = 1;
}

void cupti_result_text(cupti_state *s, int rc, char *out, size_t outlen)
{
    const char *str = NULL;
    if (s->GetResultString && s->GetResultString(rc, &str) != 0)
        str = NULL;
    if (rc == GFL_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
        snprintf(out, outlen,
                 "insufficient privileges for GPU performance counters "
                 "(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES; the driver restricts "
                 "profiling to administrators: NVreg_RestrictProfilingToAdmin"
                 "Users=1)");
    else
        snprintf(out, outlen, "%.100s (%d)", str ? str : "CUPTI error", rc);
}
