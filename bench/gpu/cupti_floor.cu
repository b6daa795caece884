// cupti_floor.cu - what CUPTI itself costs a kernel launch, without gpufl:
// the floor under gpufl's tracing and monitoring figures (run.sh section 3b).
//
//   cupti_floor MODE N   N launches of an empty kernel after 1,000 warm ones,
//                        back to back: WALL_NS (the loop's wall time / N,
//                        synchronised at the end, as ring.cu's LAUNCH_NS);
//                        then N more in batches of 256, each synchronised:
//                        ISSUE_NS and CPU_NS (wall and thread CPU time of the
//                        launch calls alone, per launch); with activity
//                        records on, KERNEL_RECORDS (must be 2N + 1,000,
//                        N rounded to 256)
//
// MODE, each a subset of what gpufl's cupti engine switches on
// (src/client/source_cupti.c, source_cupti_launch.c):
//   none     no CUPTI at all
//   cb-drv   an empty callback on the driver's launch entry points
//   cb-rt    an empty callback on the runtime's launch entry points
//   cb-both  both (gpufl's launch callbacks: 4 calls per <<<>>> launch)
//   cb-sync  an empty callback on synchronisations, copies and allocations
//            only (none on launches: what a launch pays for callbacks
//            elsewhere)
//   act      CONCURRENT_KERNEL activity records only, no callbacks
//   act-api  act + API records for the launch entry points
//   all      act-api + cb-both (what tracing asks of CUPTI; the callback
//            does nothing)
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cupti.h>

#include "common.cuh"

extern "C" __global__ void gfl_floor_tiny(int *x)
{
    if (x && threadIdx.x == 1000000)
        x[0] = 1;
}

#define CU(x)                                                                  \
    do {                                                                       \
        CUptiResult r_ = (x);                                                  \
        if (r_ != CUPTI_SUCCESS) {                                             \
            const char *s_ = "?";                                              \
            cuptiGetResultString(r_, &s_);                                     \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_);   \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static const CUpti_CallbackId rt_ids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
};
static const CUpti_CallbackId drv_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
};
// not launches: does a callback on other calls slow a launch too?
static const CUpti_CallbackId rt_sync_ids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
};
static const CUpti_CallbackId drv_sync_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
};
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static unsigned long long g_calls, g_kernels;

static void CUPTIAPI on_api(void *, CUpti_CallbackDomain, CUpti_CallbackId,
                            const void *)
{
    g_calls++; // the callback's own work: nothing
}

static void CUPTIAPI buf_request(uint8_t **buf, size_t *size, size_t *max)
{
    *size = 8 << 20;
    *buf = (uint8_t *)aligned_alloc(8, *size);
    *max = 0;
}

static void CUPTIAPI buf_complete(CUcontext, uint32_t, uint8_t *buf,
                                  size_t size, size_t valid)
{
    CUpti_Activity *r = nullptr;
    (void)size;
    while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            g_kernels++;
    free(buf);
}

static double cpu_ms()
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: cupti_floor none|cb-drv|cb-rt|cb-both|cb-sync|act|"
                        "act-api|all N\n");
        return 2;
    }
    const char *m = argv[1];
    int n = (int)strtol(argv[2], NULL, 10);
    int cb_rt = !strcmp(m, "cb-rt") || !strcmp(m, "cb-both") || !strcmp(m, "all");
    int cb_drv = !strcmp(m, "cb-drv") || !strcmp(m, "cb-both") || !strcmp(m, "all");
    int cb_sync = !strcmp(m, "cb-sync");
    int act = !strncmp(m, "act", 3) || !strcmp(m, "all");
    int api = !strcmp(m, "act-api") || !strcmp(m, "all");
    if (!cb_rt && !cb_drv && !cb_sync && !act && strcmp(m, "none")) {
        fprintf(stderr, "cupti_floor: unknown mode %s\n", m);
        return 2;
    }
    if (cb_rt || cb_drv || cb_sync) {
        CUpti_SubscriberHandle sub;
        CU(cuptiSubscribe(&sub, on_api, nullptr));
        for (size_t i = 0; cb_sync && i < NELEM(rt_sync_ids); i++)
            CU(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, rt_sync_ids[i]));
        for (size_t i = 0; cb_sync && i < NELEM(drv_sync_ids); i++)
            CU(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, drv_sync_ids[i]));
        for (size_t i = 0; cb_rt && i < NELEM(rt_ids); i++)
            CU(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, rt_ids[i]));
        for (size_t i = 0; cb_drv && i < NELEM(drv_ids); i++)
            CU(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, drv_ids[i]));
    }
    if (act) {
        CU(cuptiActivityRegisterCallbacks(buf_request, buf_complete));
        CU(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        for (size_t i = 0; api && i < NELEM(rt_ids); i++)
            CU(cuptiActivityEnableRuntimeApi(rt_ids[i], 1));
        for (size_t i = 0; api && i < NELEM(drv_ids); i++)
            CU(cuptiActivityEnableDriverApi(drv_ids[i], 1));
    }
    CK(cudaFree(0));
    for (int i = 0; i < 1000; i++)
        gfl_floor_tiny<<<1, 32>>>(nullptr);
    CK(cudaDeviceSynchronize());
    // the stream: launches back to back, so the queue fills and the wall
    // time is max(issue, GPU) per launch
    unsigned long long calls0 = g_calls;
    double t0 = now_ms();
    for (int i = 0; i < n; i++)
        gfl_floor_tiny<<<1, 32>>>(nullptr);
    CK(cudaDeviceSynchronize());
    double wall = (now_ms() - t0) * 1e6 / n;
    double per_cb = (double)(g_calls - calls0) / n;
    // the issue: batches of 256, far below the queue's depth, timed around
    // the launch calls only: what the launching thread pays per launch
    double issue = 0, cpu = 0;
    int batches = n / 256 > 0 ? n / 256 : 1;
    for (int b = 0; b < batches; b++) {
        double a = now_ms(), c = cpu_ms();
        for (int i = 0; i < 256; i++)
            gfl_floor_tiny<<<1, 32>>>(nullptr);
        issue += now_ms() - a;
        cpu += cpu_ms() - c;
        CK(cudaDeviceSynchronize());
    }
    printf("MODE %s\nWALL_NS %.1f\nISSUE_NS %.1f\nCPU_NS %.1f\n"
           "CALLBACKS_PER_LAUNCH %.2f\n",
           m, wall, issue * 1e6 / (256.0 * batches),
           cpu * 1e6 / (256.0 * batches), per_cb);
    n += 256 * batches;
    if (act) {
        CU(cuptiActivityFlushAll(1));
        printf("KERNEL_RECORDS %llu (want %d)\n", g_kernels, n + 1000);
    }
    return 0;
}
