# gpufl report / export / import on real and sample logs, numbers checked
# against an independent reader (tests/client/gpufl_logs.py).
if(TARGET gpufl_report)
  add_test(NAME report_cli
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_report.py)
  set_tests_properties(report_cli PROPERTIES TIMEOUT 300
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
endif()
