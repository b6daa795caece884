gpufl_unit_test(test_fsutil ${CMAKE_CURRENT_LIST_DIR}/test_fsutil.c LIBS gpufl_common)
