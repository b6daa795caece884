# bench_memprof: what gpufl memprof costs (docs/memprof.md "Cost").
#   bench_memprof_calls N    ns per cuMemAlloc_v2+cuMemFree_v2 pair (fake
#                            driver); run bare, under --preload, under eBPF
#   bench_memprof_agg N      events/s the user-space aggregation sustains
#   bench_memprof.py         runs the three and prints the table, with the
#                            profiler's CPU time and peak RSS
# Prints figures; not a test.
if(NOT TARGET gpufl_memprof OR NOT TARGET fake_cudamem)
  return()
endif()
add_executable(bench_memprof_calls ${CMAKE_CURRENT_LIST_DIR}/bench_memprof_calls.c)
gpufl_target(bench_memprof_calls)
target_compile_options(bench_memprof_calls PRIVATE -fno-sanitize=all
  -fno-omit-frame-pointer)
target_link_options(bench_memprof_calls PRIVATE -fno-sanitize=all)
target_link_libraries(bench_memprof_calls PRIVATE fake_cudamem)

add_executable(bench_memprof_agg ${CMAKE_CURRENT_LIST_DIR}/bench_memprof_agg.c)
gpufl_target(bench_memprof_agg)
target_link_libraries(bench_memprof_agg PRIVATE gpufl_memprof)
