# Pyroscope authentication of gpufl memprof (test_pyroscope_auth.py):
# basic auth, bearer token, tenant header and the 401/403 errors, against a
# local catcher, over the --preload workload of memprof.cmake.  It runs the
# fake driver, so it takes memprof_ebpf's lock (--all sees every process
# mapping it).
if(NOT TARGET gpufl_memprof OR NOT TARGET gpufl_cli)
  return()
endif()
add_test(NAME memprof_pyroscope_auth
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_pyroscope_auth.py
          --gpufl $<TARGET_FILE:gpufl_cli>
          --prog $<TARGET_FILE:prog_memprof>
          --preload-lib $<TARGET_FILE:gpufl_memprof_preload>
          --tmp ${CMAKE_BINARY_DIR}/testtmp)
set_tests_properties(memprof_pyroscope_auth PROPERTIES TIMEOUT 120
  RESOURCE_LOCK memprof_fake_cuda)
