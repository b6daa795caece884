# gpufl-agent tests: unit tests of the cursor and options, and integration
# tests that run the real agent against a test receiver (receiver.c) on
# 127.0.0.1 with real logs from example_train / prog_workload.
if(TARGET gpufl-agent)
  set(GPUFL_AGENT_TESTS ${CMAKE_CURRENT_LIST_DIR})

  gpufl_unit_test(test_agent_cursor ${GPUFL_AGENT_TESTS}/test_cursor.c
                  LIBS gpufl_agent_core)
  gpufl_unit_test(test_agent_opt ${GPUFL_AGENT_TESTS}/test_opt.c
                  LIBS gpufl_agent_core)
  # a later file waits for the files before it that are still in the folder
  gpufl_unit_test(test_agent_gaps ${GPUFL_AGENT_TESTS}/test_gaps.c
                  LIBS gpufl_agent_core)
  gpufl_unit_test(test_agent_s3 ${GPUFL_AGENT_TESTS}/test_s3.c
                  LIBS gpufl_agent_core)

  add_executable(agent_receiver ${GPUFL_AGENT_TESTS}/receiver.c)
  gpufl_target(agent_receiver)
  target_link_libraries(agent_receiver PRIVATE gpufl_common PkgConfig::ZSTD
                        PkgConfig::AGENT_ZLIB Threads::Threads)
  pkg_check_modules(AGENT_MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
  target_link_libraries(agent_receiver PRIVATE PkgConfig::AGENT_MHD)

  add_executable(agent_kafka_mock ${PROJECT_SOURCE_DIR}/src/tools/kafka_mock.c)
  gpufl_target(agent_kafka_mock)
  target_link_libraries(agent_kafka_mock PRIVATE PkgConfig::AGENT_RDKAFKA)

  # One CTest test per scenario, so ctest -j runs them side by side.
  set(GPUFL_AGENT_CASES e2e kill9 outage storm truncate deadletter
      corrupt_cursor cli status zst_restart)
  list(APPEND GPUFL_AGENT_CASES kafka kafka_down kafka_deadletter
       kafka_refused s3 server)
  # client TLS against the real gpufl-server (docs/agent.md "Tests")
  list(APPEND GPUFL_AGENT_CASES tls)
  # no silent loss (docs/agent.md "Tests")
  list(APPEND GPUFL_AGENT_CASES rotate_prune restart_prune ack hostile
       many_files marker)
  foreach(case ${GPUFL_AGENT_CASES})
    add_test(NAME agent_${case}
      COMMAND ${Python3_EXECUTABLE} ${GPUFL_AGENT_TESTS}/test_agent.py ${case})
    set_tests_properties(agent_${case} PROPERTIES TIMEOUT 300
      SKIP_RETURN_CODE 77
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
  endforeach()
endif()
