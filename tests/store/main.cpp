// Boost.Test entry point of store_tests (one executable; suites are selected with --run_test).
#define BOOST_TEST_MODULE store_tests
#include <boost/test/unit_test.hpp>
