// TLS: certificates made at test time with the openssl CLI; chain and host-name verification.
#include "../common/temp_dir.hpp"
#include "provider_harness.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace acp::llm;
using namespace acp::llm::testing;
namespace net = boost::asio;
namespace fs = std::filesystem;

namespace {

/// A throw-away CA with two server certificates: one for 127.0.0.1/localhost, one for `otherhost` only.
struct Pki {
  acp::test::TempDir tmp{"dsh-llm-tls"};
  fs::path dir{tmp.path()};
  std::string ca, good_cert, good_key, other_cert, other_key;

  Pki() {
    auto p = [&](const char* name) { return (dir / name).string(); };
    ca = p("ca.pem");
    good_cert = p("good.pem");
    good_key = p("good.key");
    other_cert = p("other.pem");
    other_key = p("other.key");
    std::string openssl = DSH_OPENSSL_EXECUTABLE;
    auto sh = [&](const std::string& cmd) {
      std::string full = cmd + " >" + p("openssl.log") + " 2>&1";
      if (std::system(full.c_str()) != 0)
        throw std::runtime_error("openssl failed: " + cmd);
    };
    const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    sh(openssl + " req -x509" + ec + " -keyout " + p("ca.key") + " -out " + ca +
       " -days 2 -subj /CN=dsh-acp-test-CA -addext basicConstraints=critical,CA:TRUE"
       " -addext keyUsage=critical,keyCertSign,cRLSign");
    auto leaf = [&](const std::string& cert, const std::string& key, const std::string& cn, const std::string& san) {
      std::ofstream(p("ext.cnf")) << "subjectAltName=" << san
                                  << "\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n";
      sh(openssl + " req" + ec + " -keyout " + key + " -out " + p("leaf.csr") + " -subj /CN=" + cn);
      sh(openssl + " x509 -req -in " + p("leaf.csr") + " -CA " + ca + " -CAkey " + p("ca.key") +
         " -CAcreateserial -days 2 -out " + cert + " -extfile " + p("ext.cnf"));
    };
    leaf(good_cert, good_key, "localhost", "DNS:localhost,IP:127.0.0.1");
    leaf(other_cert, other_key, "otherhost", "DNS:otherhost");
  }
};

Pki& pki() {
  static Pki instance;  // made once per process, on first use (the other suites need no openssl)
  return instance;
}

Script answer(std::string text) {
  return [text](ServerConn& c) -> net::awaitable<void> {
    co_await c.start_sse();
    co_await c.chunk(sse_chunk_event("{\"content\":\"" + text + "\"}", "stop") + "data: [DONE]\n\n");
    co_await c.end_chunks();
  };
}

struct Fixture {
  net::io_context ioc;
};

} // namespace

BOOST_AUTO_TEST_SUITE(provider_tls)

BOOST_FIXTURE_TEST_CASE(rejected_without_the_test_ca, Fixture) {
  ScriptedServer server({answer("no"), answer("no")}, TlsFiles{pki().good_cert, pki().good_key});
  auto cfg = test_config(server);
  auto provider = make_openai_provider(cfg, ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.error.has_value());
  BOOST_TEST(r.error->code() == "PROVIDER_NETWORK");
  BOOST_TEST(std::string(r.error->what()).find("certificate") != std::string::npos);
  BOOST_TEST(server.requests().empty());
  BOOST_TEST(server.connections() == 1);  // a certificate failure is not retried
}

BOOST_FIXTURE_TEST_CASE(accepted_with_ca_file_by_ip_and_by_name, Fixture) {
  ScriptedServer server({answer("secure"), answer("by name")}, TlsFiles{pki().good_cert, pki().good_key});
  auto cfg = test_config(server);
  cfg.ca_file = pki().ca;
  cfg.api_key = "sk-secret";
  auto provider = make_openai_provider(cfg, ioc.get_executor());
  auto r = run_stream(*provider, ioc, simple_request());
  BOOST_REQUIRE(r.completion.has_value());
  BOOST_TEST(r.text() == "secure");

  cfg.base_url = server.base_url("localhost");
  auto by_name = make_openai_provider(cfg, ioc.get_executor());
  auto r2 = run_stream(*by_name, ioc, simple_request());
  BOOST_REQUIRE(r2.completion.has_value());
  BOOST_TEST(r2.text() == "by name");
  auto reqs = server.requests();
  BOOST_REQUIRE(reqs.size() == 2u);
  BOOST_TEST(reqs[0].headers["authorization"] == "Bearer sk-secret");
}

BOOST_FIXTURE_TEST_CASE(rejected_when_the_name_does_not_match, Fixture) {
  // Signed by the trusted CA, but for otherhost only: both the IP and the localhost name must fail.
  ScriptedServer server({answer("no"), answer("no")}, TlsFiles{pki().other_cert, pki().other_key});
  auto cfg = test_config(server);
  cfg.ca_file = pki().ca;
  for (const char* host : {"127.0.0.1", "localhost"}) {
    BOOST_TEST_CONTEXT("host " << host) {
      cfg.base_url = server.base_url(host);
      auto provider = make_openai_provider(cfg, ioc.get_executor());
      auto r = run_stream(*provider, ioc, simple_request());
      BOOST_REQUIRE(r.error.has_value());
      BOOST_TEST(r.error->code() == "PROVIDER_NETWORK");
      BOOST_TEST(std::string(r.error->what()).find("mismatch") != std::string::npos, r.error->what());
    }
  }
  BOOST_TEST(server.requests().empty());
}

BOOST_AUTO_TEST_SUITE_END()
