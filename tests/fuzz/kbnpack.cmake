# src/server/kbnpack_codec.c: the kernel block names' pack codec (kbnpack
# and kbndir rows read back from the database are input like any other)
if(TARGET gpufl_server_core)
  gpufl_fuzz_target(kbnpack
    REPLAY_LIBS gpufl_server_core
    FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/server/kbnpack_codec.c
    FUZZ_INCLUDES ${PROJECT_SOURCE_DIR}/src/server
    # the codec needs nothing; gpufl_common for the include paths every
    # target gets
    FUZZ_LIBS gpufl_common)
endif()
