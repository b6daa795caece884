gpufl_unit_test(test_opt ${CMAKE_CURRENT_LIST_DIR}/test_opt.c LIBS gpufl_common)
