# make install: headers, library, pkg-config file and CMake package work
# for a project outside the tree.
if(GPUFL_SANITIZE)
  set(_gpufl_consumer_flags "-fsanitize=address,undefined")
else()
  set(_gpufl_consumer_flags "")
endif()
add_test(NAME install_consumer
  COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/test_install.sh ${CMAKE_BINARY_DIR}
          ${PROJECT_SOURCE_DIR} "${_gpufl_consumer_flags}")
set_tests_properties(install_consumer PROPERTIES TIMEOUT 300
  ENVIRONMENT "GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
