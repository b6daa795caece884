# src/server/api_memprof.c: the body of POST /api/v1/memprof
if(TARGET gpufl_server_core)
  gpufl_fuzz_target(memprof_post
    REPLAY_LIBS gpufl_server_core
    FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/server/api_memprof.c
    FUZZ_INCLUDES ${PROJECT_SOURCE_DIR}/src/server
    # the rest of the server (and src/common, fuzzed by fuzz_jsonl) linked
    # as built, with ASan and UBSan but without coverage
    FUZZ_LIBS gpufl_server_core)
endif()
