# Fuzz targets.  Every parser has one; its corpus (tests/fuzz/corpus/<name>)
# always replays as an ordinary test, with any compiler.  With
# -DGPUFL_FUZZ=ON and clang, the libFuzzer binaries are built too and a
# bounded run of each is a test; it works on a copy of the corpus in the
# build tree, so the source tree is never written.  Crashers found there
# (build/fuzz/<name>/crash-*) are added to the corpus by hand.

set(GPUFL_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})

# ---- jsonl: src/common/jsonl.c ----
add_executable(fuzz_jsonl_replay ${GPUFL_FUZZ_DIR}/fuzz_jsonl.c
               ${GPUFL_FUZZ_DIR}/replay_main.c)
gpufl_target(fuzz_jsonl_replay)
target_link_libraries(fuzz_jsonl_replay PRIVATE gpufl_common m)
add_test(NAME fuzz_jsonl_replay
         COMMAND fuzz_jsonl_replay ${GPUFL_FUZZ_DIR}/corpus/jsonl)
set_tests_properties(fuzz_jsonl_replay PROPERTIES TIMEOUT 300)

if(GPUFL_FUZZ AND CMAKE_C_COMPILER_ID STREQUAL "Clang")
  # The code under test is compiled into the fuzzer itself: libFuzzer needs
  # its coverage instrumentation, which gpufl_common does not have.
  add_executable(fuzz_jsonl ${GPUFL_FUZZ_DIR}/fuzz_jsonl.c
                 ${PROJECT_SOURCE_DIR}/src/common/jsonl.c
                 ${PROJECT_SOURCE_DIR}/src/common/jw.c
                 ${PROJECT_SOURCE_DIR}/src/common/err.c)
  gpufl_target(fuzz_jsonl)
  target_compile_options(fuzz_jsonl PRIVATE
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  target_link_options(fuzz_jsonl PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_jsonl PRIVATE m)

  set(GPUFL_FUZZ_WORK ${CMAKE_BINARY_DIR}/fuzz/jsonl)
  file(MAKE_DIRECTORY ${GPUFL_FUZZ_WORK})
  add_test(NAME fuzz_jsonl_corpus_copy
           COMMAND ${CMAKE_COMMAND} -E copy_directory
                   ${GPUFL_FUZZ_DIR}/corpus/jsonl ${GPUFL_FUZZ_WORK}/corpus)
  set_tests_properties(fuzz_jsonl_corpus_copy PROPERTIES
    FIXTURES_SETUP fuzz_jsonl_corpus)
  add_test(NAME fuzz_jsonl
           COMMAND fuzz_jsonl -max_total_time=20 -rss_limit_mb=1024
                   -timeout=10 -artifact_prefix=${GPUFL_FUZZ_WORK}/
                   ${GPUFL_FUZZ_WORK}/corpus
           WORKING_DIRECTORY ${GPUFL_FUZZ_WORK})
  set_tests_properties(fuzz_jsonl PROPERTIES TIMEOUT 120
    FIXTURES_REQUIRED fuzz_jsonl_corpus)
endif()
