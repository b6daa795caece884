/*
 * source_cupti_decode.c - turns CUPTI activity records (CUDA 13.0 layouts,
 * cupti_abi_int.h) into gpufl events, and reads the device properties the
 * occupancy of each kernel needs.
 *
 * Runs on the CUPTI engine's flush thread only, outside every CUPTI
 * callback, so it may call the driver (cuDeviceGetAttribute) and take the
 * dictionary's lock.  Records are read by offset from CUPTI's stateless
 * iterator; only fields shared by every layout of an accepted CUPTI
 * version are read.  Records whose timing could not be collected
 * (start = end = 0, or end before start) are not written, and counted
 * (docs/cupti-internals.md#activity-records).
 */
#include "cupti_int.h"

#include <stdio.h>
#include <string.h>

#include "client_int.h"

static int attr(cupti_state *s, gfl_cu_device d, int a)
{
    int v = 0;
    if (s->cuDeviceGetAttribute(&v, a, d) != 0)
        v = 0;
    return v < 0 ? 0 : v;
}

int cupti_devices_query(cupti_state *s)
{
    int n = 0, drv = 0;
    if (s->cuDeviceGetCount(&n) != 0 || n < 0)
        n = 0;
    if (n > GPU_MAX_DEVICES)
        n = GPU_MAX_DEVICES;
    if (s->cuDriverGetVersion(&drv) != 0)
        drv = 0;
    for (int i = 0; i < n; i++) {
        gpu_device *o = &s->devices[i];
        cupti_dev *cd = &s->devs[i];
        occ_device od;
        gfl_cu_device d = 0;
        gfl_cu_uuid u;
        size_t mem = 0;
        memset(o, 0, sizeof *o);
        o->id = (uint32_t)i;
        if (s->cuDeviceGet(&d, i) != 0)
            continue;
        if (s->cuDeviceGetName(o->name, (int)sizeof o->name - 1, d) != 0)
            o->name[0] = 0;
        o->name[sizeof o->name - 1] = 0;
        if (s->cuDeviceGetUuid && s->cuDeviceGetUuid(&u, d) == 0) {
            const unsigned char *b = (const unsigned char *)u.bytes;
            snprintf(o->uuid, sizeof o->uuid,
                     "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
                     "%02x%02x%02x%02x%02x%02x",
                     b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
                     b[10], b[11], b[12], b[13], b[14], b[15]);
        }
        if (drv)
            snprintf(o->driver, sizeof o->driver, "cuda %d.%d", drv / 1000,
                     drv % 1000 / 10);
        if (s->cuDeviceTotalMem && s->cuDeviceTotalMem(&mem, d) == 0)
            o->mem_total = mem;
        o->cc_major = attr(s, d, GFL_CU_ATTR_COMPUTE_CAPABILITY_MAJOR);
        o->cc_minor = attr(s, d, GFL_CU_ATTR_COMPUTE_CAPABILITY_MINOR);
        o->sm_count = (uint32_t)attr(s, d, GFL_CU_ATTR_MULTIPROCESSOR_COUNT);
        o->max_threads_per_sm =
            (uint32_t)attr(s, d, GFL_CU_ATTR_MAX_THREADS_PER_MULTIPROCESSOR);
        o->max_blocks_per_sm =
            (uint32_t)attr(s, d, GFL_CU_ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR);
        o->regs_per_sm =
            (uint32_t)attr(s, d, GFL_CU_ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR);
        o->smem_per_sm = (uint32_t)attr(
            s, d, GFL_CU_ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
        o->smem_per_block_optin =
            (uint32_t)attr(s, d, GFL_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
        /* the device's own numbers win over the architecture table
         * (docs/occupancy.md#inputs) */
        memset(&od, 0, sizeof od);
        od.max_threads_block =
            (uint32_t)attr(s, d, GFL_CU_ATTR_MAX_THREADS_PER_BLOCK);
        od.max_warps_sm = o->max_threads_per_sm / 32;
        od.max_blocks_sm = o->max_blocks_per_sm;
        od.regs_sm = o->regs_per_sm;
        od.regs_block =
            (uint32_t)attr(s, d, GFL_CU_ATTR_MAX_REGISTERS_PER_BLOCK);
        od.smem_sm = o->smem_per_sm;
        od.smem_block =
            (uint32_t)attr(s, d, GFL_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK);
        od.smem_optin = o->smem_per_block_optin;
        cd->arch_ok = occ_arch_for_cc(o->cc_major, o->cc_minor, &cd->arch) == 0;
        if (cd->arch_ok)
            occ_arch_override(&cd->arch, &od);
        cd->known = 1;
    }
    s->n_devs = n;
    return n;
}

/* ns on the CUPTI clock -> ns on the gpufl clock */
static uint64_t ts(const cupti_state *s, uint64_t t)
{
    return t ? (uint64_t)((int64_t)t + s->clock_offset) : 0;
}

static int valid_times(cupti_state *s, uint64_t start, uint64_t end)
{
    /* no device timestamp buffer left, or a forced flush of work still
     * running: do not write kernels at the epoch
     * (docs/cupti-internals.md#activity-records) */
    if (!start || end < start) {
        s->n_invalid++;
        return 0;
    }
    return 1;
}

static const cupti_dev *dev_props(cupti_state *s, uint32_t dev)
{
    /* injected into cuInit: the first decode after an API callback is the
     * first moment the driver may be asked */
    if (!s->n_devs && s->deferred_devices &&
        atomic_load_explicit(&s->api_seen, memory_order_relaxed))
        cupti_devices_query(s);
    if (dev < (uint32_t)s->n_devs && s->devs[dev].known && s->devs[dev].arch_ok)
        return &s->devs[dev];
    return NULL;
}

/* The carveout the launch asked for, percent, or -1 for none: the record's
 * explicit request, else its legacy cache preference (cudaFuncSetCache-
 * Config), which the calculator treats as these percentages
 * (docs/occupancy.md#inputs; cuda_occupancy.h does the same). */
static int carveout_of(const gfl_cupti_kernel10 *r)
{
    if (r->is_shared_memory_carveout_requested)
        return r->shared_memory_carveout_requested;
    switch (r->cache_config & 0x0f) {
    case GFL_CU_FUNC_CACHE_PREFER_SHARED: return 100;
    case GFL_CU_FUNC_CACHE_PREFER_L1: return 0;
    case GFL_CU_FUNC_CACHE_PREFER_EQUAL: return 50;
    default: return -1; /* PREFER_NONE: the driver's default */
    }
}

static void kernel(cupti_state *s, const gfl_cupti_kernel10 *r)
{
    gpufl_kernel k;
    cupti_launch l;
    uintptr_t frames[CUPTI_STACK_MAX];
    const cupti_dev *d;
    if (!valid_times(s, r->start, r->end))
        return;
    memset(&k, 0, sizeof k);
    k.sz = sizeof k;
    k.name_id = r->name ? gpufl_intern(r->name) : 0;
    k.device = r->device_id;
    k.stream = r->stream_id;
    k.corr = r->correlation_id;
    k.grid[0] = (uint32_t)r->grid_x;
    k.grid[1] = (uint32_t)r->grid_y;
    k.grid[2] = (uint32_t)r->grid_z;
    k.block[0] = (uint32_t)r->block_x;
    k.block[1] = (uint32_t)r->block_y;
    k.block[2] = (uint32_t)r->block_z;
    k.regs = r->registers_per_thread;
    k.smem_static = (uint32_t)r->static_shared_memory;
    k.smem_dynamic = (uint32_t)r->dynamic_shared_memory;
    k.local_mem = r->local_memory_per_thread;
    k.start_ns = ts(s, r->start);
    k.end_ns = ts(s, r->end);
    k.occupancy = -1.0f;
    if (r->launch_type == GFL_CUPTI_LAUNCH_COOP_SINGLE ||
        r->launch_type == GFL_CUPTI_LAUNCH_COOP_MULTI)
        k.flags |= GPUFL_KERNEL_COOPERATIVE;
    d = dev_props(s, r->device_id);
    if (d) {
        occ_launch ol;
        occ_result res;
        memset(&ol, 0, sizeof ol);
        ol.threads = k.block[0] * k.block[1] * k.block[2];
        ol.regs = k.regs;
        ol.smem_static = k.smem_static;
        ol.smem_dynamic = k.smem_dynamic;
        ol.optin = r->shmem_limit_config == GFL_CUPTI_SHMEM_LIMIT_OPTIN;
        ol.carveout_pct = carveout_of(r);
        ol.smem_executed = r->shared_memory_executed;
        if (occ_compute(&d->arch, &ol, &res) == 0) {
            k.occupancy = (float)res.occupancy;
            k.limiters = res.limiters;
        }
    }
    if (cupti_launch_find(s, k.corr, &l, frames)) {
        k.api_enter_ns = l.enter_ns;
        k.api_exit_ns = l.exit_ns;
        k.api_tid = l.tid;
        k.scope = l.scope;
        k.path_id = l.path_id;
        k.flags |= l.flags;
        if (l.n_frames)
            k.stack_id = cupti_stack_intern(s, frames, l.n_frames);
    } else {
        s->n_unmatched++; /* graph kernels, or evicted: still written */
    }
    if (!k.scope && !k.path_id)
        k.flags |= GPUFL_KERNEL_NO_SCOPE;
    gpufl_record_kernel(&k);
}

static uint32_t copy_kind(uint8_t k)
{
    switch (k) {
    case GFL_CUPTI_COPY_HTOD:
    case GFL_CUPTI_COPY_HTOA: return GPUFL_COPY_HTOD;
    case GFL_CUPTI_COPY_DTOH:
    case GFL_CUPTI_COPY_ATOH: return GPUFL_COPY_DTOH;
    case GFL_CUPTI_COPY_DTOD:
    case GFL_CUPTI_COPY_ATOA:
    case GFL_CUPTI_COPY_ATOD:
    case GFL_CUPTI_COPY_DTOA: return GPUFL_COPY_DTOD;
    case GFL_CUPTI_COPY_HTOH: return GPUFL_COPY_HTOH;
    case GFL_CUPTI_COPY_PTOP: return GPUFL_COPY_PTOP;
    default: return GPUFL_COPY_UNKNOWN;
    }
}

static void memcpy6(cupti_state *s, const gfl_cupti_memcpy6 *r)
{
    gpufl_memcpy m;
    if (!valid_times(s, r->start, r->end))
        return;
    memset(&m, 0, sizeof m);
    m.sz = sizeof m;
    m.kind = copy_kind(r->copy_kind);
    m.device = m.dst_device = r->device_id;
    m.stream = r->stream_id;
    /* the runtime's id when there is one: that is what a user's API trace
     * shows; the driver id is the fallback */
    m.corr = r->runtime_correlation_id ? r->runtime_correlation_id
                                       : r->correlation_id;
    if (r->flags & GFL_CUPTI_MEMCPY_ASYNC)
        m.flags |= GPUFL_MEMCPY_ASYNC;
    if (r->src_kind == GFL_CUPTI_MEM_PINNED ||
        r->dst_kind == GFL_CUPTI_MEM_PINNED)
        m.flags |= GPUFL_MEMCPY_PINNED;
    m.bytes = r->bytes;
    m.start_ns = ts(s, r->start);
    m.end_ns = ts(s, r->end);
    gpufl_record_memcpy(&m);
}

static void memcpy_ptop(cupti_state *s, const gfl_cupti_memcpy_ptop4 *r)
{
    gpufl_memcpy m;
    if (!valid_times(s, r->start, r->end))
        return;
    memset(&m, 0, sizeof m);
    m.sz = sizeof m;
    m.kind = GPUFL_COPY_PTOP;
    m.device = r->src_device_id;
    m.dst_device = r->dst_device_id;
    m.stream = r->stream_id;
    m.corr = r->correlation_id;
    if (r->flags & GFL_CUPTI_MEMCPY_ASYNC)
        m.flags |= GPUFL_MEMCPY_ASYNC;
    m.bytes = r->bytes;
    m.start_ns = ts(s, r->start);
    m.end_ns = ts(s, r->end);
    gpufl_record_memcpy(&m);
}

static void memset4(cupti_state *s, const gfl_cupti_memset4 *r)
{
    gpufl_memset m;
    if (!valid_times(s, r->start, r->end))
        return;
    memset(&m, 0, sizeof m);
    m.sz = sizeof m;
    m.device = r->device_id;
    m.stream = r->stream_id;
    m.corr = r->correlation_id;
    m.value = r->value;
    m.bytes = r->bytes;
    m.start_ns = ts(s, r->start);
    m.end_ns = ts(s, r->end);
    gpufl_record_memset(&m);
}

static uint32_t ctx_device(const cupti_state *s, uint32_t ctx)
{
    for (uint32_t i = 0; i < s->n_ctx; i++)
        if (s->ctx_id[i] == ctx)
            return s->ctx_dev[i];
    return 0;
}

static void sync2(cupti_state *s, const gfl_cupti_sync2 *r)
{
    gpufl_sync y;
    if (!valid_times(s, r->start, r->end))
        return;
    memset(&y, 0, sizeof y);
    y.sz = sizeof y;
    y.kind = r->type <= 4 ? r->type : GPUFL_SYNC_UNKNOWN;
    y.device = ctx_device(s, r->context_id);
    y.stream = r->stream_id == GFL_CUPTI_SYNC_INVALID ? 0 : r->stream_id;
    y.corr = r->correlation_id;
    y.start_ns = ts(s, r->start);
    y.end_ns = ts(s, r->end);
    gpufl_record_sync(&y);
}

static uint32_t mem_kind(uint32_t k)
{
    switch (k) {
    case GFL_CUPTI_MEM_DEVICE:
    case GFL_CUPTI_MEM_DEVICE_STATIC: return GPUFL_MEM_DEVICE;
    case GFL_CUPTI_MEM_PINNED: return GPUFL_MEM_PINNED;
    case GFL_CUPTI_MEM_MANAGED:
    case GFL_CUPTI_MEM_MANAGED_STATIC: return GPUFL_MEM_MANAGED;
    case GFL_CUPTI_MEM_PAGEABLE: return GPUFL_MEM_PAGEABLE;
    case GFL_CUPTI_MEM_ARRAY: return GPUFL_MEM_ARRAY;
    default: return GPUFL_MEM_UNKNOWN;
    }
}

static void memory4(cupti_state *s, const gfl_cupti_memory4 *r)
{
    gpufl_memop m;
    if (r->memory_operation_type != GFL_CUPTI_MEMOP_ALLOC &&
        r->memory_operation_type != GFL_CUPTI_MEMOP_RELEASE)
        return;
    if (!r->timestamp) {
        s->n_invalid++;
        return;
    }
    memset(&m, 0, sizeof m);
    m.sz = sizeof m;
    m.is_free = r->memory_operation_type == GFL_CUPTI_MEMOP_RELEASE;
    m.kind = mem_kind(r->memory_kind);
    m.device = r->device_id;
    m.stream = r->stream_id == GFL_CUPTI_INVALID_STREAM_ID ? 0 : r->stream_id;
    m.corr = r->correlation_id;
    m.address = r->address;
    m.bytes = r->bytes;
    m.ts_ns = ts(s, r->timestamp);
    gpufl_record_memop(&m);
}

static void context3(cupti_state *s, const gfl_cupti_context3 *r)
{
    for (uint32_t i = 0; i < s->n_ctx; i++)
        if (s->ctx_id[i] == r->context_id) {
            s->ctx_dev[i] = r->device_id;
            return;
        }
    if (s->n_ctx < sizeof s->ctx_id / sizeof s->ctx_id[0]) {
        s->ctx_id[s->n_ctx] = r->context_id;
        s->ctx_dev[s->n_ctx++] = r->device_id;
    }
}

void cupti_decode_buffer(cupti_state *s, uint8_t *buf, size_t valid)
{
    gfl_cupti_activity *act = NULL;
    if (!buf || !valid)
        return;
    /* the iterator knows every kind's size; records of kinds we did not
     * ask for (enabled implicitly) are skipped */
    while (s->GetNextRecord(buf, valid, &act) == GFL_CUPTI_SUCCESS && act) {
        s->n_records++;
        switch (act->kind) {
        case GFL_CUPTI_ACT_KERNEL:
        case GFL_CUPTI_ACT_CONCURRENT_KERNEL:
            kernel(s, (const gfl_cupti_kernel10 *)(const void *)act);
            break;
        case GFL_CUPTI_ACT_MEMCPY:
            memcpy6(s, (const gfl_cupti_memcpy6 *)(const void *)act);
            break;
        case GFL_CUPTI_ACT_MEMCPY2:
            memcpy_ptop(s, (const gfl_cupti_memcpy_ptop4 *)(const void *)act);
            break;
        case GFL_CUPTI_ACT_MEMSET:
            memset4(s, (const gfl_cupti_memset4 *)(const void *)act);
            break;
        case GFL_CUPTI_ACT_SYNCHRONIZATION:
            sync2(s, (const gfl_cupti_sync2 *)(const void *)act);
            break;
        case GFL_CUPTI_ACT_MEMORY2:
            memory4(s, (const gfl_cupti_memory4 *)(const void *)act);
            break;
        case GFL_CUPTI_ACT_CONTEXT:
            context3(s, (const gfl_cupti_context3 *)(const void *)act);
            break;
        default: s->n_records--; break;
        }
    }
}
