# src/common/opt*.c: the option engine's config files, command lines and
# value syntax (every program's options)
gpufl_fuzz_target(opt
  REPLAY_LIBS gpufl_common
  FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/common/opt.c
               ${PROJECT_SOURCE_DIR}/src/common/opt_doc.c
               ${PROJECT_SOURCE_DIR}/src/common/opt_val.c
               ${PROJECT_SOURCE_DIR}/src/common/num.c
  FUZZ_LIBS m)
