gpufl_unit_test(test_occupancy ${CMAKE_CURRENT_LIST_DIR}/test_occupancy.c LIBS gpufl_internal)

# Differential test against NVIDIA's header-only calculator
# (cuda_occupancy.h); without the toolkit it prints why and skips.
gpufl_unit_test(test_occupancy_nv ${CMAKE_CURRENT_LIST_DIR}/test_occupancy_nv.c
                LIBS gpufl_internal)
set_tests_properties(test_occupancy_nv PROPERTIES SKIP_RETURN_CODE 77)
find_path(GPUFL_CUDA_OCCUPANCY_INCLUDE cuda_occupancy.h
  HINTS /usr/local/cuda/include)
if(GPUFL_CUDA_OCCUPANCY_INCLUDE)
  target_include_directories(test_occupancy_nv SYSTEM PRIVATE
                             ${GPUFL_CUDA_OCCUPANCY_INCLUDE})
  target_compile_definitions(test_occupancy_nv PRIVATE
                             GPUFL_HAVE_CUDA_OCCUPANCY_H=1)
endif()
