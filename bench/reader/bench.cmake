# bench_reader: throughput of the JSONL reader on generated event lines.
# Prints figures; not a test.  Run: build/bin/bench_reader [lines]
add_executable(bench_reader ${CMAKE_CURRENT_LIST_DIR}/bench_reader.c)
gpufl_target(bench_reader)
target_link_libraries(bench_reader PRIVATE gpufl_common m)
