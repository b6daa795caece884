"""mp.py [GO_FILE] - PyTorch allocations with known Python call chains, for
`gpufl memprof` on a real GPU (run.sh section 6).  With GO_FILE: CUDA is
initialised first (the driver is mapped, so probes can attach to the
process), then the allocations wait until GO_FILE exists."""
import os
import sys
import time

import torch

torch.cuda.init()
torch.empty(1, device="cuda")  # the context and the allocator's first pool
print("INITED", flush=True)
if len(sys.argv) > 1:
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.05)


def alloc_kv_cache():
    # the seed's example: one big block for the KV cache
    return torch.empty(1 << 30, dtype=torch.uint8, device="cuda")


class Model:
    def build(self):
        return [torch.empty(8 << 20, dtype=torch.uint8, device="cuda")
                for _ in range(4)]


kv = alloc_kv_cache()
w = Model().build()
torch.cuda.synchronize()
print("ALLOCATED", flush=True)
