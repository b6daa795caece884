gpufl_unit_test(test_num ${CMAKE_CURRENT_LIST_DIR}/test_num.c LIBS gpufl_common)
