# src/idle: the idle detector's text parsers (/proc/net/tcp, dcgm-exporter
# text, Jupyter times, cgroup paths, the kubelet device-plugin checkpoint,
# gpufl sessions' device-log lines)
if(TARGET gpufl_idle)
  gpufl_fuzz_target(idle
    REPLAY_LIBS gpufl_idle
    FUZZ_SOURCES ${PROJECT_SOURCE_DIR}/src/idle/idle_sess.c
                 ${PROJECT_SOURCE_DIR}/src/idle/idle_owner.c
                 ${PROJECT_SOURCE_DIR}/src/idle/idle_http.c
                 ${PROJECT_SOURCE_DIR}/src/idle/idle_kern.c
                 ${PROJECT_SOURCE_DIR}/src/common/jsonl.c
                 ${PROJECT_SOURCE_DIR}/src/common/jsonl_get.c
                 ${PROJECT_SOURCE_DIR}/src/common/err.c
    # the HTTP client and buffers linked as built (no coverage): the
    # parsers are what this target fuzzes
    FUZZ_LIBS gpufl_httpc gpufl_common PkgConfig::IDLE_CURL)
endif()
