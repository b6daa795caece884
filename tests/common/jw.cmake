gpufl_unit_test(test_jw ${CMAKE_CURRENT_LIST_DIR}/test_jw.c LIBS gpufl_common m)
