# bench_server: gpufl-server ingest and query figures (not a test).
if(TARGET gpufl_server_core)
  add_executable(bench_server ${CMAKE_CURRENT_LIST_DIR}/bench_server.c
                              ${CMAKE_CURRENT_LIST_DIR}/bench_common.c)
  gpufl_target(bench_server)
  target_include_directories(bench_server PRIVATE
                             ${PROJECT_SOURCE_DIR}/src/server)
  target_link_libraries(bench_server PRIVATE gpufl_server_core)
endif()

# bench_scale: one session of KERNELS (up to 100M and more) streamed over
# HTTP into a gpufl-server process, rate per tenth, then the same queries.
add_executable(bench_scale ${CMAKE_CURRENT_LIST_DIR}/bench_scale.c
                           ${CMAKE_CURRENT_LIST_DIR}/bench_common.c)
gpufl_target(bench_scale)
target_link_libraries(bench_scale PRIVATE Threads::Threads)

# bench_regress: the regression scan of a 1M-kernel session against five.
if(TARGET gpufl_server_core)
  add_executable(bench_regress ${CMAKE_CURRENT_LIST_DIR}/bench_regress.c)
  gpufl_target(bench_regress)
  target_include_directories(bench_regress PRIVATE
                             ${PROJECT_SOURCE_DIR}/src/server)
  target_link_libraries(bench_regress PRIVATE gpufl_server_core m)
endif()

# bench_waste: GET /api/v1/fleet/waste over a month of 1,000 GPUs.
if(TARGET gpufl_server_core)
  add_executable(bench_waste ${CMAKE_CURRENT_LIST_DIR}/bench_waste.c)
  gpufl_target(bench_waste)
  target_include_directories(bench_waste PRIVATE
                             ${PROJECT_SOURCE_DIR}/src/server)
  target_link_libraries(bench_waste PRIVATE gpufl_server_core)
endif()

# libgpufl_lockwait.so: LD_PRELOAD it into gpufl-server to see per call
# site how long threads waited for mutexes and held them (lockwait.c).
add_library(gpufl_lockwait MODULE ${CMAKE_CURRENT_LIST_DIR}/lockwait.c)
gpufl_target(gpufl_lockwait)
target_link_libraries(gpufl_lockwait PRIVATE ${CMAKE_DL_LIBS})
