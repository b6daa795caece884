#!/bin/sh
# lint.sh - the checks the test command runs before the tests:
#   1. clang-format: every C/C++ source matches .clang-format;
#   2. banned functions: no strcpy/strcat/sprintf/vsprintf/gets/strtok/atoi/
#      atol/atoll (unbounded or error-blind; use snprintf, memcpy with a cap,
#      strtoull/strtol with end checks).
set -eu
cd "$(dirname "$0")/.."
files=$(git ls-files -co --exclude-standard -- '*.c' '*.h' '*.cpp' | grep -v '^web/' || true)
fail=0
if command -v clang-format >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    if ! clang-format --dry-run -Werror $files 2>/tmp/gpufl-format.$$; then
        head -40 /tmp/gpufl-format.$$ >&2
        echo "lint: formatting differs; run 'make format'" >&2
        fail=1
    fi
    rm -f /tmp/gpufl-format.$$
else
    echo "lint: clang-format not installed (scripts/deps.sh test installs it)" >&2
    fail=1
fi
# shellcheck disable=SC2086
if grep -nE '\b(strcpy|strcat|sprintf|vsprintf|gets|strtok|atoi|atol|atoll)[[:space:]]*\(' $files |
    grep -vE '(snprintf|vsnprintf)[[:space:]]*\(' | grep -v 'lint-ok'; then
    echo "lint: banned function used (see scripts/lint.sh for the list and why)" >&2
    fail=1
fi
[ $fail -eq 0 ] && echo "lint: ok ($(echo $files | wc -w) files)"
exit $fail
