# The test suite's own PostgreSQL 15 (tests/pg/pg-cluster), as the CTest fixture "postgres":
#   pg.cluster_start (FIXTURES_SETUP) starts a fresh cluster in DSH_TEST_PG_DIR (a leftover one of an
#   interrupted run is stopped and wiped first); pg.cluster_stop (FIXTURES_CLEANUP) stops it and
#   removes the directory. Unix socket only, trust auth; as root the server runs as the system
#   user dsh-acp-pg.
# Tests reach it through the environment variable DSH_ACP_TEST_PG, a libpq URL for the superuser:
#   postgresql://postgres@/postgres?host=<DSH_TEST_PG_DIR>/socket
# A test that needs it says so, and then gets FIXTURES_REQUIRED postgres (`ctest -R name` starts and
# stops the cluster around it), the label pg, and DSH_ACP_TEST_PG in its ENVIRONMENT:
#   dsh_discover_boost_tests(<target> <prefix> REQUIRES_POSTGRES ...)   every case of a Boost.Test executable
#   dsh_requires_postgres(<test>...)   tests made with add_test (call it after their other properties:
#                                      set_tests_properties(... LABELS/ENVIRONMENT) would replace these)
# The directory is fixed per build directory (a hash of its path), so two build directories (plain,
# sanitize, other work trees) never share a cluster; it is under /tmp, which the server's system user
# can reach when a build directory's parents are private, and short enough for a socket path.
string(SHA256 _dsh_pg_hash "${CMAKE_BINARY_DIR}")
string(SUBSTRING "${_dsh_pg_hash}" 0 12 _dsh_pg_hash)
set(DSH_TEST_PG_DIR /tmp/dsh-acp-pg-${_dsh_pg_hash})
set(DSH_TEST_PG_ENV "DSH_ACP_TEST_PG=postgresql://postgres@/postgres?host=${DSH_TEST_PG_DIR}/socket")

add_test(NAME pg.cluster_start COMMAND ${PROJECT_SOURCE_DIR}/tests/pg/pg-cluster start ${DSH_TEST_PG_DIR})
add_test(NAME pg.cluster_stop COMMAND ${PROJECT_SOURCE_DIR}/tests/pg/pg-cluster stop ${DSH_TEST_PG_DIR})
set_tests_properties(pg.cluster_start PROPERTIES FIXTURES_SETUP postgres LABELS pg TIMEOUT 120)
set_tests_properties(pg.cluster_stop PROPERTIES FIXTURES_CLEANUP postgres LABELS pg TIMEOUT 120)

function(dsh_requires_postgres)
  set_property(TEST ${ARGN} APPEND PROPERTY FIXTURES_REQUIRED postgres)
  set_property(TEST ${ARGN} APPEND PROPERTY LABELS pg)
  set_property(TEST ${ARGN} APPEND PROPERTY ENVIRONMENT "${DSH_TEST_PG_ENV}")
endfunction()

# dsh_add_pg_variant(<test> [AS <name>] <add_test arguments after NAME>): registers <test>.pg (or
# <name>), the same test with the server's sessions in PostgreSQL (issue 17: the existing suites
# against both stores). It takes <test>'s TIMEOUT, LABELS, ENVIRONMENT and RUN_SERIAL (call it after
# those are set), adds the label pg-suites and DSH_ACP_TEST_STORE=pg, under which the test helpers
# (tests/tools/pg_store.py, tests/e2e/lib/pgvariant.mjs) give the test a fresh database of the
# cluster and run the server with `--store URL`.
function(dsh_add_pg_variant base)
  set(args ${ARGN})
  set(name ${base}.pg)
  list(GET args 0 first)
  if(first STREQUAL "AS")
    list(GET args 1 name)
    list(REMOVE_AT args 0 1)
  endif()
  add_test(NAME ${name} ${args})
  foreach(prop TIMEOUT LABELS ENVIRONMENT RUN_SERIAL)
    get_test_property(${base} ${prop} value)
    if(value)
      set_property(TEST ${name} PROPERTY ${prop} "${value}")
    endif()
  endforeach()
  set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT DSH_ACP_TEST_STORE=pg)
  set_property(TEST ${name} APPEND PROPERTY LABELS pg-suites)
  dsh_requires_postgres(${name})
endfunction()
