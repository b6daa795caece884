# bench_e2e: sustained client -> queryable rate and lag, HTTP/SQLite and
# Kafka/PostgreSQL (bench_e2e.py drives; bench_e2e_producer records through
# libgpufl at a fixed rate).  `make bench` runs build/bin/bench_e2e.
if(TARGET gpufl-server AND TARGET gpufl-agent)
  add_executable(bench_e2e_producer ${CMAKE_CURRENT_LIST_DIR}/bench_e2e_producer.c)
  gpufl_target(bench_e2e_producer)
  target_link_libraries(bench_e2e_producer PRIVATE gpufl)
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  file(WRITE ${CMAKE_BINARY_DIR}/bench_e2e.sh
       "#!/bin/sh\nGPUFL_BIN_DIR=\${GPUFL_BIN_DIR:-${CMAKE_BINARY_DIR}/bin} "
       "GPUFL_TEST_TMP=\${GPUFL_TEST_TMP:-${CMAKE_BINARY_DIR}/testtmp} "
       "exec ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/bench_e2e.py \"$@\"\n")
  file(COPY ${CMAKE_BINARY_DIR}/bench_e2e.sh DESTINATION ${CMAKE_BINARY_DIR}/bin
       FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
       GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  file(RENAME ${CMAKE_BINARY_DIR}/bin/bench_e2e.sh ${CMAKE_BINARY_DIR}/bin/bench_e2e)
endif()
