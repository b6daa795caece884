# End-to-end: the real binaries together (gpufl demo, agent + server under
# SIGKILL).  One ctest test per class so ctest -j runs them side by side.
if(TARGET gpufl_cli AND TARGET gpufl_server_core AND TARGET gpufl-agent)
  foreach(cls Demo DemoRuns DemoGpu Restart Fleet)
    add_test(NAME e2e_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_e2e.py -v ${cls})
    set_tests_properties(e2e_${cls} PROPERTIES TIMEOUT 600
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_FAKE_DIR=${CMAKE_BINARY_DIR}/fake")
  endforeach()
  # radosgw listens on fixed ports (7480, 6789): one user at a time
  set_tests_properties(e2e_Fleet PROPERTIES RESOURCE_LOCK ceph SKIP_RETURN_CODE 77)
  # DemoGpu builds a CUDA program with nvcc: under the sanitizers it must
  # carry their runtime too (the fake libraries it loads are instrumented)
  set_property(TEST e2e_DemoGpu APPEND PROPERTY ENVIRONMENT
               "GPUFL_TEST_SANITIZE=$<BOOL:${GPUFL_SANITIZE}>")
  set_tests_properties(e2e_DemoGpu PROPERTIES SKIP_RETURN_CODE 77)
  # capture requests: server -> agent -> a ring-mode program's control
  # socket -> its dump shipped back (test_capture.py)
  add_test(NAME e2e_capture
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_capture.py -v)
  set_tests_properties(e2e_capture PROPERTIES TIMEOUT 300
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
  if(TEST agent_s3)
    set_tests_properties(agent_s3 PROPERTIES RESOURCE_LOCK ceph)
  endif()
endif()
