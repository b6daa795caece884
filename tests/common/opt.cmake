gpufl_unit_test(test_opt ${CMAKE_CURRENT_LIST_DIR}/test_opt.c LIBS gpufl_common)

# Every program reads its options through the engine: the same syntax, the
# same layers, the same --dump-config (the real binaries).
if(TARGET gpufl_cli AND TARGET gpufl-agent AND TARGET gpufl-server)
  add_test(NAME opt_programs
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_opt_programs.py)
  set_tests_properties(opt_programs PROPERTIES TIMEOUT 120
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
endif()
