gpufl_unit_test(test_jsonl ${CMAKE_CURRENT_LIST_DIR}/test_jsonl.c LIBS gpufl_common m)
gpufl_unit_test(test_jsonl_set ${CMAKE_CURRENT_LIST_DIR}/test_jsonl_set.c LIBS gpufl_common m)
