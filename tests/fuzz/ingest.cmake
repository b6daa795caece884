# Fuzz target for gpufl-server's ingest boundary (src/server/ingest.c):
# the corpus replays as an ordinary test with any compiler; with
# -DGPUFL_FUZZ=ON and clang a bounded libFuzzer run is a test too (on a
# copy of the corpus in the build tree).
if(TARGET gpufl_server_core)
  set(GPUFL_FUZZ_INGEST_DIR ${CMAKE_CURRENT_LIST_DIR})
  add_executable(fuzz_ingest_replay ${GPUFL_FUZZ_INGEST_DIR}/fuzz_ingest.c
                 ${GPUFL_FUZZ_INGEST_DIR}/replay_main.c)
  gpufl_target(fuzz_ingest_replay)
  target_link_libraries(fuzz_ingest_replay PRIVATE gpufl_server_core)
  add_test(NAME fuzz_ingest_replay
           COMMAND fuzz_ingest_replay ${GPUFL_FUZZ_INGEST_DIR}/corpus/ingest)
  set_tests_properties(fuzz_ingest_replay PROPERTIES TIMEOUT 300)

  if(GPUFL_FUZZ AND CMAKE_C_COMPILER_ID STREQUAL "Clang")
    add_executable(fuzz_ingest ${GPUFL_FUZZ_INGEST_DIR}/fuzz_ingest.c
                   ${PROJECT_SOURCE_DIR}/src/server/ingest.c
                   ${PROJECT_SOURCE_DIR}/src/common/jsonl.c
                   ${PROJECT_SOURCE_DIR}/src/common/jw.c
                   ${PROJECT_SOURCE_DIR}/src/common/err.c)
    gpufl_target(fuzz_ingest)
    target_include_directories(fuzz_ingest PRIVATE
                               ${PROJECT_SOURCE_DIR}/src/server)
    target_compile_options(fuzz_ingest PRIVATE
      -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
    target_link_options(fuzz_ingest PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_ingest PRIVATE PkgConfig::ZSTD z m)

    set(GPUFL_FUZZ_INGEST_WORK ${CMAKE_BINARY_DIR}/fuzz/ingest)
    file(MAKE_DIRECTORY ${GPUFL_FUZZ_INGEST_WORK})
    add_test(NAME fuzz_ingest_corpus_copy
             COMMAND ${CMAKE_COMMAND} -E copy_directory
                     ${GPUFL_FUZZ_INGEST_DIR}/corpus/ingest
                     ${GPUFL_FUZZ_INGEST_WORK}/corpus)
    set_tests_properties(fuzz_ingest_corpus_copy PROPERTIES
      FIXTURES_SETUP fuzz_ingest_corpus)
    add_test(NAME fuzz_ingest
             COMMAND fuzz_ingest -max_total_time=20 -rss_limit_mb=1024
                     -timeout=10 -artifact_prefix=${GPUFL_FUZZ_INGEST_WORK}/
                     ${GPUFL_FUZZ_INGEST_WORK}/corpus
             WORKING_DIRECTORY ${GPUFL_FUZZ_INGEST_WORK})
    set_tests_properties(fuzz_ingest PROPERTIES TIMEOUT 120
      FIXTURES_REQUIRED fuzz_ingest_corpus)
  endif()
endif()
