#!/bin/sh
# deps.sh - install what building (and testing) gpufl needs on Debian 12.
#
# Package lists live in scripts/deps/<component>.build and .test, one
# package per line, '#' comments; a component adds its own file.
# As root: installs the missing packages.  Otherwise: names them, exits 1.
# Usage: scripts/deps.sh [build|test]
set -eu
want="${1:-build}"
dir="$(dirname "$0")/deps"

lists="$dir/*.build"
[ "$want" = test ] && lists="$lists $dir/*.test"
# shellcheck disable=SC2086
pkgs=$(cat $lists 2>/dev/null | sed 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$' | sort -u)

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
