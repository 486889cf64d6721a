// Boost.Test entry point of pg_tests (one executable; suites are selected with --run_test).
#define BOOST_TEST_MODULE pg_tests
#include <boost/test/unit_test.hpp>
