# gpufl - top-level commands.  CMake does the building; this file is the
# front door the README documents.
#
#   make            build everything into build/ (installs missing packages)
#   make test       lint, the gcc build, then the whole suite under ASan+UBSan
#                   (clang, build/asan)
#   make demo       build and run the example workload (simulated GPU)
#   make bench      build and run the benchmarks (figures, not tests)
#   make install PREFIX=/usr/local
#   make format     reformat the C sources with clang-format

PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD := build
ASAN := build/asan

.PHONY: all build deps deps-test test lint demo bench install format clean

all: build

deps:
	@scripts/deps.sh build

deps-test:
	@scripts/deps.sh test

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

lint: deps-test
	@scripts/lint.sh

# test also builds the release tree with gcc: its warnings (-Werror) differ
# from clang's, and `make` must never fail on a clean clone.
test: deps-test lint build
	@CC=clang CXX=clang++ cmake -S . -B $(ASAN) -DCMAKE_BUILD_TYPE=Debug \
	    -DGPUFL_SANITIZE=ON -DGPUFL_FUZZ=ON -DGPUFL_BENCH=OFF >/dev/null
	@cmake --build $(ASAN) -j $(JOBS)
	@cd $(ASAN) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    ctest --output-on-failure -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

bench: build
	@for b in $(BUILD)/bin/bench_*; do echo "== $$b"; $$b || exit 1; done

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

format:
	@git ls-files -co --exclude-standard -- '*.c' '*.h' '*.cpp' | \
	    xargs clang-format -i

clean:
	rm -rf $(BUILD)
