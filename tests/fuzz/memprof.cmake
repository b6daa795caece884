# src/memprof: /proc/PID/maps text, event records (BPF ring, preload pipe)
# through the aggregation and the writers, and CPython 3.11 location tables
if(TARGET gpufl_memprof)
  gpufl_fuzz_target(memprof
    REPLAY_LIBS gpufl_memprof
    FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/memprof/api.c
                 ${PROJECT_SOURCE_DIR}/src/memprof/agg.c
                 ${PROJECT_SOURCE_DIR}/src/memprof/symb.c
                 ${PROJECT_SOURCE_DIR}/src/memprof/out.c
                 ${PROJECT_SOURCE_DIR}/src/memprof/pprof.c
                 ${PROJECT_SOURCE_DIR}/src/memprof/python.c
                 ${PROJECT_SOURCE_DIR}/src/common/jw.c
                 ${PROJECT_SOURCE_DIR}/src/common/elfsym.c
    FUZZ_LIBS gpufl_common z stdc++)
endif()
