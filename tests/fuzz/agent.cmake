# Fuzz target for the agent's cursor-file parser (src/agent/cursor.c), in
# the style of fuzz.cmake: the corpus always replays as a test; with
# -DGPUFL_FUZZ=ON and clang a bounded libFuzzer run is a test too.
if(TARGET gpufl_agent_core)
  set(GPUFL_FUZZ_AGENT_DIR ${CMAKE_CURRENT_LIST_DIR})
  add_executable(fuzz_cursor_replay ${GPUFL_FUZZ_AGENT_DIR}/fuzz_cursor.c
                 ${GPUFL_FUZZ_AGENT_DIR}/replay_main.c)
  gpufl_target(fuzz_cursor_replay)
  target_link_libraries(fuzz_cursor_replay PRIVATE gpufl_agent_core)
  add_test(NAME fuzz_cursor_replay
           COMMAND fuzz_cursor_replay ${GPUFL_FUZZ_AGENT_DIR}/corpus/cursor)
  set_tests_properties(fuzz_cursor_replay PROPERTIES TIMEOUT 300)

  if(GPUFL_FUZZ AND CMAKE_C_COMPILER_ID STREQUAL "Clang")
    add_executable(fuzz_cursor ${GPUFL_FUZZ_AGENT_DIR}/fuzz_cursor.c
                   ${PROJECT_SOURCE_DIR}/src/agent/cursor.c
                   ${PROJECT_SOURCE_DIR}/src/common/err.c)
    gpufl_target(fuzz_cursor)
    target_compile_options(fuzz_cursor PRIVATE
      -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
    target_link_options(fuzz_cursor PRIVATE -fsanitize=fuzzer,address,undefined)

    set(GPUFL_FUZZ_CURSOR_WORK ${CMAKE_BINARY_DIR}/fuzz/cursor)
    file(MAKE_DIRECTORY ${GPUFL_FUZZ_CURSOR_WORK})
    add_test(NAME fuzz_cursor_corpus_copy
             COMMAND ${CMAKE_COMMAND} -E copy_directory
                     ${GPUFL_FUZZ_AGENT_DIR}/corpus/cursor
                     ${GPUFL_FUZZ_CURSOR_WORK}/corpus)
    set_tests_properties(fuzz_cursor_corpus_copy PROPERTIES
      FIXTURES_SETUP fuzz_cursor_corpus)
    add_test(NAME fuzz_cursor
             COMMAND fuzz_cursor -max_total_time=20 -rss_limit_mb=1024
                     -timeout=10 -artifact_prefix=${GPUFL_FUZZ_CURSOR_WORK}/
                     ${GPUFL_FUZZ_CURSOR_WORK}/corpus
             WORKING_DIRECTORY ${GPUFL_FUZZ_CURSOR_WORK})
    set_tests_properties(fuzz_cursor PROPERTIES TIMEOUT 120
      FIXTURES_REQUIRED fuzz_cursor_corpus)
  endif()
endif()
