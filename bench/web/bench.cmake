# bench_web: the web UI in headless Chromium on a session of 1M generated
# kernels ingested into a real gpufl-server: first timeline render, frame
# times while zooming/panning, tab memory.  Prints figures; not a test.
# Run: build/bin/bench_web [--kernels N]  (needs node, `make web`, chromium)
if(TARGET gpufl-server)
  find_program(GPUFL_NODE_EXE node)
  if(GPUFL_NODE_EXE)
    file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/bin/bench_web
      CONTENT "#!/bin/sh\nexec \"${GPUFL_NODE_EXE}\" \"${CMAKE_CURRENT_LIST_DIR}/bench_web.mjs\" --bin \"${CMAKE_BINARY_DIR}/bin\" \"$@\"\n"
      FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
                       GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  endif()
endif()
