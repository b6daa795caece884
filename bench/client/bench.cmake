add_executable(bench_client ${CMAKE_CURRENT_LIST_DIR}/bench_client.c)
gpufl_target(bench_client)
target_link_libraries(bench_client PRIVATE gpufl_internal)
