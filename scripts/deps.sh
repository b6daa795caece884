#!/bin/sh
# deps.sh - install what building and testing gpufl needs on Debian 12.
# As root: installs missing apt packages.  Otherwise: names them and exits 1.
# Usage: scripts/deps.sh [build|test]
set -eu
want="${1:-build}"

BUILD_PKGS="build-essential cmake pkg-config libzstd-dev zstd"
TEST_PKGS="clang libclang-rt-14-dev clang-format python3"

pkgs="$BUILD_PKGS"
[ "$want" = test ] && pkgs="$pkgs $TEST_PKGS"

missing=""
for p in $pkgs; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "gpufl: missing Debian packages:$missing" >&2
    echo "gpufl: install them with: sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "gpufl: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
