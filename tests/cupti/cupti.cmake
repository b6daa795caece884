# The "cupti" engine without a GPU: fake libcupti.so.13 / libcuda.so.1
# (tests/cupti/fake_*.c, built from the engine's own ABI declarations),
# programs linked against the fake driver, and checks of the logs with the
# independent reader tests/client/gpufl_logs.py.  See docs/capture.md.
foreach(_gpufl_v full nosym)
  add_library(fake_cupti_${_gpufl_v} SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_cupti.c
              ${CMAKE_CURRENT_LIST_DIR}/fake_cupti_prof.c)
  gpufl_target(fake_cupti_${_gpufl_v})
  target_include_directories(fake_cupti_${_gpufl_v} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(fake_cupti_${_gpufl_v} PRIVATE Threads::Threads)
  # they define NVIDIA's entry points, whose prototypes are in NVIDIA's
  # headers, which this build does not use
  target_compile_options(fake_cupti_${_gpufl_v} PRIVATE -Wno-missing-prototypes)
  if(_gpufl_v STREQUAL "nosym")
    target_compile_definitions(fake_cupti_${_gpufl_v} PRIVATE FAKE_CUPTI_NOSYM)
  endif()
  set_target_properties(fake_cupti_${_gpufl_v} PROPERTIES
    OUTPUT_NAME cupti PREFIX "lib" SUFFIX ".so.13"
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fake/cupti-${_gpufl_v})
  target_link_options(fake_cupti_${_gpufl_v} PRIVATE -Wl,-soname,libcupti.so.13)
endforeach()

# The fake driver lives in a directory of its own that is never on
# LD_LIBRARY_PATH: programs reach it through their RPATH
# (docs/cupti-internals.md#testing-without-a-gpu).
add_library(fake_cuda SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_cuda.c)
gpufl_target(fake_cuda)
target_include_directories(fake_cuda PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(fake_cuda PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
target_compile_options(fake_cuda PRIVATE -Wno-missing-prototypes)
set_target_properties(fake_cuda PROPERTIES
  OUTPUT_NAME cuda PREFIX "lib" SUFFIX ".so.1"
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fake/cuda)
target_link_options(fake_cuda PRIVATE -Wl,-soname,libcuda.so.1)

# The fake runtime (libcudart.so.13) for programs built by the real nvcc
# with -cudart shared: `gpufl demo --gpu on` runs its CUDA workload on it.
add_library(fake_cudart SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_cudart.c)
gpufl_target(fake_cudart)
target_include_directories(fake_cudart PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(fake_cudart PRIVATE fake_cuda Threads::Threads)
target_compile_options(fake_cudart PRIVATE -Wno-missing-prototypes)
set_target_properties(fake_cudart PROPERTIES
  OUTPUT_NAME cudart PREFIX "lib" SUFFIX ".so.13"
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fake/cudart
  LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/fake_cudart.map)
target_link_options(fake_cudart PRIVATE -Wl,-soname,libcudart.so.13
  -Wl,--version-script=${CMAKE_CURRENT_LIST_DIR}/fake_cudart.map)

add_executable(prog_cupti ${CMAKE_CURRENT_LIST_DIR}/prog_cupti.c)
gpufl_target(prog_cupti)
target_link_libraries(prog_cupti PRIVATE gpufl fake_cuda Threads::Threads)
set_target_properties(prog_cupti PROPERTIES ENABLE_EXPORTS ON)

# With frame pointers: launch stacks take the frame-pointer hand-off.
add_executable(prog_cupti_fp ${CMAKE_CURRENT_LIST_DIR}/prog_cupti.c)
gpufl_target(prog_cupti_fp)
target_compile_options(prog_cupti_fp PRIVATE -fno-omit-frame-pointer)
target_link_libraries(prog_cupti_fp PRIVATE gpufl fake_cuda Threads::Threads)
set_target_properties(prog_cupti_fp PROPERTIES ENABLE_EXPORTS ON)

add_executable(prog_cupti_plain ${CMAKE_CURRENT_LIST_DIR}/prog_cupti.c)
gpufl_target(prog_cupti_plain)
target_compile_definitions(prog_cupti_plain PRIVATE NO_GPUFL)
target_link_libraries(prog_cupti_plain PRIVATE fake_cuda Threads::Threads)

# Layout check against NVIDIA's headers where the toolkit is installed.
gpufl_unit_test(test_cupti_abi ${CMAKE_CURRENT_LIST_DIR}/test_cupti_abi.c)
target_include_directories(test_cupti_abi PRIVATE ${PROJECT_SOURCE_DIR}/src)
find_path(GPUFL_CUPTI_INCLUDE cupti_activity.h
  HINTS /usr/local/cuda/include /usr/local/cuda/extras/CUPTI/include)
if(GPUFL_CUPTI_INCLUDE)
  target_include_directories(test_cupti_abi SYSTEM PRIVATE ${GPUFL_CUPTI_INCLUDE})
  target_compile_definitions(test_cupti_abi PRIVATE GPUFL_HAVE_CUPTI_HEADERS=1)
endif()

# The profiling engines' declarations, field by field (same headers).
gpufl_unit_test(test_cupti_prof_abi ${CMAKE_CURRENT_LIST_DIR}/test_cupti_prof_abi.c)
target_include_directories(test_cupti_prof_abi PRIVATE ${PROJECT_SOURCE_DIR}/src)
if(GPUFL_CUPTI_INCLUDE)
  target_include_directories(test_cupti_prof_abi SYSTEM PRIVATE ${GPUFL_CUPTI_INCLUDE})
  target_compile_definitions(test_cupti_prof_abi PRIVATE GPUFL_HAVE_CUPTI_HEADERS=1)
endif()

# App-thread cost of the launch callback (figures, printed by the test).
gpufl_unit_test(test_cupti_launch ${CMAKE_CURRENT_LIST_DIR}/test_cupti_launch.c
                LIBS gpufl_internal)
target_compile_options(test_cupti_launch PRIVATE -fno-omit-frame-pointer)

add_test(NAME cupti_integration
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cupti.py)
set_tests_properties(cupti_integration PROPERTIES TIMEOUT 300
  ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_FAKE_DIR=${CMAKE_BINARY_DIR}/fake;GPUFL_INJECT_LIB=$<TARGET_FILE:gpufl_inject>")
add_dependencies(prog_cupti fake_cupti_full fake_cupti_nosym)

# The profiling engines (sass, pcsamp) against the fake's SASS metrics and
# PC sampling APIs, and their refusals.
add_test(NAME cupti_profiling
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cupti_prof.py)
set_tests_properties(cupti_profiling PROPERTIES TIMEOUT 300
  ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_FAKE_DIR=${CMAKE_BINARY_DIR}/fake;GPUFL_INJECT_LIB=$<TARGET_FILE:gpufl_inject>")

# Demangling of kernel names as nvcc 13 produces them.
gpufl_unit_test(test_cupti_demangle ${CMAKE_CURRENT_LIST_DIR}/test_cupti_demangle.c
                LIBS gpufl_internal)

# The names the engines dlsym exist in the toolkit's real libcupti / driver
# stub, and the fakes export no invented ones (skips without the toolkit).
add_test(NAME cupti_real_symbols
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cupti_symbols.py
          $<TARGET_FILE:gpufl> $<TARGET_FILE:gpufl_inject>)
set_tests_properties(cupti_real_symbols PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77
  ENVIRONMENT "GPUFL_FAKE_DIR=${CMAKE_BINARY_DIR}/fake")

# The flight recorder's CUDA triggers (cuda-error, oom) and `gpufl ctl
# trace on|off` / `engines` with the fake CUPTI.
add_executable(prog_cupti_steps ${CMAKE_CURRENT_LIST_DIR}/prog_cupti_steps.c)
gpufl_target(prog_cupti_steps)
target_link_libraries(prog_cupti_steps PRIVATE gpufl fake_cuda Threads::Threads)
add_dependencies(prog_cupti_steps fake_cupti_full)
add_test(NAME cupti_ring
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cupti_ring.py)
set_tests_properties(cupti_ring PROPERTIES TIMEOUT 300
  ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_FAKE_DIR=${CMAKE_BINARY_DIR}/fake")
