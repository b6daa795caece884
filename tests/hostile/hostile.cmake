# tests/hostile: the attacks docs/security.md lists, replayed
# against the real gpufl-server on loopback; every test bounded in seconds.
if(TARGET gpufl-server)
  foreach(cls Connections Framing BeforeBody Static Tokens Tls Keys)
    add_test(NAME hostile_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_hostile.py
              -v ${cls})
    set_tests_properties(hostile_${cls} PROPERTIES TIMEOUT 120
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
  endforeach()
endif()
