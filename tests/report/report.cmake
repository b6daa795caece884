# gpufl report / export / import on real and sample logs, numbers checked
# against an independent reader (tests/client/gpufl_logs.py).
if(TARGET gpufl_report)
  add_test(NAME report_cli
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_report.py)
  set_tests_properties(report_cli PROPERTIES TIMEOUT 300
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
endif()

# gpufl diff on runs of the simulated GPU; by session ids against the real
# gpufl-server fed by the real gpufl-agent; the 4-rank job and the
# regression scan end to end (test_diff.py).
if(TARGET gpufl_report AND TARGET gpufl_server_core)
  foreach(cls Folders Server EndToEnd)
    add_test(NAME report_diff_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_diff.py
              -v ${cls})
    set_tests_properties(report_diff_${cls} PROPERTIES TIMEOUT 300
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
  endforeach()
endif()
