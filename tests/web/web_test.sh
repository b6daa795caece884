#!/bin/sh
# web_test.sh - runs the web UI's tests for ctest.
#   web_test.sh unit WEBDIR                 vitest unit tests (data shaping)
#   web_test.sh lint WEBDIR                 ESLint and Prettier (web/eslint.config.js,
#                                           web/.prettierrc.json)
#   web_test.sh e2e WEBDIR BINDIR OUTDIR    build the UI into OUTDIR/dist, then
#                                           the browser tests (e2e/run.mjs)
#   web_test.sh complete WEBDIR BINDIR OUTDIR N
#                                           tl_complete and tl_calls_complete on
#                                           N kernels (e2e/complete.mjs), with
#                                           the UI web_e2e built in OUTDIR/dist
#   web_test.sh check OUTDIR memory|fleet   judge the memory / fleet checks of
#                                           the e2e run (OUTDIR/results.json)
# Exit 77 (ctest: skipped) with the reason when node, the npm packages or
# Chromium are missing.
set -u
mode=$1
out=
skip() {
    echo "SKIP: $*"
    # tell the check tests that depend on this run why there are no results
    if [ -n "$out" ] && mkdir -p "$out"; then
        printf '{"skipped":{"ok":null,"detail":"%s"}}\n' "$*" >"$out/results.json"
    fi
    exit 77
}
[ "$mode" = e2e ] && out=$4
command -v node >/dev/null 2>&1 || skip "node is not installed (Node.js >= 20.19 is needed for the web UI)"
case $mode in
unit)
    web=$2
    [ -d "$web/node_modules/vitest" ] || skip "web/node_modules missing: run 'make web' (or 'cd web && npm ci')"
    cd "$web" && exec node node_modules/vitest/vitest.mjs run --reporter=default
    ;;
lint)
    web=$2
    [ -d "$web/node_modules/eslint" ] && [ -d "$web/node_modules/prettier" ] ||
        skip "web/node_modules has no eslint/prettier: run 'make web' (or 'cd web && npm ci')"
    cd "$web" || exit 1
    node node_modules/eslint/bin/eslint.js --max-warnings 0 . || exit 1
    exec node node_modules/prettier/bin/prettier.cjs --check --log-level warn .
    ;;
e2e)
    web=$2 bin=$3 out=$4
    [ -d "$web/node_modules/vite" ] || skip "web/node_modules missing: run 'make web' (or 'cd web && npm ci')"
    [ -x /usr/bin/chromium ] || [ -n "${GPUFL_CHROMIUM:-}" ] || skip "no Chromium (/usr/bin/chromium): run 'scripts/deps.sh test' (Debian package chromium)"
    rm -rf "$out" && mkdir -p "$out" || exit 1
    # test the current sources, not a stale web/dist
    (cd "$web" && node node_modules/vite/bin/vite.js build --logLevel warn \
        --outDir "$out/dist" --emptyOutDir) || exit 1
    cd "$web" && exec node e2e/run.mjs --bin "$bin" --out "$out" --dist "$out/dist"
    ;;
complete)
    web=$2 bin=$3 out=$4 n=$5
    [ -d "$web/node_modules/playwright-core" ] || skip "web/node_modules missing: run 'make web' (or 'cd web && npm ci')"
    [ -x /usr/bin/chromium ] || [ -n "${GPUFL_CHROMIUM:-}" ] || skip "no Chromium (/usr/bin/chromium): run 'scripts/deps.sh test' (Debian package chromium)"
    [ -f "$out/dist/index.html" ] || skip "no UI built by web_e2e in $out/dist"
    cd "$web" && exec node e2e/complete.mjs --bin "$bin" --dist "$out/dist" --kernels "$n"
    ;;
check)
    out=$2 what=$3
    exec node -e '
const fs = require("fs");
const [file, what] = process.argv.slice(1);
let r;
try { r = JSON.parse(fs.readFileSync(file, "utf8")); } catch (e) { console.log("FAIL: no results from web_e2e (" + e.message + ")"); process.exit(1); }
if (r.skipped) { console.log("SKIP: " + r.skipped.detail); process.exit(77); }
const mine = Object.entries(r).filter(([k]) => k.startsWith(what));
if (!mine.length) { console.log("FAIL: web_e2e recorded no " + what + " checks"); process.exit(1); }
let bad = 0;
for (const [k, v] of mine) { console.log((v.ok ? "ok   " : "FAIL ") + k + ": " + v.detail); if (!v.ok) bad++; }
process.exit(bad ? 1 : 0);' "$out/results.json" "$what"
    ;;
*)
    echo "usage: web_test.sh unit|lint|e2e|check ..." >&2
    exit 2
    ;;
esac
