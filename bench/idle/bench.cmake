# bench_idle: `gpufl idle watch` with 8 simulated GPUs and 50 sessions
# (cgroup CPU, TCP ports, utmp users from a fixture tree): CPU per round,
# per sampled GPU, share of one core at 1 Hz, peak RSS.  Prints figures;
# not a test.  Run: build/bin/bench_idle [seconds] [interval_ms]
if(TARGET gpufl_cli AND TARGET gpufl_idle)
  add_executable(bench_idle ${CMAKE_CURRENT_LIST_DIR}/bench_idle.c)
  gpufl_target(bench_idle)
  add_dependencies(bench_idle gpufl_cli)
endif()
