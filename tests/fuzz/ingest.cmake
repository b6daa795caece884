# src/server/ingest.c, ingest_body.c: gpufl-server's ingest boundary
if(TARGET gpufl_server_core)
  gpufl_fuzz_target(ingest
    REPLAY_LIBS gpufl_server_core
    FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/server/ingest.c
                 ${PROJECT_SOURCE_DIR}/src/server/ingest_body.c
                 ${PROJECT_SOURCE_DIR}/src/server/waste_line.c
                 ${PROJECT_SOURCE_DIR}/src/common/jsonl.c
                 ${PROJECT_SOURCE_DIR}/src/common/jsonl_get.c
                 ${PROJECT_SOURCE_DIR}/src/common/jw.c
                 ${PROJECT_SOURCE_DIR}/src/common/err.c
    FUZZ_INCLUDES ${PROJECT_SOURCE_DIR}/src/server
    FUZZ_LIBS gpufl_common PkgConfig::ZSTD z m)
endif()
