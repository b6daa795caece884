# src/report: the log reader, aggregates and JSON printer behind `gpufl
# report`, and the importer of the original GPU Flight's v1 lines
if(TARGET gpufl_report)
  file(GLOB _fuzz_report_src ${PROJECT_SOURCE_DIR}/src/report/*.c)
  gpufl_fuzz_target(report
    REPLAY_LIBS gpufl_report
    FUZZ_SOURCES ${_fuzz_report_src}
    FUZZ_INCLUDES ${PROJECT_SOURCE_DIR}/src/report
    # src/common (the JSON reader and writer) linked as built, with ASan
    # and UBSan but without coverage: its comparisons were a third of the
    # run time, and fuzz_jsonl fuzzes it against its own oracle; the
    # statistics of gpufl diff (src/analysis, tested by test_compare and
    # test_diff) likewise
    FUZZ_LIBS gpufl_analysis gpufl_common PkgConfig::ZSTD z m
    # inputs of up to 4 KiB (a session line, dictionaries and a few dozen
    # events): twice the runs per second of the 6 KiB seeds' default
    FUZZ_ARGS -max_len=4096)
endif()
