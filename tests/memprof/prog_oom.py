"""prog_oom.py LIBC10 GO_FILE EXIT_FILE - the workload of the memprof OOM
tests: a model's weights and activations from the caching allocator of
fake_c10.cpp (PyTorch's frames), a buffer a library takes from the driver
itself, then one allocation the (fake) device cannot hold.  The device is
FAKE_CUDA_MEM_TOTAL bytes (8 GiB in the tests): 5.25 GiB and 2 MiB are
live when the 4 GiB request fails (the 2 MiB under a native call chain
deeper than the 64 frames a stack keeps); the allocator then releases its
1 GiB of cached segments and retries, which fails too, and Python sees
the error.
Lines marked "# L:name" are where the expected frames are;
test_memprof_oom.py reads them."""
import ctypes
import os
import sys
import time

MiB = 1 << 20
GiB = 1 << 30
# global, as prog_memprof.py loads the driver: so the driver it links
# (libcuda.so.1) is in the global scope, where the --preload interposer
# finds the real entry points
c10 = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
c10.fake_torch_empty.argtypes = [ctypes.c_size_t,
                                 ctypes.POINTER(ctypes.c_ulonglong)]
c10.fake_torch_free.argtypes = [ctypes.c_ulonglong]
c10.fake_nccl_init.argtypes = [ctypes.c_size_t]
c10.fake_deep.argtypes = [ctypes.c_int, ctypes.c_size_t]


def wait(path):
    while not os.path.exists(path):
        time.sleep(0.01)


def empty(n):
    p = ctypes.c_ulonglong()
    rc = c10.fake_torch_empty(n, ctypes.byref(p))  # L:empty
    if rc == 2:
        raise MemoryError("CUDA out of memory. Tried to allocate %d bytes" % n)
    assert rc == 0
    return p.value


class Model:
    def build(self):
        self.weights = []
        for _ in range(3):
            self.weights.append(empty(1 * GiB))  # L:build


def activations():
    acts = []
    for _ in range(4):
        acts.append(empty(512 * MiB))  # L:activations
    # two of them die: their segments stay cached in the allocator
    c10.fake_torch_free(acts[1])
    c10.fake_torch_free(acts[3])
    return acts[0], acts[2]


def attention():
    return empty(4 * GiB)  # L:attention


def step():
    return attention()  # L:step


def main():
    model = Model()
    model.build()  # L:main_build
    acts = activations()  # L:main_acts
    assert c10.fake_nccl_init(256 * MiB) == 0  # L:main_nccl
    assert c10.fake_deep(70, 2 * MiB) == 0  # L:main_deep
    try:
        step()  # L:main_step
    except MemoryError as e:
        print("oom", e, flush=True)
    return model, acts


wait(sys.argv[2])
kept = main()  # L:module
print("done", flush=True)
wait(sys.argv[3])
