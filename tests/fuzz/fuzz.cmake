# Fuzz targets (see gpufl_fuzz_target in tests/CMakeLists.txt).  Every
# parser has one.

# src/common/jsonl.c, jsonl_get.c: the JSONL reader every component shares
gpufl_fuzz_target(jsonl
  REPLAY_LIBS gpufl_common m
  FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/common/jsonl.c
               ${PROJECT_SOURCE_DIR}/src/common/jsonl_get.c
               ${PROJECT_SOURCE_DIR}/src/common/jw.c
               ${PROJECT_SOURCE_DIR}/src/common/err.c
               ${PROJECT_SOURCE_DIR}/src/common/buf.c
  FUZZ_LIBS m)
