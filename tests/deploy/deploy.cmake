# deploy/: structure, programs, flags and variables of the deployment files
# (no container engine or cluster runs here).
if(TARGET gpufl_cli AND TARGET gpufl-server AND TARGET gpufl-agent)
  add_test(NAME deploy_files
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_deploy.py -v)
  set_tests_properties(deploy_files PROPERTIES TIMEOUT 300
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin")
endif()
