# src/server/oblock.c: the op block codec (blocks read back from the
# database are input like any other)
if(TARGET gpufl_server_core)
  gpufl_fuzz_target(oblock
    REPLAY_LIBS gpufl_server_core
    FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/server/oblock.c
                 ${PROJECT_SOURCE_DIR}/src/server/kblock.c
                 ${PROJECT_SOURCE_DIR}/src/server/kblock_dec.c
    FUZZ_INCLUDES ${PROJECT_SOURCE_DIR}/src/server
    # the codec needs only libzstd; gpufl_common for the include paths
    # every target gets
    FUZZ_LIBS gpufl_common PkgConfig::ZSTD)
endif()
