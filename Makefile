# gpufl - top-level commands.  CMake does the building; this file is the
# front door the README documents.
#
#   make            build everything into build/ (installs missing packages)
#   make test       lint, the gcc build, then the whole suite under ASan+UBSan
#                   (clang, build/asan), then the threaded ingest's tests under
#                   ThreadSanitizer (clang, build/tsan)
#   make demo       build, then `gpufl demo`: server + agent + web UI + live
#                   workloads (simulated GPU) until Ctrl-C; DEMO_ARGS=... passes
#                   options (gpufl demo --help)
#   make web        build the web UI into web/dist (needs Node.js >= 20.19)
#   make bench      build and run the benchmarks (figures, not tests)
#   make install PREFIX=/usr/local
#   make format     reformat the C sources with clang-format

PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD := build
ASAN := build/asan
TSAN := build/tsan
# What runs under ThreadSanitizer: the parse helper and streamed bodies, group
# commit, parallel block encoding, and the HTTP tests of the same
# (tests/server/server.cmake, tsan_*); only their targets are built there.
TSAN_TARGETS := gpufl-server test_srv_ingest_par test_srv_igroup test_srv_kb_par
TSAN_TESTS := ^(test_srv_(ingest_par|igroup|kb_par)|tsan_.*)$$

.PHONY: all build deps deps-test test lint demo bench install format clean web

all: build web

deps:
	@scripts/deps.sh build

deps-test:
	@scripts/deps.sh test

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The web UI (web/dist, served by gpufl-server): npm ci (only when the lock
# file changed) and vite build.  Needs Node.js >= 20.19; skipped without it.
web:
	@if command -v node >/dev/null 2>&1 && node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a===20&&b>=19)?0:1)'; then \
	    cd web && { [ node_modules/.package-lock.json -nt package-lock.json ] || \
	        npm ci --no-audit --no-fund --loglevel=error; } && npm run build --silent; \
	else echo "gpufl: Node.js >= 20.19 not found: the web UI (web/dist) is not built"; fi

lint: deps-test
	@scripts/lint.sh

# test also builds the release tree with gcc: its warnings (-Werror) differ
# from clang's, and `make` must never fail on a clean clone.
test: deps-test lint build web
	@CC=clang CXX=clang++ cmake -S . -B $(ASAN) -DCMAKE_BUILD_TYPE=Debug \
	    -DGPUFL_SANITIZE=ON -DGPUFL_FUZZ=ON -DGPUFL_BENCH=OFF >/dev/null
	@cmake --build $(ASAN) -j $(JOBS)
	@cd $(ASAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    ctest --output-on-failure -j $(JOBS)
	@CC=clang CXX=clang++ cmake -S . -B $(TSAN) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DGPUFL_TSAN=ON -DGPUFL_BENCH=OFF >/dev/null
	@cmake --build $(TSAN) -j $(JOBS) --target $(TSAN_TARGETS)
	@cd $(TSAN) && TSAN_OPTIONS=halt_on_error=1 \
	    ctest --output-on-failure -j $(JOBS) -R '$(TSAN_TESTS)'

demo: build web
	@$(BUILD)/bin/gpufl demo $(DEMO_ARGS)

bench: build
	@for b in $(BUILD)/bin/bench_*; do echo "== $$b"; $$b || exit 1; done

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

format:
	@git ls-files -co --exclude-standard -- '*.c' '*.h' '*.cpp' | \
	    xargs clang-format -i

clean:
	rm -rf $(BUILD)
