# bench_kblock: bytes per kernel at rest and speed of the kernel block
# codec (src/server/kblock.c).
if(TARGET gpufl_server_core)
  add_executable(bench_kblock ${CMAKE_CURRENT_LIST_DIR}/bench_kblock.c)
  gpufl_target(bench_kblock)
  target_include_directories(bench_kblock PRIVATE
                             ${PROJECT_SOURCE_DIR}/src/server)
  target_link_libraries(bench_kblock PRIVATE gpufl_server_core)
endif()
