gpufl_unit_test(test_prom ${CMAKE_CURRENT_LIST_DIR}/test_prom.c LIBS gpufl_common)
