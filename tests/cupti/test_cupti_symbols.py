"""test_cupti_symbols.py - the names gpufl resolves with dlsym exist in
NVIDIA's real libraries, and the fakes invent none.

The capture code never links CUPTI or the driver: it dlopens them and looks
each entry point up by name, so a misspelt or renamed function is no build
error, only a "lacks cuptiX" at run time on a GPU machine.  The fakes the
other tests use are written from the same understanding, so they cannot
catch it.  This test reads every CUPTI / driver API name in the constant
strings (.rodata) of libgpufl.so and libgpufl_inject.so (dlsym's arguments,
and the names error messages quote; "cuptiSassMetrics*" in a message names a
family and is left out) and looks each one up in the toolkit's real libcupti.so.13
and in its libcuda stub (which exports the driver API's names) with ctypes;
then it checks that every cu*/cupti* symbol the fakes export is a real one.
NVML's names cannot be checked: no libnvidia-ml ships with the toolkit.

Skips (77) where the CUDA toolkit is not installed.
"""
import ctypes
import os
import re
import subprocess
import sys
import tempfile

CUDA = os.environ.get("CUDA_HOME", "/usr/local/cuda")
CUPTI = os.path.join(CUDA, "lib64", "libcupti.so.13")
STUB = os.path.join(CUDA, "lib64", "stubs", "libcuda.so")
CUDART = os.path.join(CUDA, "lib64", "libcudart.so.13")
NAME = re.compile(
    rb"(?<![A-Za-z0-9_])((?:cupti|cu)[A-Z][A-Za-z0-9_]{2,80})(?![A-Za-z0-9_*])")


def names_in(path):
    """API names in the constant strings; the debug info's typedef names
    (gfl_cuInit_fn) are not there."""
    with tempfile.NamedTemporaryFile() as t:
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.rodata",
                        path, t.name], check=True)
        return {m.group(1).decode() for m in NAME.finditer(t.read())}


def exported(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], check=True,
                         capture_output=True, text=True).stdout
    return {ln.split()[-1].split("@")[0] for ln in out.splitlines()
            if len(ln.split()) >= 3}


def main():
    if not all(os.path.exists(p) for p in (CUPTI, STUB)):
        print("SKIP: no CUDA toolkit at %s" % CUDA)
        return 77
    libs = sys.argv[1:]
    cupti, stub = ctypes.CDLL(CUPTI), ctypes.CDLL(STUB)
    bad = 0
    used = set()
    for lib in libs:
        used |= names_in(lib)
    for n in sorted(used):
        where = CUPTI if n.startswith("cupti") else STUB
        try:
            getattr(cupti if where == CUPTI else stub, n)
        except AttributeError:
            print("FAIL %s is not exported by %s" % (n, where))
            bad += 1
    n_cupti = sum(1 for n in used if n.startswith("cupti"))
    print("%d CUPTI and %d driver names looked up in the real libraries" %
          (n_cupti, len(used) - n_cupti))
    # Non-vacuous: the activity, callback, SASS and PC sampling engines
    # resolve far more than this between them.
    if n_cupti < 30 or len(used) - n_cupti < 6:
        print("FAIL too few names found: the pattern no longer matches")
        bad += 1

    fake = os.environ["GPUFL_FAKE_DIR"]
    pairs = [(os.path.join(fake, "cupti-full", "libcupti.so.13"), CUPTI),
             (os.path.join(fake, "cuda", "libcuda.so.1"), STUB)]
    if os.path.exists(CUDART):
        pairs.append((os.path.join(fake, "cudart", "libcudart.so.13"), CUDART))
    for fk, real in pairs:
        real_names = exported(real)
        mine = {n for n in exported(fk) if re.match(r"(cupti|cuda|cu)[A-Z_]", n)}
        for n in sorted(mine - real_names):
            print("FAIL the fake %s exports %s, which %s does not" %
                  (os.path.basename(fk), n, real))
            bad += 1
        print("%s: %d entry points, all real" % (os.path.basename(fk),
                                                 len(mine)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
