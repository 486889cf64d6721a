# Every test's TIMEOUT is a guard against a hang, never a measurement (tests wait on events). A
# sanitizer or fuzzing build runs several times slower, and on a loaded 2-core machine a test that
# takes 30 s in a release build took over 120 s under ASan; its limits are multiplied by
# DSH_TEST_TIMEOUT_FACTOR (5 there, 1 otherwise; -D overrides).
if(NOT DEFINED DSH_TEST_TIMEOUT_FACTOR)
  if(DSH_FUZZ OR CMAKE_CXX_FLAGS MATCHES "-fsanitize")
    set(DSH_TEST_TIMEOUT_FACTOR 5)
  else()
    set(DSH_TEST_TIMEOUT_FACTOR 1)
  endif()
endif()

# Scales the TIMEOUT of every test the calling directory has defined so far; called at the end of
# each tests/ directory. (Boost.Test cases are registered after the build: dsh_discover_boost_tests
# scales theirs.)
function(dsh_scale_test_timeouts)
  if(DSH_TEST_TIMEOUT_FACTOR EQUAL 1)
    return()
  endif()
  get_property(names DIRECTORY PROPERTY TESTS)
  foreach(name IN LISTS names)
    get_test_property(${name} TIMEOUT limit)
    if(limit)
      math(EXPR limit "${limit} * ${DSH_TEST_TIMEOUT_FACTOR}")
      set_tests_properties(${name} PROPERTIES TIMEOUT ${limit})
    endif()
  endforeach()
endfunction()
