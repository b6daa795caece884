gpufl_unit_test(test_buf ${CMAKE_CURRENT_LIST_DIR}/test_buf.c LIBS gpufl_common)
