# src/agent/cursor.c: the agent's cursor-file parser
if(TARGET gpufl_agent_core)
  gpufl_fuzz_target(cursor
    REPLAY_LIBS gpufl_agent_core
    FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/agent/cursor.c
                 ${PROJECT_SOURCE_DIR}/src/common/err.c)
endif()
