# src/analysis: the two-sample comparison (no false positives across seeds,
# a x1.2 shift found with 1.2 inside its interval, run-to-run noise).
if(TARGET gpufl_analysis)
  gpufl_unit_test(test_compare ${CMAKE_CURRENT_LIST_DIR}/test_compare.c
                  LIBS gpufl_analysis)
  # gpufl diff's name-by-name comparison (src/analysis/diff.c)
  gpufl_unit_test(test_diff ${CMAKE_CURRENT_LIST_DIR}/test_diff.c
                  LIBS gpufl_analysis)
endif()
