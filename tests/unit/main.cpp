#define BOOST_TEST_MODULE dsh_acp_unit
#include <boost/test/unit_test.hpp>

#include <csignal>

namespace {

// As in the server (src/server/main.cpp): a peer that has gone away (a client, an MCP server, a
// command) is an error from write(), not a signal that ends the process.
struct IgnoreSigpipe {
  IgnoreSigpipe() { std::signal(SIGPIPE, SIG_IGN); }
};
BOOST_TEST_GLOBAL_FIXTURE(IgnoreSigpipe);

} // namespace
