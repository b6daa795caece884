#!/bin/sh
# bench/gpu/kit.sh - a gpufl that runs on a GPU machine without our Debian
# packages, for bench/gpu/run.sh there.
#
#   bench/gpu/kit.sh [KIT_DIR]        (default: .gpukit in the repo root)
#
# Why: the GPU machines this project is lent (docs/capture.md "On a GPU")
# have the CUDA toolkit, Python and PyTorch but not libcurl, libmicrohttpd,
# libbpf, libdw ... and nothing can be installed there.  So this builds the
# client, the injection library and the `gpufl` command here (release,
# no tests, no benchmarks, in build-kit/), with DT_RPATH $ORIGIN/../lib
# (DT_RPATH, not DT_RUNPATH: it also finds the libraries' own
# dependencies), and copies every shared library they load that is not
# part of glibc or the C++ runtime into KIT_DIR/lib.  Then, there:
#
#   bench/gpu/run.sh .gpukit          (the kit folder travels with the tree)
#
# glibc and libstdc++ stay the machine's own: newer there than Debian 12's,
# and a second copy in one process breaks it.  LD_LIBRARY_PATH is never
# set, so the programs gpufl runs (python3 with torch) load their own.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KIT=${1:-$ROOT/.gpukit}
case $KIT in /*) ;; *) KIT=$(pwd)/$KIT ;; esac
B=$ROOT/build-kit

say() { printf 'kit.sh: %s\n' "$*"; }

say "configuring $B"
cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release -DGPUFL_TESTS=OFF \
    -DGPUFL_BENCH=OFF -DCMAKE_INSTALL_LIBDIR=lib \
    -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
    -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags \
    -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--disable-new-dtags >/dev/null
say "building gpufl and libgpufl_inject.so"
cmake --build "$B" -j"${JOBS:-2}" --target gpufl_cli gpufl_inject >/dev/null

rm -rf "$KIT"
mkdir -p "$KIT/bin" "$KIT/lib"
cp "$B/bin/gpufl" "$KIT/bin/"
cp -P "$B"/lib/libgpufl.so* "$B/lib/libgpufl_inject.so" "$KIT/lib/"
[ -f "$B/lib/libgpufl_memprof_preload.so" ] &&
    cp "$B/lib/libgpufl_memprof_preload.so" "$KIT/lib/"

# Every library the command and the injection library load, minus glibc's
# own and the C++ runtime (the machine's, see above).
for obj in "$KIT/bin/gpufl" "$KIT/lib/libgpufl_inject.so"; do
    ldd "$obj" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
    base=$(basename "$lib")
    case $base in
    libgpufl*) ;;
    libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | \
        libresolv.so.* | libutil.so.* | ld-linux*) ;;
    libstdc++.so.* | libgcc_s.so.*) ;;
    *) cp -L "$lib" "$KIT/lib/$base" ;;
    esac
done

# The kit must not reach back into this machine's build or library folders.
if readelf -d "$KIT/bin/gpufl" | grep -q RUNPATH; then
    say "gpufl has DT_RUNPATH, not DT_RPATH: the libraries' own" \
        "dependencies would not be found in $KIT/lib" >&2
    exit 1
fi
missing=$(env -u LD_LIBRARY_PATH ldd "$KIT/bin/gpufl" |
    awk '/not found/ { print $1 }')
[ -z "$missing" ] || { say "unresolved: $missing" >&2; exit 1; }
"$KIT/bin/gpufl" version >/dev/null
say "$(du -sh "$KIT" | cut -f1) in $KIT: $(find "$KIT/lib" -name '*.so*' | wc -l) libraries"
say "on a GPU machine: bench/gpu/run.sh $KIT (carry the folder)"
