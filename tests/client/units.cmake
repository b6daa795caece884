# Unit tests of the client core (ring, dictionary, writer).
gpufl_unit_test(test_ring ${CMAKE_CURRENT_LIST_DIR}/test_ring.c LIBS gpufl_internal)
gpufl_unit_test(test_intern ${CMAKE_CURRENT_LIST_DIR}/test_intern.c LIBS gpufl_internal)
gpufl_unit_test(test_writer ${CMAKE_CURRENT_LIST_DIR}/test_writer.c LIBS gpufl_internal)
gpufl_unit_test(test_options ${CMAKE_CURRENT_LIST_DIR}/test_options.c LIBS gpufl_internal)
