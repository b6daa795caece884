# gpufl memprof (docs/memprof.md): a fake libcuda.so.1 with the driver's
# allocation API, a workload with known call chains, and the real profiler
# run over it through eBPF (skips with 77 and the reason when eBPF is not
# permitted), through --preload (always), and pushing to a real
# gpufl-server.  Neither the fake nor the workload is sanitized: the
# interposer is preloaded into them.
if(NOT TARGET gpufl_memprof)
  return()
endif()
add_library(fake_cudamem SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_cudamem.c)
gpufl_target(fake_cudamem)
target_compile_options(fake_cudamem PRIVATE -Wno-missing-prototypes
  -fno-sanitize=all -fno-omit-frame-pointer)
# -Bsymbolic: its own functions' addresses (cuGetProcAddress's answers)
# are its own, as in the real driver, not an interposer's from the global
# scope
target_link_options(fake_cudamem PRIVATE -fno-sanitize=all
  -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic)
set_target_properties(fake_cudamem PROPERTIES
  OUTPUT_NAME cuda PREFIX "lib" SUFFIX ".so.1"
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fake/cudamem)

add_executable(prog_memprof ${CMAKE_CURRENT_LIST_DIR}/prog_memprof.c)
gpufl_target(prog_memprof)
target_compile_options(prog_memprof PRIVATE -O0 -fno-omit-frame-pointer
  -fno-sanitize=all)
target_link_options(prog_memprof PRIVATE -fno-sanitize=all)
target_link_libraries(prog_memprof PRIVATE fake_cudamem Threads::Threads
  ${CMAKE_DL_LIBS})

# the same workload without frame pointers: --dwarf must recover its stacks
add_executable(prog_memprof_nofp ${CMAKE_CURRENT_LIST_DIR}/prog_memprof.c)
gpufl_target(prog_memprof_nofp)
target_compile_options(prog_memprof_nofp PRIVATE -O2 -fomit-frame-pointer
  -fno-optimize-sibling-calls -fno-sanitize=all)
target_link_options(prog_memprof_nofp PRIVATE -fno-sanitize=all)
target_link_libraries(prog_memprof_nofp PRIVATE fake_cudamem Threads::Threads
  ${CMAKE_DL_LIBS})

# cudart "linked statically": cudaMalloc* defined in the executable (not
# exported) on top of the fake driver: the runtime layer's probes
add_executable(prog_static_rt ${CMAKE_CURRENT_LIST_DIR}/prog_static_rt.c)
gpufl_target(prog_static_rt)
target_compile_options(prog_static_rt PRIVATE -O0 -fno-omit-frame-pointer
  -fno-sanitize=all)
target_link_options(prog_static_rt PRIVATE -fno-sanitize=all)
target_link_libraries(prog_static_rt PRIVATE fake_cudamem)

# the dynamic cudart's way to the driver: libcuda.so.1 not linked but
# opened RTLD_LOCAL by its soname (through the RUNPATH) and reached only
# through dlsym on that handle: --preload's dlsym hook
add_executable(prog_dlopen_rt ${CMAKE_CURRENT_LIST_DIR}/prog_dlopen_rt.c)
gpufl_target(prog_dlopen_rt)
target_compile_options(prog_dlopen_rt PRIVATE -O0 -fno-omit-frame-pointer
  -fno-sanitize=all)
target_link_options(prog_dlopen_rt PRIVATE -fno-sanitize=all)
target_link_libraries(prog_dlopen_rt PRIVATE ${CMAKE_DL_LIBS})
set_target_properties(prog_dlopen_rt PROPERTIES
  BUILD_RPATH ${CMAKE_BINARY_DIR}/fake/cudamem)
add_dependencies(prog_dlopen_rt fake_cudamem)

set(_mp_args --gpufl $<TARGET_FILE:gpufl_cli>
  --prog $<TARGET_FILE:prog_memprof>
  --preload-lib $<TARGET_FILE:gpufl_memprof_preload>
  --tmp ${CMAKE_BINARY_DIR}/testtmp)
foreach(_mp_mode preload ebpf)
  add_test(NAME memprof_${_mp_mode}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_memprof.py
            ${_mp_mode} ${_mp_args})
  # RESOURCE_LOCK: memprof_ebpf --all sees every process on the fake
  # driver's inode, so the other memprof tests' workloads must not overlap
  set_tests_properties(memprof_${_mp_mode} PROPERTIES TIMEOUT 120
    SKIP_RETURN_CODE 77 RESOURCE_LOCK memprof_fake_cuda)
