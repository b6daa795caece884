# src/gpu: the NVML reader against fake libnvidia-ml builds (libgpufl's
# "nvml" engine and `gpufl idle` both use it; tests/idle loads the same
# fakes).
#
# fake_nvml.c is built once per variant, each as lib/nvidia-ml.so.1 in a
# directory of its own so that a variant is loaded by path like the real
# library: full (a current driver), nodetail (no RunningProcessDetailList,
# R525-R535), minimal (unversioned symbols only), noinit (no driver).
foreach(_gpufl_v full nodetail minimal noinit)
  set(_gpufl_t fake_nvml_${_gpufl_v})
  add_library(${_gpufl_t} SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_nvml.c)
  gpufl_target(${_gpufl_t})
  if(NOT _gpufl_v STREQUAL "full")
    string(TOUPPER ${_gpufl_v} _gpufl_V)
    target_compile_definitions(${_gpufl_t} PRIVATE FAKE_NVML_${_gpufl_V})
  endif()
  set_target_properties(${_gpufl_t} PROPERTIES
    OUTPUT_NAME nvidia-ml PREFIX "lib" SUFFIX ".so.1"
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fake/nvml-${_gpufl_v})
endforeach()

gpufl_unit_test(test_nvml ${CMAKE_CURRENT_LIST_DIR}/test_nvml.c
                LIBS gpufl_gpu ${CMAKE_DL_LIBS})
target_compile_definitions(test_nvml PRIVATE
  FAKE_NVML_FULL="$<TARGET_FILE:fake_nvml_full>"
  FAKE_NVML_NODETAIL="$<TARGET_FILE:fake_nvml_nodetail>"
  FAKE_NVML_MINIMAL="$<TARGET_FILE:fake_nvml_minimal>"
  FAKE_NVML_NOINIT="$<TARGET_FILE:fake_nvml_noinit>")
add_dependencies(test_nvml fake_nvml_full fake_nvml_nodetail
                 fake_nvml_minimal fake_nvml_noinit)
