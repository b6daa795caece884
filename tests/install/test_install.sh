#!/bin/sh
# test_install.sh BUILD_DIR SRC_DIR C_FLAGS - install gpufl into a temporary
# prefix, build tests/install/consumer against it with find_package and
# pkg-config, run both binaries and check what they wrote.
set -eu
build="$1"; src="$2"; cflags="${3:-}"
tmp=$(mktemp -d "${GPUFL_TEST_TMP:-/tmp}/install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
for f in include/gpufl/gpufl.h include/gpufl/record.h lib/libgpufl.so \
         lib/pkgconfig/gpufl.pc lib/cmake/gpufl/gpuflConfig.cmake; do
    [ -e "$tmp/prefix/$f" ] || { echo "not installed: $f" >&2; exit 1; }
done
PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" cmake -S "$src/tests/install/consumer" \
    -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
    -DCMAKE_C_FLAGS="$cflags" -DCMAKE_EXE_LINKER_FLAGS="$cflags" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
for b in consumer_cmake consumer_pkgconfig; do
    mkdir -p "$tmp/logs-$b"
    LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/consumer/$b" "$tmp/logs-$b" >"$tmp/out"
    grep -q '^0.1.0 ' "$tmp/out" || { echo "$b: unexpected output" >&2; exit 1; }
    grep -q '"text":"hello from an installed libgpufl"' "$tmp/logs-$b"/*.scope.log ||
        { echo "$b: marker not in the scope log" >&2; exit 1; }
    # the installed library exports the public API and nothing else
    if nm -D --defined-only "$tmp/prefix/lib/libgpufl.so" | awk '{print $3}' |
        grep -v '^gpufl_' | grep -v '^GPUFL_0$' | grep -q .; then
        echo "libgpufl.so exports non-gpufl symbols:" >&2
        nm -D --defined-only "$tmp/prefix/lib/libgpufl.so" | grep -v ' gpufl_' >&2
        exit 1
    fi
done
echo "1 passed, 0 failed"
