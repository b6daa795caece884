# gpufl idle: verdicts from scripted NVML traces (the client's fake
# libnvidia-ml.so.1, tests/gpu/gpu.cmake), session signals from
# fixture trees, and the real command against a real pty, loopback TCP, a
# Jupyter-speaking HTTP fixture, Prometheus and gpufl-server.
if(TARGET gpufl_idle)
  gpufl_unit_test(test_idle_gpu ${CMAKE_CURRENT_LIST_DIR}/test_idle_gpu.c
                  LIBS gpufl_idle ${CMAKE_DL_LIBS})
  target_compile_definitions(test_idle_gpu PRIVATE
    FAKE_NVML_FULL="$<TARGET_FILE:fake_nvml_full>")
  add_dependencies(test_idle_gpu fake_nvml_full)

  gpufl_unit_test(test_idle_sess ${CMAKE_CURRENT_LIST_DIR}/test_idle_sess.c
                  LIBS gpufl_idle)

  # the option table of `gpufl idle`, compiled in from src/cli
  gpufl_unit_test(test_idle_cli_opt
                  ${CMAKE_CURRENT_LIST_DIR}/test_idle_cli_opt.c
                  ${PROJECT_SOURCE_DIR}/src/cli/cli_idle.c LIBS gpufl_idle)
  target_include_directories(test_idle_cli_opt PRIVATE
                             ${PROJECT_SOURCE_DIR}/src/cli)
endif()

if(TARGET gpufl_idle AND TARGET gpufl_cli)
  set(_idle_env "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin"
      "GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp"
      "FAKE_NVML=$<TARGET_FILE:fake_nvml_full>")
  # One ctest test per class, so ctest -j runs them side by side.
  foreach(cls Cli Scenes Signals Watch Waste)
    add_test(NAME idle_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_idle.py
              -v ${cls})
    set_tests_properties(idle_${cls} PROPERTIES TIMEOUT 300
      ENVIRONMENT "${_idle_env}")
  endforeach()
  if(TARGET gpufl-server AND TARGET gpufl-agent)
    add_test(NAME idle_Server
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_idle.py
              -v Server)
    set_tests_properties(idle_Server PROPERTIES TIMEOUT 300
      ENVIRONMENT "${_idle_env}")
  endif()
  # the same on PostgreSQL, on tests/server's throwaway cluster (the
  # fixture server_pg of tests/server/server.cmake, included after this)
  file(GLOB _idle_pg_bins /usr/lib/postgresql/*/bin/initdb)
  if(TARGET gpufl-server AND TARGET gpufl-agent AND _idle_pg_bins)
    add_test(NAME idle_pg_Server
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_idle.py
              -v Server)
    set_tests_properties(idle_pg_Server PROPERTIES TIMEOUT 300
      FIXTURES_REQUIRED server_pg
      ENVIRONMENT "${_idle_env};GPUFL_TEST_PG_URI_FILE=${CMAKE_BINARY_DIR}/testtmp/pgcluster/uri")
  endif()
  # waste lines: their sums are /metrics' counters and the server's
  if(TARGET gpufl-server)
    add_test(NAME idle_waste_lines
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_idle_waste.py
              -v)
    set_tests_properties(idle_waste_lines PROPERTIES TIMEOUT 120
      ENVIRONMENT "${_idle_env}")
  endif()
  add_test(NAME idle_prometheus
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_idle_prom.py)
  set_tests_properties(idle_prometheus PROPERTIES TIMEOUT 300
    SKIP_RETURN_CODE 77 ENVIRONMENT "${_idle_env}")
endif()
