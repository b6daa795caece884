/*
 * fake_c10.cpp - a stand-in for PyTorch's CUDA caching allocator, for the
 * `gpufl memprof --oom` tests (test_memprof_oom.py).  Its functions have
 * the namespaces and names of c10/cuda/CUDACachingAllocator.cpp, so the
 * profiler sees the frames a real libc10_cuda.so shows
 * (c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::
 * alloc_block), and it reacts to an out-of-memory error the way
 * DeviceCachingAllocator::malloc does, in its simplest form: a request is
 * rounded up to 2 MiB and served by the smallest cached segment that fits,
 * else by a new segment from cuMemAlloc_v2; a freed block stays cached
 * as a whole segment (no splitting); when cuMemAlloc_v2 fails, every
 * cached segment is released (cuMemFree_v2, release_cached_blocks) and
 * the allocation is tried once more before the error goes back.
 *
 * One thread at a time (the tests' workload is single-threaded).
 */
#include <cstddef>

extern "C" int cuMemAlloc_v2(unsigned long long *dptr, size_t n);
extern "C" int cuMemFree_v2(unsigned long long p);

#define NOINLINE __attribute__((noinline))
#define EXPORT extern "C" __attribute__((visibility("default")))

namespace c10
{
namespace cuda
{
namespace CUDACachingAllocator
{
namespace Native
{

struct Block {
    unsigned long long ptr;
    size_t size;
    bool used;
};

class DeviceCachingAllocator
{
  public:
    NOINLINE int malloc(size_t size, unsigned long long *out);
    NOINLINE void free(unsigned long long ptr);

  private:
    NOINLINE int alloc_block(size_t size, unsigned long long *out);
    NOINLINE void release_cached_blocks();
    static const size_t kMaxBlocks = 256;
    Block blocks_[kMaxBlocks] = {};
};

int DeviceCachingAllocator::alloc_block(size_t size, unsigned long long *out)
{
    size_t i = 0;
    while (i < kMaxBlocks && blocks_[i].ptr)
        i++;
    if (i == kMaxBlocks)
        return 2;
    int rc = cuMemAlloc_v2(out, size);
    if (rc == 0)
        blocks_[i] = Block{ *out, size, true };
    return rc;
}

void DeviceCachingAllocator::release_cached_blocks()
{
    for (Block &b : blocks_)
        if (b.ptr && !b.used) {
            cuMemFree_v2(b.ptr);
            b = Block{};
        }
}

int DeviceCachingAllocator::malloc(size_t size, unsigned long long *out)
{
    const size_t two_mib = 2u << 20;
    size = (size + two_mib - 1) / two_mib * two_mib;
    Block *best = nullptr;
    for (Block &b : blocks_)
        if (b.ptr && !b.used && b.size >= size &&
            (!best || b.size < best->size))
            best = &b;
    if (best) {
        best->used = true;
        *out = best->ptr;
        return 0;
    }
    int rc = alloc_block(size, out);
    if (rc == 2) {
        release_cached_blocks();
        rc = alloc_block(size, out);
    }
    return rc;
}

void DeviceCachingAllocator::free(unsigned long long ptr)
{
    for (Block &b : blocks_)
        if (b.ptr == ptr)
            b.used = false;
}

} /* namespace Native */
} /* namespace CUDACachingAllocator */
} /* namespace cuda */
} /* namespace c10 */

static c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator alloc;

/* torch.empty: 0, or CUDA_ERROR_OUT_OF_MEMORY (2) */
EXPORT NOINLINE int fake_torch_empty(size_t n, unsigned long long *out)
{
    return alloc.malloc(n, out);
}

/* a tensor's last reference gone: its block goes back to the cache */
EXPORT NOINLINE void fake_torch_free(unsigned long long ptr)
{
    alloc.free(ptr);
}

/* memory a library takes from the driver itself, beside the allocator
 * (NCCL's buffers, cuBLAS workspaces) */
EXPORT NOINLINE int fake_nccl_init(size_t n)
{
    unsigned long long p;
    return cuMemAlloc_v2(&p, n);
}

/* a call chain deeper than the profiler keeps (64 native frames) under
 * the Python frames: the stack a report must carry whole */
EXPORT NOINLINE int fake_deep(int depth, size_t n)
{
    if (depth <= 0) {
        unsigned long long p;
        return cuMemAlloc_v2(&p, n);
    }
    int rc = fake_deep(depth - 1, n);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return rc;
}
