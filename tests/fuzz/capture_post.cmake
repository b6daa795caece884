# src/server/api_capture.c: the bodies of the capture routes
if(TARGET gpufl_server_core)
  gpufl_fuzz_target(capture_post
    REPLAY_LIBS gpufl_server_core
    FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/server/api_capture.c
    FUZZ_INCLUDES ${PROJECT_SOURCE_DIR}/src/server
    # the rest of the server (and src/common, fuzzed by fuzz_jsonl) linked
    # as built, with ASan and UBSan but without coverage
    FUZZ_LIBS gpufl_server_core)
endif()
