# bench_idle: `gpufl idle watch` with 8 simulated GPUs and 50 sessions
# (cgroup CPU, TCP ports, utmp users from a fixture tree): CPU per round,
# per sampled GPU, share of one core at 1 Hz, peak RSS.  Prints figures;
# not a test.  Run: build/bin/bench_idle [seconds] [interval_ms]
if(TARGET gpufl_cli AND TARGET gpufl_idle)
  add_executable(bench_idle ${CMAKE_CURRENT_LIST_DIR}/bench_idle.c)
  gpufl_target(bench_idle)
  add_dependencies(bench_idle gpufl_cli)
endif()
# `bench_idle S MS mig`: the fake NVML (tests/gpu) with 8 GPUs x 7 MIG
# instances
if(TARGET bench_idle AND TARGET fake_nvml_full)
  target_compile_definitions(bench_idle PRIVATE
    FAKE_NVML_FULL="$<TARGET_FILE:fake_nvml_full>")
  add_dependencies(bench_idle fake_nvml_full)
endif()
