# `gpufl attach` (src/cli/cli_attach.c, src/inject/attach.c) against a
# running program that never linked gpufl and uses the fake driver and
# CUPTI (tests/cupti), and its refusals.  ptrace needs Linux on x86-64.
if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND
   CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  add_executable(prog_attach ${CMAKE_CURRENT_LIST_DIR}/prog_attach.c)
  gpufl_target(prog_attach)
  target_link_libraries(prog_attach PRIVATE fake_cuda)
  add_dependencies(prog_attach fake_cupti_full gpufl_inject gpufl_cli)

  # Static: no sanitizer flags (they cannot link statically); the
  # directory's compile and link options are dropped for this one.
  add_executable(prog_attach_static ${CMAKE_CURRENT_LIST_DIR}/prog_attach_static.c)
  set_property(TARGET prog_attach_static PROPERTY COMPILE_OPTIONS "")
  set_property(TARGET prog_attach_static PROPERTY LINK_OPTIONS "")
  target_link_options(prog_attach_static PRIVATE -static)

  add_test(NAME attach
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_attach.py)
  set_tests_properties(attach PROPERTIES TIMEOUT 300
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_FAKE_DIR=${CMAKE_BINARY_DIR}/fake;GPUFL_INJECT_LIB=$<TARGET_FILE:gpufl_inject>")
endif()
