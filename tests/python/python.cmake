# The Python package (python/gpufl) with the standard library's unittest,
# against this build's libgpufl on the simulated GPU.
set(_py_env "GPUFL_LIB=${CMAKE_BINARY_DIR}/lib/libgpufl.so"
    "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin"
    "GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
if(GPUFL_SANITIZE)
  # Python is not built with ASan: the runtime must be loaded first for it
  # to dlopen an instrumented libgpufl; Python's own allocations are not
  # ours to leak-check.
  if(CMAKE_C_COMPILER_ID STREQUAL "Clang")
    execute_process(COMMAND ${CMAKE_C_COMPILER}
      -print-file-name=libclang_rt.asan-x86_64.so
      OUTPUT_VARIABLE _py_asan OUTPUT_STRIP_TRAILING_WHITESPACE)
  else()
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
      OUTPUT_VARIABLE _py_asan OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
  list(APPEND _py_env "LD_PRELOAD=${_py_asan}" "ASAN_OPTIONS=detect_leaks=0")
endif()
add_test(NAME python_gpufl
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_gpufl.py)
set_tests_properties(python_gpufl PROPERTIES TIMEOUT 300
  ENVIRONMENT "${_py_env}")
