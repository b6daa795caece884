# Integration: programs linked with the shared libgpufl, checked by an
# independent reader (tests/client/gpufl_logs.py).
add_executable(prog_workload ${CMAKE_CURRENT_LIST_DIR}/prog_workload.c)
gpufl_target(prog_workload)
target_link_libraries(prog_workload PRIVATE gpufl Threads::Threads)

add_test(NAME client_integration
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_integration.py)
set_tests_properties(client_integration PROPERTIES TIMEOUT 900
  ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_FAKE_DIR=${CMAKE_BINARY_DIR}/fake")

# The flight recorder (ring mode, triggers, dumps) end to end.
add_executable(prog_ring ${CMAKE_CURRENT_LIST_DIR}/prog_ring.c)
gpufl_target(prog_ring)
target_link_libraries(prog_ring PRIVATE gpufl Threads::Threads)

add_test(NAME client_recorder
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_recorder.py)
set_tests_properties(client_recorder PROPERTIES TIMEOUT 300
  ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")

# The job and rank in the session line; the simulated GPU's perturbations
# measured from the logs of real runs (GPUFL_SIM_PERTURB, GPUFL_SIM_SEED).
add_test(NAME client_jobs
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_jobs.py)
set_tests_properties(client_jobs PROPERTIES TIMEOUT 300
  ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
