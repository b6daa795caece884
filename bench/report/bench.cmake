# bench_report: `gpufl report` on a generated log folder of N kernel events
# (default 10M, ~2 GB): wall time, events/s, peak RSS, for N/10 and N (the
# memory must not grow with N).  Prints figures; not a test.
# Run: build/bin/bench_report [events] [dir]
if(TARGET gpufl_report)
  add_executable(bench_report ${CMAKE_CURRENT_LIST_DIR}/bench_report.c)
  gpufl_target(bench_report)
  add_dependencies(bench_report gpufl_cli)
endif()
