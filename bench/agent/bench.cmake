# bench_agent: gpufl-agent shipping N events (~330 bytes, three streams)
# to a loopback HTTP receiver: events/s, CPU-s per 1M events, peak RSS;
# 'live': following a client-like writer that rotates and prunes (lines
# written, shipped, reported lost); 'files': the same with 1,000 files in
# the folder.  Prints figures; not a test.  Run: build/bin/bench_agent
# [events] [zstd|gzip|none] | live [...] | files [...] (docs/agent.md)
if(TARGET gpufl-agent)
  add_executable(bench_agent ${CMAKE_CURRENT_LIST_DIR}/bench_agent.c)
  gpufl_target(bench_agent)
  # the receiver it ships to (same source as the tests')
  if(NOT TARGET agent_receiver)
    add_executable(agent_receiver
                   ${PROJECT_SOURCE_DIR}/tests/agent/receiver.c)
    gpufl_target(agent_receiver)
    pkg_check_modules(BENCH_MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
    target_link_libraries(agent_receiver PRIVATE gpufl_common
                          PkgConfig::ZSTD PkgConfig::AGENT_ZLIB
                          PkgConfig::BENCH_MHD Threads::Threads)
  endif()
  add_dependencies(bench_agent gpufl-agent agent_receiver)
endif()
