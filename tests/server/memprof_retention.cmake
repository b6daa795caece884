# Retention of memory profiles (test_memprof_retention.py): on SQLite, and
# on PostgreSQL on the throwaway cluster server.cmake starts (fixture
# server_pg; its URI file is in testtmp/pgcluster).
if(TARGET gpufl-server AND EXISTS ${PROJECT_SOURCE_DIR}/src/server/api_memprof.c)
  add_test(NAME server_memprof_retention
    COMMAND ${Python3_EXECUTABLE}
            ${CMAKE_CURRENT_LIST_DIR}/test_memprof_retention.py -v)
  set_tests_properties(server_memprof_retention PROPERTIES TIMEOUT 300
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
  file(GLOB _mpr_pg_bins /usr/lib/postgresql/*/bin/initdb)
  if(_mpr_pg_bins)
    add_test(NAME server_pg_memprof_retention
      COMMAND ${Python3_EXECUTABLE}
              ${CMAKE_CURRENT_LIST_DIR}/test_memprof_retention.py -v)
    set_tests_properties(server_pg_memprof_retention PROPERTIES TIMEOUT 300
      FIXTURES_REQUIRED server_pg
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${CMAKE_BINARY_DIR}/testtmp/pgcluster/uri")
  endif()
endif()
