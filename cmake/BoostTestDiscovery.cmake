# dsh_discover_boost_tests(<target> <prefix> [REQUIRES_POSTGRES] [TIMEOUT s] [LABELS l...] [CONCURRENCY name...])
#
# Registers one CTest test <prefix>.<name> per top-level entry (suite or free test case) of a
# Boost.Test executable, found after each build by running it with --list_content, so cases are
# never listed by hand. Entries named in CONCURRENCY also get the label "concurrency" (the
# ThreadSanitizer run selects them with `ctest -L concurrency`). REQUIRES_POSTGRES: every entry
# runs against the suite's PostgreSQL (cmake/Postgres.cmake: fixture postgres, label pg,
# DSH_ACP_TEST_PG in its environment).
function(dsh_discover_boost_tests target prefix)
  cmake_parse_arguments(PARSE_ARGV 2 arg "REQUIRES_POSTGRES" "TIMEOUT" "LABELS;CONCURRENCY")
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 120)
  endif()
  math(EXPR arg_TIMEOUT "${arg_TIMEOUT} * ${DSH_TEST_TIMEOUT_FACTOR}")  # cmake/TestTimeouts.cmake
  set(pg_env "")
  if(arg_REQUIRES_POSTGRES)
    if(NOT DSH_TEST_PG_ENV)
      message(FATAL_ERROR "dsh_discover_boost_tests(${target} REQUIRES_POSTGRES): include cmake/Postgres.cmake first")
    endif()
    set(pg_env ${DSH_TEST_PG_ENV})
  endif()
  set(list_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_tests.cmake)
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake)
  string(REPLACE ";" "," labels "${arg_LABELS}")
  string(REPLACE ";" "," concurrency "${arg_CONCURRENCY}")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D EXE=$<TARGET_FILE:${target}> -D PREFIX=${prefix} -D OUT=${list_file}
            -D TIMEOUT=${arg_TIMEOUT} -D LABELS=${labels} -D CONCURRENCY=${concurrency} -D PG_ENV=${pg_env}
            -P ${PROJECT_SOURCE_DIR}/cmake/boost_test_list.cmake
    BYPRODUCTS ${list_file}
    COMMENT "listing the Boost.Test cases of ${target}"
    VERBATIM)
  # Until the first build there is nothing to list; a placeholder test says so instead of passing.
  file(WRITE ${include_file}
       "if(EXISTS \"${list_file}\")\n  include(\"${list_file}\")\nelse()\n"
       "  add_test(${prefix}.NOT_BUILT ${prefix}.NOT_BUILT)\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()
