gpufl_unit_test(test_jsonl ${CMAKE_CURRENT_LIST_DIR}/test_jsonl.c LIBS gpufl_common m)
