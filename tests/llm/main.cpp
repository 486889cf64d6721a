// Boost.Test entry point of llm_tests (one executable; suites are selected with --run_test).
#define BOOST_TEST_MODULE llm_tests
#include <boost/test/unit_test.hpp>
