# src/server/tlpack_codec.c: the timeline pack codec (packs read back from
# the database are input like any other)
if(TARGET gpufl_server_core)
  gpufl_fuzz_target(tlpack
    REPLAY_LIBS gpufl_server_core
    FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/server/tlpack_codec.c
    FUZZ_INCLUDES ${PROJECT_SOURCE_DIR}/src/server
    # the codec needs nothing; gpufl_common for the include paths every
    # target gets
    FUZZ_LIBS gpufl_common)
endif()
