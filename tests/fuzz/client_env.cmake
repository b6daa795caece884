# src/client/options.c: libgpufl's GPUFL_* environment, read with the
# option engine's value parsers (src/common/opt_val.c, compiled in so that
# libFuzzer sees its branches)
gpufl_fuzz_target(client_env
  REPLAY_LIBS gpufl_internal
  FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/common/opt_val.c
               ${PROJECT_SOURCE_DIR}/src/common/num.c
  FUZZ_LIBS gpufl_internal)
