"""prog_memprof.py LIBCUDA GO_FILE EXIT_FILE - the Python workload of the
memprof tests: known Python call chains into the (fake) driver through
ctypes (which releases the GIL around the call).  Lines marked "# L:name"
are where the expected frames are; test_memprof.py reads them."""
import ctypes
import os
import sys
import threading
import time

MiB = 1 << 20
# loaded into the global scope and called through it, as a library linked
# to libcuda would: so the --preload interposer's cuMemAlloc_v2 comes first
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
lib = ctypes.CDLL(None)
lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_ulonglong),
                              ctypes.c_size_t]


def wait(path):
    while not os.path.exists(path):
        time.sleep(0.01)


def alloc(n):
    p = ctypes.c_ulonglong()
    rc = lib.cuMemAlloc_v2(ctypes.byref(p), n)  # L:alloc
    assert rc == 0
    return p.value


def alloc_weights():
    return alloc(32 * MiB)  # L:alloc_weights


class Model:
    def build(self):
        for _ in range(3):
            alloc_weights()  # L:build


def kv_cache():
    alloc(64 * MiB)  # L:kv_cache


def worker():
    kv_cache()  # L:worker


def main():
    Model().build()  # L:main_build
    t = threading.Thread(target=worker)
    t.start()
    t.join()


wait(sys.argv[2])
main()  # L:module
print("done", flush=True)
wait(sys.argv[3])