endforeach()
# the server side of memory profiles (POST /api/v1/memprof, GET
# /api/v1/memory...) is not built yet: the test runs once it is
if(TARGET gpufl-server AND EXISTS ${PROJECT_SOURCE_DIR}/src/server/api_memprof.c)
  add_test(NAME memprof_server
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_memprof.py
            server ${_mp_args} --server $<TARGET_FILE:gpufl-server>)
  set_tests_properties(memprof_server PROPERTIES TIMEOUT 120
    SKIP_RETURN_CODE 77 RESOURCE_LOCK memprof_fake_cuda)
  # issue 17: --server over https, verified with --ca-file
  add_test(NAME memprof_tls
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_memprof.py
            tls ${_mp_args} --server $<TARGET_FILE:gpufl-server>)
  set_tests_properties(memprof_tls PROPERTIES TIMEOUT 120
    SKIP_RETURN_CODE 77 RESOURCE_LOCK memprof_fake_cuda)
  # the same on PostgreSQL, on tests/server's throwaway cluster
  file(GLOB _mp_pg_bins /usr/lib/postgresql/*/bin/initdb)
  if(_mp_pg_bins)
    add_test(NAME memprof_server_pg
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_memprof.py
              server ${_mp_args} --server $<TARGET_FILE:gpufl-server>)
    set_tests_properties(memprof_server_pg PROPERTIES TIMEOUT 120
      SKIP_RETURN_CODE 77 FIXTURES_REQUIRED server_pg
      RESOURCE_LOCK memprof_fake_cuda
      ENVIRONMENT "GPUFL_TEST_PG_URI_FILE=${CMAKE_BINARY_DIR}/testtmp/pgcluster/uri")
  endif()
endif()

# --oom (test_memprof_oom.py): a stand-in for PyTorch's caching allocator
# (C++, so its frames carry c10::cuda::CUDACachingAllocator names), called
# from prog_oom.py through ctypes; the fake driver's device is sized by
# the test (FAKE_CUDA_MEM_TOTAL) so that the workload runs out of it
add_library(fake_c10 SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_c10.cpp)
target_compile_options(fake_c10 PRIVATE -O1 -fno-omit-frame-pointer
  -fno-sanitize=all -Wall -Wextra -Werror)
target_link_options(fake_c10 PRIVATE -fno-sanitize=all)
target_link_libraries(fake_c10 PRIVATE fake_cudamem)
set_target_properties(fake_c10 PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fake/cudamem)
set(_mp_oom_args --gpufl $<TARGET_FILE:gpufl_cli>
  --c10 $<TARGET_FILE:fake_c10>
  --preload-lib $<TARGET_FILE:gpufl_memprof_preload>
  --nvml-lib $<TARGET_FILE:fake_nvml_full>
  --tmp ${CMAKE_BINARY_DIR}/testtmp)
foreach(_mp_mode preload ebpf)
  add_test(NAME memprof_oom_${_mp_mode}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_memprof_oom.py
            ${_mp_mode} ${_mp_oom_args})
  set_tests_properties(memprof_oom_${_mp_mode} PROPERTIES TIMEOUT 120
    SKIP_RETURN_CODE 77 RESOURCE_LOCK memprof_fake_cuda)
endforeach()
if(TARGET gpufl-server)
  add_test(NAME memprof_oom_server
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_memprof_oom.py
            server ${_mp_oom_args} --server $<TARGET_FILE:gpufl-server>)
  set_tests_properties(memprof_oom_server PROPERTIES TIMEOUT 120
    SKIP_RETURN_CODE 77 RESOURCE_LOCK memprof_fake_cuda)
  add_test(NAME memprof_oom_tls
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_memprof_oom.py
            tls ${_mp_oom_args} --server $<TARGET_FILE:gpufl-server>)
  set_tests_properties(memprof_oom_tls PROPERTIES TIMEOUT 120
    SKIP_RETURN_CODE 77 RESOURCE_LOCK memprof_fake_cuda)
  if(_mp_pg_bins)
    add_test(NAME memprof_oom_server_pg
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_memprof_oom.py
              server ${_mp_oom_args} --server $<TARGET_FILE:gpufl-server>)
    set_tests_properties(memprof_oom_server_pg PROPERTIES TIMEOUT 120
      SKIP_RETURN_CODE 77 FIXTURES_REQUIRED server_pg
      RESOURCE_LOCK memprof_fake_cuda
      ENVIRONMENT "GPUFL_TEST_PG_URI_FILE=${CMAKE_BINARY_DIR}/testtmp/pgcluster/uri")
  endif()
endif()
