# src/httpc: the libcurl setup, against a small server on 127.0.0.1.
gpufl_unit_test(test_httpc ${CMAKE_CURRENT_LIST_DIR}/test_httpc.c
                LIBS gpufl_httpc Threads::Threads)
