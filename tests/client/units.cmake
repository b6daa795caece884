# Unit tests of the client core (ring, dictionary, writer).
gpufl_unit_test(test_ring ${CMAKE_CURRENT_LIST_DIR}/test_ring.c LIBS gpufl_internal)
gpufl_unit_test(test_intern ${CMAKE_CURRENT_LIST_DIR}/test_intern.c LIBS gpufl_internal)
gpufl_unit_test(test_writer ${CMAKE_CURRENT_LIST_DIR}/test_writer.c LIBS gpufl_internal)
gpufl_unit_test(test_options ${CMAKE_CURRENT_LIST_DIR}/test_options.c LIBS gpufl_internal)
# The size rule of the versioned public structs, against the shared library
# as programs link it (an older and a newer header; docs/client.md).
gpufl_unit_test(client_options_abi ${CMAKE_CURRENT_LIST_DIR}/test_options_abi.c
                LIBS gpufl ${CMAKE_DL_LIBS})
