#define BOOST_TEST_MODULE dsh_acp_unit
#include <boost/test/unit_test.hpp>
