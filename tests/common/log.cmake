gpufl_unit_test(test_log ${CMAKE_CURRENT_LIST_DIR}/test_log.c LIBS gpufl_common)
