# src/server/cursor.c: the pagination cursors of the query API
if(TARGET gpufl_server_core)
  gpufl_fuzz_target(srv_cursor
    REPLAY_LIBS gpufl_server_core
    FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/server/cursor.c
                 ${PROJECT_SOURCE_DIR}/src/common/err.c
    FUZZ_INCLUDES ${PROJECT_SOURCE_DIR}/src/server)
endif()
