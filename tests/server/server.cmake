# gpufl-server: unit tests of its modules, and HTTP-level tests that run
# the real binary on 127.0.0.1 fed with real logs (test_server.py).
set(GPUFL_SRV_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})

# gpufl_srv_py_test(NAME SCRIPT [CLASS cls] TIMEOUT s [PG] [ENV var=value...]
#                   [PROPS property value...])
# One ctest test: tests/server/SCRIPT -v [CLASS], told where the binaries
# and the scratch directory are; PG: on the shared cluster (fixture
# server_pg, its URI file).  ENV comes after those, PROPS are more
# set_tests_properties pairs.
function(gpufl_srv_py_test name script)
  cmake_parse_arguments(T "PG" "CLASS;TIMEOUT" "ENV;PROPS" ${ARGN})
  set(env "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin"
          "GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
  set(props TIMEOUT ${T_TIMEOUT})
  if(T_PG)
    list(APPEND env "GPUFL_TEST_PG_URI_FILE=${GPUFL_PG_DIR}/uri")
    list(APPEND props FIXTURES_REQUIRED server_pg)
  endif()
  list(APPEND env ${T_ENV})
  add_test(NAME ${name}
    COMMAND ${Python3_EXECUTABLE} ${GPUFL_SRV_TEST_DIR}/${script} -v ${T_CLASS})
  set_tests_properties(${name} PROPERTIES ${props} ${T_PROPS}
    ENVIRONMENT "${env}")
endfunction()

# gpufl_srv_py_tests(PREFIX SCRIPT CLASSES cls... TIMEOUT s [PG] [ENV ...]
#                    [PROPS ...])
# One ctest test per test class (PREFIXcls), so ctest -j runs them side by
# side; the rest as gpufl_srv_py_test's.
function(gpufl_srv_py_tests prefix script)
  cmake_parse_arguments(T "PG" "TIMEOUT" "CLASSES;ENV;PROPS" ${ARGN})
  set(pg "")
  if(T_PG)
    set(pg PG)
  endif()
  foreach(cls ${T_CLASSES})
    gpufl_srv_py_test(${prefix}${cls} ${script} CLASS ${cls}
      TIMEOUT ${T_TIMEOUT} ${pg} ENV ${T_ENV} PROPS ${T_PROPS})
  endforeach()
endfunction()

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
  gpufl_unit_test(test_srv_oblock ${CMAKE_CURRENT_LIST_DIR}/test_srv_oblock.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_kcache ${CMAKE_CURRENT_LIST_DIR}/test_srv_kcache.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_kb_plan ${CMAKE_CURRENT_LIST_DIR}/test_srv_kb_plan.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_kb_wal ${CMAKE_CURRENT_LIST_DIR}/test_srv_kb_wal.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_ckpt ${CMAKE_CURRENT_LIST_DIR}/test_srv_ckpt.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_walbuf ${CMAKE_CURRENT_LIST_DIR}/test_srv_walbuf.c
                  LIBS gpufl_server_core)
  gpufl_unit_test(test_srv_kb_par ${CMAKE_CURRENT_LIST_DIR}/test_srv_kb_par.c
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

  gpufl_srv_py_tests(server_http_ test_server.py TIMEOUT 600
    CLASSES Query Auth Hostile Static Durability Retention DiskFull)

  # Under ThreadSanitizer (-DGPUFL_TSAN=ON, make test's last stage): the
  # HTTP tests of the threaded ingest - bodies parsed by the helper while
  # they are stored, three connections at once, group commit - one test
  # each, as the whole classes would take too long instrumented.  The
  # stage also runs test_srv_ingest_par, test_srv_igroup, test_srv_kb_par.
  if(GPUFL_TSAN)
    foreach(t Durability.test_streamed_bodies_at_once
              Durability.test_big_batch_duplicates
              Durability.test_no_parse_helper)
      string(REPLACE "Durability.test_" "" short ${t})
      gpufl_srv_py_test(tsan_http_${short} test_server.py CLASS ${t}
        TIMEOUT 600 ENV TSAN_OPTIONS=halt_on_error=1)
    endforeach()
    add_test(NAME tsan_hostile_streamed_bodies_scope
      COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/hostile/test_hostile.py
              -v Keys.test_streamed_bodies_scope)
    set_tests_properties(tsan_hostile_streamed_bodies_scope PROPERTIES TIMEOUT 600
      ENVIRONMENT "GPUFL_BIN_DIR=${CMAKE_BINARY_DIR}/bin;GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp;TSAN_OPTIONS=halt_on_error=1")
  endif()
endif()

# Capture requests (test_capture.py): the auth matrix, states, expiry,
# malformed bodies; on PostgreSQL below too.
if(TARGET gpufl_server_core)
  gpufl_srv_py_test(server_capture test_capture.py TIMEOUT 300)
endif()

# GPU waste (test_waste.py): waste lines in, /fleet/waste's sums, costs,
# series, strip, replays, retention, 400s; on PostgreSQL below too.
if(TARGET gpufl_server_core)
  gpufl_srv_py_test(server_waste test_waste.py TIMEOUT 300)
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
set(GPUFL_KBLOCKS_CLASSES Blocks Reads Pages PageScan Crash Ingest IngestCrash
  Counts KeptSorts IngestGroup)
if(TARGET gpufl_server_core)
  gpufl_srv_py_tests(server_kblocks_ test_kblocks.py TIMEOUT 300
    CLASSES ${GPUFL_KBLOCKS_CLASSES})
  # NameSorts reads and edits kbnames rows: without the names' packer
  # (kbnpack), whose answers NamePack compares with a rows server's
  gpufl_srv_py_test(server_kblocks_NameSorts test_kblocks.py
    CLASS NameSorts TIMEOUT 300 ENV GPUFL_SERVER_KBNP_OFF=1)
  # the kernel blocks' names packed (kbnpack; PostgreSQL below too)
  gpufl_srv_py_test(server_kblocks_NamePack test_kblocks.py
    CLASS NamePack TIMEOUT 600)
  # ops in blocks (test_oblocks.py): none in `ops`, replays straddling
  # blocks, the copies, calls and export answers of a rows store
  gpufl_srv_py_test(server_oblocks test_oblocks.py CLASS OpBlocks
    TIMEOUT 300)
  # their compactor: tiny blocks merged, rows converted, kill -9 midway
  gpufl_srv_py_test(server_oblocks_compact test_oblocks.py CLASS OpCompact
    TIMEOUT 300)
  # `gpufl-server migrate` of a previous version's database, killed
  # midway and run again (test_kblocks_migrate.py)
  # it counts kbnames rows: without the names' packer
  gpufl_srv_py_test(server_kblocks_Migrate test_kblocks_migrate.py
    CLASS Migrate TIMEOUT 300 ENV GPUFL_SERVER_KBNP_OFF=1)
  # timeline level 0 computed from the kernels, level 1 packed at ingest
  # (test_kblocks_tl0.py)
  gpufl_srv_py_tests(server_kblocks_ test_kblocks_tl0.py TIMEOUT 300
    CLASSES Tl0 Tl1 Capi0 CapiLite)
  # the cold tier in a real radosgw (test_kblocks_cold.py; 77: no radosgw)
  # radosgw listens on fixed ports (7480, 6789): one user at a time
  gpufl_srv_py_test(server_kblocks_Cold test_kblocks_cold.py CLASS Cold
    TIMEOUT 300 PROPS RESOURCE_LOCK ceph SKIP_RETURN_CODE 77)
endif()

# Names, API calls, the level-of-detail timeline, export, the UI found
# without a flag (test_timeline.py), on SQLite; on PostgreSQL below.
set(GPUFL_TL_CLASSES Names Lod Flows CallSummary Export)
if(TARGET gpufl_server_core)
  gpufl_srv_py_tests(server_tl_ test_timeline.py TIMEOUT 600
    CLASSES ${GPUFL_TL_CLASSES} UiDefault)
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
  gpufl_srv_py_tests(server_rows_http_ test_server.py TIMEOUT 600
    CLASSES ${GPUFL_ROWS_HTTP_CLASSES} DiskFull ENV ${GPUFL_ROWS_ARGS})
  gpufl_srv_py_test(server_http_QueryCompacted test_server.py CLASS Query
    TIMEOUT 600 ENV ${GPUFL_COMPACTED_ARGS})
  gpufl_srv_py_tests(server_rows_tl_ test_timeline.py TIMEOUT 600
    CLASSES ${GPUFL_ROWS_TL_CLASSES} ENV ${GPUFL_ROWS_ARGS})
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
  # pg_cluster.sh stop: a failed stop reported, a missing or stopped
  # cluster quietly 0 (its own clusters, not the fixture's)
  add_test(NAME server_pg_cluster_stop
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/test_pg_cluster_stop.sh)
  set_tests_properties(server_pg_cluster_stop PROPERTIES TIMEOUT 120
    ENVIRONMENT "GPUFL_TEST_TMP=${CMAKE_BINARY_DIR}/testtmp")
  gpufl_srv_py_tests(server_pg_http_ test_server.py TIMEOUT 600 PG
    CLASSES Query Auth Hostile Durability Retention)
  gpufl_srv_py_test(server_pg_capture test_capture.py TIMEOUT 300 PG)
  gpufl_srv_py_test(server_pg_waste test_waste.py TIMEOUT 300 PG)
  gpufl_srv_py_test(server_pg_oblocks test_oblocks.py CLASS OpBlocks
    TIMEOUT 300 PG)
  gpufl_srv_py_test(server_pg_oblocks_compact test_oblocks.py
    CLASS OpCompact TIMEOUT 300 PG)
  gpufl_srv_py_tests(server_pg_kblocks_ test_kblocks.py TIMEOUT 300 PG
    CLASSES ${GPUFL_KBLOCKS_CLASSES})
  # 67 s with the gcc build at load 3: room for the sanitizer build
  set_tests_properties(server_pg_kblocks_KeptSorts PROPERTIES TIMEOUT 900)
  # 241 s with the gcc build at load 6, and past 300 s (timed out) with
  # two more busy loops: room for the sanitizer build under load
  # NameSorts reads and edits kbnames rows (blocks as written before
  # schema 22): without the names' packer (kbnpack, schema 30), whose
  # answers NamePack compares with a rows server's on the same sessions
  gpufl_srv_py_test(server_pg_kblocks_NameSorts test_kblocks.py
    CLASS NameSorts TIMEOUT 900 PG ENV GPUFL_SERVER_KBNP_OFF=1)
  # the kernel blocks' names packed (kbnpack; on SQLite above too)
  # 84 s with the gcc build at load 2.5 (its range too large inserts
  # 2^19 rows): room for the sanitizer build under load
  gpufl_srv_py_test(server_pg_kblocks_NamePack test_kblocks.py
    CLASS NamePack TIMEOUT 600 PG)
  # it counts kbnames rows: without the names' packer
  gpufl_srv_py_test(server_pg_kblocks_Migrate test_kblocks_migrate.py
    CLASS Migrate TIMEOUT 300 PG ENV GPUFL_SERVER_KBNP_OFF=1)
  # timeline level 0 and level 1 packed at ingest; the timeline's buckets
  # packed by the maintenance pass (tlpack) and the API call summary's
  # (capipack), PostgreSQL only
  gpufl_srv_py_tests(server_pg_kblocks_ test_kblocks_tl0.py TIMEOUT 300 PG
    CLASSES Tl0 Tl1 TlPack CapiPack Capi0)
  gpufl_srv_py_test(server_pg_kblocks_Cold test_kblocks_cold.py CLASS Cold
    TIMEOUT 300 PG PROPS RESOURCE_LOCK ceph SKIP_RETURN_CODE 77)
  # the HTTP suite with --kernel-store=rows (above) on PostgreSQL
  gpufl_srv_py_tests(server_pg_rows_http_ test_server.py TIMEOUT 600 PG
    CLASSES ${GPUFL_ROWS_HTTP_CLASSES} ENV ${GPUFL_ROWS_ARGS})
  gpufl_srv_py_test(server_pg_http_QueryCompacted test_server.py CLASS Query
    TIMEOUT 600 PG ENV ${GPUFL_COMPACTED_ARGS})
  gpufl_srv_py_tests(server_pg_rows_tl_ test_timeline.py TIMEOUT 600 PG
    CLASSES ${GPUFL_ROWS_TL_CLASSES} ENV ${GPUFL_ROWS_ARGS})
  gpufl_srv_py_tests(server_pg_tl_ test_timeline.py TIMEOUT 600 PG
    CLASSES ${GPUFL_TL_CLASSES})
endif()

# PostgreSQL crashed, restarted and its connections terminated under
# ingest: a private durable cluster (the test kills it; the shared one must
# not see that).
if(TARGET gpufl_server_core AND GPUFL_PG_BINS)
  gpufl_srv_py_test(server_pg_outage test_pg_outage.py TIMEOUT 300)
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
  gpufl_srv_py_tests(server_jobs_ test_jobs.py TIMEOUT 300
    CLASSES Jobs Regressions)
  if(GPUFL_PG_BINS)
    gpufl_srv_py_tests(server_pg_jobs_ test_jobs.py TIMEOUT 300 PG
      CLASSES Jobs Regressions)
  endif()
endif()
