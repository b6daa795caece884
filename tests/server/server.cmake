# gpufl-server: unit tests of its modules, and HTTP-level tests that run
# the real binary on 127.0.0.1 fed with real logs (test_server.py).
if(TARGET gpufl_server_core)
  gpufl_unit_test(test_srv_ingest ${CMAKE_CURRENT_LIST_DIR}/test_srv_ingest.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_ingest_par
                  ${CMAKE_CURRENT_LIST_DIR}/test_srv_ingest_par.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_rollup ${CMAKE_CURRENT_LIST_DIR}/test_srv_rollup.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_config ${CMAKE_CURRENT_LIST_DIR}/test_srv_config.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_store ${CMAKE_CURRENT_LIST_DIR}/test_srv_store.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_gaps ${CMAKE_CURRENT_LIST_DIR}/test_srv_gaps.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_json ${CMAKE_CURRENT_LIST_DIR}/test_srv_json.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_kblock ${CMAKE_CURRENT_LIST_DIR}/test_srv_kblock.c
                  LIBS gpufl_server_core m)
  gpufl_unit_test(test_srv_kcache ${CMAKE_CURRENT_LIST_DIR}/test_srv_kcache.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_kb_plan ${CMAKE_CURRENT_LIST_DIR}/test_srv_kb_plan.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_kb_wal ${CMAKE_CURRENT_LIST_DIR}/test_srv_kb_wal.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_igroup ${CMAKE_CURRENT_LIST_DIR}/test_srv_igroup.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_tlrun ${CMAKE_CURRENT_LIST_DIR}/test_srv_tlrun.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_ext_kth ${CMAKE_CURRENT_LIST_DIR}/test_srv_ext_kth.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_kbcache ${CMAKE_CURRENT_LIST_DIR}/test_srv_kbcache.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_static ${CMAKE_CURRENT_LIST_DIR}/test_srv_static.c
                  LIBS gpufl_server_core)

  # One ctest test per test class, so ctest -j runs them side by side.
  foreach(cls Query Auth Hostile Static Durability Retention DiskFull)
    add_test(NAME server_http_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_server.py
              -v ${cls})
    set_tests_properties(server_http_${cls} PROPERTIES TIMEOUT 600
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
  endforeach()
endif()

# Capture requests (test_capture.py): the auth matrix, states, expiry,
# malformed bodies; on PostgreSQL below too.
if(TARGET gpufl_server_core)
  add_test(NAME server_capture
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_capture.py -v)
  set_tests_properties(server_capture PROPERTIES TIMEOUT 300
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
endif()

# GPU waste (test_waste.py): waste lines in, /fleet/waste's sums, costs,
# series, strip, replays, retention, 400s; on PostgreSQL below too.
if(TARGET gpufl_server_core)
  add_test(NAME server_waste
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_waste.py -v)
  set_tests_properties(server_waste PROPERTIES TIMEOUT 300
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
endif()

# Kernel blocks (test_kblocks.py): compaction, replays of compacted
# kernels, the same answers as rows, kill -9 during compaction, ingest
# straight into blocks (Ingest, IngestCrash), concurrent batches sharing
# commits through kill -9 (IngestGroup), pages by time at random
# starts and cursors (Pages), the page by time's early stop in the
# block index (PageScan), sorts by duration of one
# name through the blocks' names (NameSorts), the compactor's row counts
# through kill -9 (Counts), sorts by duration over all names from the
# kept rows (KeptSorts); on
# PostgreSQL below too.
if(TARGET gpufl_server_core)
  foreach(cls Blocks Reads Pages PageScan NameSorts Crash Ingest IngestCrash
      Counts KeptSorts IngestGroup)
    add_test(NAME server_kblocks_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kblocks.py
              -v ${cls})
    set_tests_properties(server_kblocks_${cls} PROPERTIES TIMEOUT 300
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
  endforeach()
  # `gpufl-server migrate` of a previous version's database, killed
  # midway and run again (test_kblocks_migrate.py)
  add_test(NAME server_kblocks_Migrate
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kblocks_migrate.py
            -v Migrate)
  set_tests_properties(server_kblocks_Migrate PROPERTIES TIMEOUT 300
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
  # timeline level 0 computed from the kernels (test_kblocks_tl0.py)
  add_test(NAME server_kblocks_Tl0
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kblocks_tl0.py
            -v Tl0)
  set_tests_properties(server_kblocks_Tl0 PROPERTIES TIMEOUT 300
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
  add_test(NAME server_kblocks_Capi0
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kblocks_tl0.py
            -v Capi0)
  set_tests_properties(server_kblocks_Capi0 PROPERTIES TIMEOUT 300
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
  # the cold tier in a real radosgw (test_kblocks_cold.py; 77: no radosgw)
  add_test(NAME server_kblocks_Cold
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kblocks_cold.py
            -v Cold)
  # radosgw listens on fixed ports (7480, 6789): one user at a time
  set_tests_properties(server_kblocks_Cold PROPERTIES TIMEOUT 300
    RESOURCE_LOCK ceph SKIP_RETURN_CODE 77
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
endif()

# Names, API calls, the level-of-detail timeline, export, the UI found
# without a flag (test_timeline.py), on SQLite; on PostgreSQL below.
set(GPUFL_TL_CLASSES Names Lod Flows CallSummary Export)
if(TARGET gpufl_server_core)
  foreach(cls ${GPUFL_TL_CLASSES} UiDefault)
    add_test(NAME server_tl_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_timeline.py
              -v ${cls})
    set_tests_properties(server_tl_${cls} PROPERTIES TIMEOUT 600
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
  endforeach()
endif()

# The HTTP suite's classes that store or read kernels, again with
# --kernel-store=rows (the default is blocks; the API contract does not
# move with the store: docs/server.md "Kernel blocks (store)"):
# GPUFL_TEST_SERVER_ARGS goes to every server they start.  Auth, Static,
# capture and waste hold no kernel answer that the store could change:
# the default only.  On PostgreSQL below too (DiskFull: SQLite only).
set(GPUFL_ROWS_HTTP_CLASSES Query Durability Hostile Retention)
set(GPUFL_ROWS_TL_CLASSES Names Lod Flows CallSummary Export)
set(GPUFL_ROWS_ARGS "GPUFL_TEST_SERVER_ARGS=--kernel-store=rows")
# Query once more after the compactor merged ingest's small blocks (the
# plain run reads them before the compactor's first pass, a minute in)
set(GPUFL_COMPACTED_ARGS
  "GPUFL_TEST_SERVER_ARGS=--kernel-compact-interval=1s;GPUFL_TEST_KB_COMPACTED=1")
if(TARGET gpufl_server_core)
  foreach(cls ${GPUFL_ROWS_HTTP_CLASSES} DiskFull)
    add_test(NAME server_rows_http_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_server.py
              -v ${cls})
    set_tests_properties(server_rows_http_${cls} PROPERTIES TIMEOUT 600
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;${GPUFL_ROWS_ARGS}")
  endforeach()
  add_test(NAME server_http_QueryCompacted
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_server.py
            -v Query)
  set_tests_properties(server_http_QueryCompacted PROPERTIES TIMEOUT 600
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;${GPUFL_COMPACTED_ARGS}")
  foreach(cls ${GPUFL_ROWS_TL_CLASSES})
    add_test(NAME server_rows_tl_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_timeline.py
              -v ${cls})
    set_tests_properties(server_rows_tl_${cls} PROPERTIES TIMEOUT 600
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;${GPUFL_ROWS_ARGS}")
  endforeach()
endif()

# The same HTTP suite on PostgreSQL: a throwaway cluster (pg_cluster.sh)
# started before and stopped after, one fresh database per server.
file(GLOB GPUFL_PG_BINS /usr/lib/postgresql/*/bin/initdb)
if(TARGET gpufl_server_core AND GPUFL_PG_BINS)
  set(GPUFL_PG_DIR ${CMAKE_BINARY_DIR}/testtmp/pgcluster)
  add_test(NAME server_pg_start
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/pg_cluster.sh start ${GPUFL_PG_DIR})
  set_tests_properties(server_pg_start PROPERTIES FIXTURES_SETUP server_pg
    TIMEOUT 120)
  add_test(NAME server_pg_stop
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/pg_cluster.sh stop ${GPUFL_PG_DIR})
  set_tests_properties(server_pg_stop PROPERTIES FIXTURES_CLEANUP server_pg)
  foreach(cls Query Auth Hostile Durability Retention)
    add_test(NAME server_pg_http_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_server.py
              -v ${cls})
    set_tests_properties(server_pg_http_${cls} PROPERTIES TIMEOUT 600
      FIXTURES_REQUIRED server_pg
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
  endforeach()
  add_test(NAME server_pg_capture
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_capture.py -v)
  set_tests_properties(server_pg_capture PROPERTIES TIMEOUT 300
    FIXTURES_REQUIRED server_pg
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
  add_test(NAME server_pg_waste
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_waste.py -v)
  set_tests_properties(server_pg_waste PROPERTIES TIMEOUT 300
    FIXTURES_REQUIRED server_pg
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
  foreach(cls Blocks Reads Pages PageScan NameSorts Crash Ingest IngestCrash
      Counts KeptSorts IngestGroup)
    add_test(NAME server_pg_kblocks_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kblocks.py
              -v ${cls})
    set_tests_properties(server_pg_kblocks_${cls} PROPERTIES TIMEOUT 300
      FIXTURES_REQUIRED server_pg
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
  endforeach()
  # 67 s with the gcc build at load 3: room for the sanitizer build
  set_tests_properties(server_pg_kblocks_KeptSorts PROPERTIES TIMEOUT 900)
  # 241 s with the gcc build at load 6, and past 300 s (timed out) with
  # two more busy loops: room for the sanitizer build under load
  # NameSorts reads and edits kbnames rows (blocks as written before
  # schema 22): without the names' packer (kbnpack, schema 30), whose
  # answers NamePack compares with a rows server's on the same sessions
  set_tests_properties(server_pg_kblocks_NameSorts PROPERTIES TIMEOUT 900
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri;GPUFL_SERVER_KBNP_OFF=1")
  # the kernel blocks' names packed (kbnpack, PostgreSQL only)
  add_test(NAME server_pg_kblocks_NamePack
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kblocks.py
            -v NamePack)
  # 84 s with the gcc build at load 2.5 (its range too large inserts
  # 2^19 rows): room for the sanitizer build under load
  set_tests_properties(server_pg_kblocks_NamePack PROPERTIES TIMEOUT 600
    FIXTURES_REQUIRED server_pg
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
  add_test(NAME server_pg_kblocks_Migrate
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kblocks_migrate.py
            -v Migrate)
  # it counts kbnames rows: without the names' packer
  set_tests_properties(server_pg_kblocks_Migrate PROPERTIES TIMEOUT 300
    FIXTURES_REQUIRED server_pg
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri;GPUFL_SERVER_KBNP_OFF=1")
  add_test(NAME server_pg_kblocks_Tl0
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kblocks_tl0.py
            -v Tl0)
  set_tests_properties(server_pg_kblocks_Tl0 PROPERTIES TIMEOUT 300
    FIXTURES_REQUIRED server_pg
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
  # the timeline's buckets packed (tlpack, PostgreSQL only)
  add_test(NAME server_pg_kblocks_TlPack
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kblocks_tl0.py
            -v TlPack)
  set_tests_properties(server_pg_kblocks_TlPack PROPERTIES TIMEOUT 300
    FIXTURES_REQUIRED server_pg
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
  # the API call summary's buckets packed (capipack, PostgreSQL only)
  add_test(NAME server_pg_kblocks_CapiPack
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kblocks_tl0.py
            -v CapiPack)
  set_tests_properties(server_pg_kblocks_CapiPack PROPERTIES TIMEOUT 300
    FIXTURES_REQUIRED server_pg
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
  add_test(NAME server_pg_kblocks_Capi0
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kblocks_tl0.py
            -v Capi0)
  set_tests_properties(server_pg_kblocks_Capi0 PROPERTIES TIMEOUT 300
    FIXTURES_REQUIRED server_pg
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
  add_test(NAME server_pg_kblocks_Cold
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kblocks_cold.py
            -v Cold)
  set_tests_properties(server_pg_kblocks_Cold PROPERTIES TIMEOUT 300
    FIXTURES_REQUIRED server_pg RESOURCE_LOCK ceph SKIP_RETURN_CODE 77
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
  # the HTTP suite with --kernel-store=rows (above) on PostgreSQL
  foreach(cls ${GPUFL_ROWS_HTTP_CLASSES})
    add_test(NAME server_pg_rows_http_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_server.py
              -v ${cls})
    set_tests_properties(server_pg_rows_http_${cls} PROPERTIES TIMEOUT 600
      FIXTURES_REQUIRED server_pg
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri;${GPUFL_ROWS_ARGS}")
  endforeach()
  add_test(NAME server_pg_http_QueryCompacted
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_server.py
            -v Query)
  set_tests_properties(server_pg_http_QueryCompacted PROPERTIES TIMEOUT 600
    FIXTURES_REQUIRED server_pg
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri;${GPUFL_COMPACTED_ARGS}")
  foreach(cls ${GPUFL_ROWS_TL_CLASSES})
    add_test(NAME server_pg_rows_tl_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_timeline.py
              -v ${cls})
    set_tests_properties(server_pg_rows_tl_${cls} PROPERTIES TIMEOUT 600
      FIXTURES_REQUIRED server_pg
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri;${GPUFL_ROWS_ARGS}")
  endforeach()
  foreach(cls ${GPUFL_TL_CLASSES})
    add_test(NAME server_pg_tl_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_timeline.py
              -v ${cls})
    set_tests_properties(server_pg_tl_${cls} PROPERTIES TIMEOUT 600
      FIXTURES_REQUIRED server_pg
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
  endforeach()
endif()

# PostgreSQL crashed, restarted and its connections terminated under
# ingest: a private durable cluster (the test kills it; the shared one must
# not see that).
if(TARGET gpufl_server_core AND GPUFL_PG_BINS)
  add_test(NAME server_pg_outage
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_pg_outage.py -v)
  set_tests_properties(server_pg_outage PROPERTIES TIMEOUT 300
    ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
endif()

# Kafka bridge: two servers in one consumer group on librdkafka's mock
# cluster store every event exactly once.
if(TARGET gpufl_server_core)
  gpufl_unit_test(test_srv_kafka ${CMAKE_CURRENT_LIST_DIR}/test_srv_kafka.c
                  LIBS gpufl_server_core)
endif()

# The same as two gpufl-server processes (one killed with SIGKILL
# mid-stream), on a shared SQLite file and on a shared PostgreSQL database.
if(TARGET gpufl_server_core AND TARGET gpufl-server)
  add_executable(test_srv_kafka_proc
                 ${CMAKE_CURRENT_LIST_DIR}/test_srv_kafka_proc.c)
  gpufl_target(test_srv_kafka_proc)
  target_include_directories(test_srv_kafka_proc PRIVATE
                             ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(test_srv_kafka_proc PRIVATE gpufl_server_core)
  add_dependencies(test_srv_kafka_proc gpufl-server)
  add_test(NAME test_srv_kafka_proc
           COMMAND test_srv_kafka_proc $<TARGET_FILE:gpufl-server>)
  set_tests_properties(test_srv_kafka_proc PROPERTIES TIMEOUT 300
    ENVIRONMENT "GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
  if(GPUFL_PG_BINS)
    add_test(NAME server_pg_kafka_proc
             COMMAND test_srv_kafka_proc $<TARGET_FILE:gpufl-server>)
    set_tests_properties(server_pg_kafka_proc PROPERTIES TIMEOUT 300
      FIXTURES_REQUIRED server_pg
      ENVIRONMENT "GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
  endif()
endif()

# db.h's PostgreSQL backend losing its connection: server_pg_db runs it on
# the cluster (the program alone, without one, exits 77).
if(TARGET gpufl_server_core)
  add_executable(test_srv_db_pg ${CMAKE_CURRENT_LIST_DIR}/test_srv_db_pg.c)
  gpufl_target(test_srv_db_pg)
  target_include_directories(test_srv_db_pg PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(test_srv_db_pg PRIVATE gpufl_server_core)
  if(GPUFL_PG_BINS)
    add_test(NAME server_pg_db COMMAND test_srv_db_pg)
    set_tests_properties(server_pg_db PROPERTIES TIMEOUT 120
      FIXTURES_REQUIRED server_pg
      ENVIRONMENT "GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
  endif()
endif()

# The store's own tests on PostgreSQL (a fresh database per store).
if(TARGET test_srv_store AND GPUFL_PG_BINS)
  foreach(t store gaps kb_plan igroup tlrun)
    add_test(NAME server_pg_${t} COMMAND test_srv_${t})
    set_tests_properties(server_pg_${t} PROPERTIES TIMEOUT 300
      FIXTURES_REQUIRED server_pg
      ENVIRONMENT "GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
  endforeach()
endif()

# Jobs, stragglers and regressions (test_jobs.py): hand-written sessions with
# seeded noise, on SQLite and on PostgreSQL.
if(TARGET gpufl_server_core)
  foreach(cls Jobs Regressions)
    add_test(NAME server_jobs_${cls}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_jobs.py
              -v ${cls})
    set_tests_properties(server_jobs_${cls} PROPERTIES TIMEOUT 300
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
    if(GPUFL_PG_BINS)
      add_test(NAME server_pg_jobs_${cls}
        COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_jobs.py
                -v ${cls})
      set_tests_properties(server_pg_jobs_${cls} PROPERTIES TIMEOUT 300
        FIXTURES_REQUIRED server_pg
        ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
    endif()
  endforeach()
endif()
