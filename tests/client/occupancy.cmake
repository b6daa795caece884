gpufl_unit_test(test_occupancy ${CMAKE_CURRENT_LIST_DIR}/test_occupancy.c LIBS gpufl_internal)
