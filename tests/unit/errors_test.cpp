// The one mapping from typed errors to JSON-RPC errors (handlers/errors.cpp,
// docs/decisions.md#errors-on-the-wire): one case per kind, and the engine's part — a provider failure leaves
// prompt() as ProviderFailed naming the provider, an invalid candidate limit as a reference error naming its
// parameter.
#include "engine_fixture.hpp"
#include "handlers/router.hpp"
#include "protocol/jsonrpc.hpp"
#include "refs/errors.hpp"
#include "store/errors.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace acp;
using namespace engine_fixture;
namespace json = boost::json;

namespace {

template <class E> jsonrpc::RpcError mapped(const E& error) {
  return handlers::to_rpc_error(std::make_exception_ptr(error));
}

std::string data_of(const jsonrpc::RpcError& e) { return e.data() ? json::serialize(*e.data()) : "none"; }

// A model that fails every request with one provider error.
class FailingProvider final : public llm::Provider {
public:
  explicit FailingProvider(llm::ProviderError error) : error_(std::move(error)) {}
  std::string name() const override { return "deepseek"; }
  asio::awaitable<llm::Completion> stream(const llm::Request&, llm::DeltaSink) override {
    throw error_;
    co_return llm::Completion{};
  }

private:
  llm::ProviderError error_;
};

} // namespace

BOOST_AUTO_TEST_SUITE(error_mapping)

BOOST_AUTO_TEST_CASE(session_and_input_errors) {
  auto e = mapped(engine::SessionNotFound("s1"));
  BOOST_TEST(e.code() == jsonrpc::code::resource_not_found);
  BOOST_TEST(data_of(e) == R"({"sessionId":"s1"})");
  e = mapped(engine::InvalidInput("/cwd", "must be an absolute path"));
  BOOST_TEST(e.code() == jsonrpc::code::invalid_params);
  BOOST_TEST(data_of(e) == R"({"path":"/cwd"})");
  BOOST_TEST(e.message().find("must be an absolute path") != std::string::npos);
  e = mapped(jsonrpc::invalid_params("/x", "bad"));  // already a wire error: unchanged
  BOOST_TEST(data_of(e) == R"({"path":"/x"})");
}

// 401/403 name the provider, never carry its message (docs/decisions.md#errors-on-the-wire: data is
// {"provider": p}).
BOOST_AUTO_TEST_CASE(an_authentication_failure_names_the_provider) {
  auto e = mapped(engine::ProviderFailed("deepseek", llm::ProviderError("AUTH_REQUIRED", "Invalid API key (sk-...)", 401)));
  BOOST_TEST(e.code() == jsonrpc::code::auth_required);
  BOOST_TEST(e.message() == "Authentication required");
  BOOST_TEST(data_of(e) == R"({"provider":"deepseek"})");
}

BOOST_AUTO_TEST_CASE(a_provider_failure_keeps_its_message_code_and_status) {
  auto e = mapped(engine::ProviderFailed("openai", llm::ProviderError("PROVIDER_RATE_LIMITED", "slow down", 429)));
  BOOST_TEST(e.code() == jsonrpc::code::internal_error);
  BOOST_TEST(e.message() == "slow down");
  BOOST_TEST(data_of(e) == R"({"code":"PROVIDER_RATE_LIMITED","status":429})");
  e = mapped(engine::ProviderFailed("openai", llm::ProviderError("PROVIDER_NETWORK", "connection refused")));
  BOOST_TEST(data_of(e) == R"({"code":"PROVIDER_NETWORK"})");  // no status without a response
}

BOOST_AUTO_TEST_CASE(reference_errors_name_their_parameter_when_they_have_one) {
  auto e = mapped(refs::SessionReferenceError(refs::ErrorCode::too_many, "too many"));
  BOOST_TEST(e.code() == jsonrpc::code::invalid_params);
  BOOST_TEST(e.message() == "Invalid params: too many");
  BOOST_TEST(data_of(e) == R"({"code":"SESSION_REFERENCE_TOO_MANY"})");
  e = mapped(refs::SessionReferenceError(refs::ErrorCode::invalid_reference, "bad limit", "limit"));
  BOOST_TEST(data_of(e) == R"({"code":"SESSION_REFERENCE_INVALID_REFERENCE","path":"/limit"})");
}

BOOST_AUTO_TEST_CASE(store_errors) {
  auto e = mapped(store::StoreCorrupt("a.jsonl", 3, "bad line"));
  BOOST_TEST(e.code() == jsonrpc::code::internal_error);
  BOOST_TEST(e.message() == "Session log unreadable: a.jsonl:3: bad line");
  BOOST_TEST(data_of(e) == R"({"code":"SESSION_LOG_CORRUPT"})");
  e = mapped(store::FoldError("replace start 4 is not on the surface"));
  BOOST_TEST(data_of(e) == R"({"code":"SESSION_LOG_CORRUPT"})");
  e = mapped(store::SessionBusy("s1"));
  BOOST_TEST(e.message().starts_with("Session busy"));
  BOOST_TEST(data_of(e) == R"({"code":"SESSION_BUSY"})");
  e = mapped(store::SessionReadOnly("s1", "discovered root"));
  BOOST_TEST(e.code() == jsonrpc::code::invalid_params);
  BOOST_TEST(data_of(e) == R"({"path":"/sessionId"})");
  e = mapped(store::InvalidSessionId("empty id"));
  BOOST_TEST(data_of(e) == R"({"path":"/sessionId"})");
}

// A log that vanished under a request (another process deleted it) is the session not being
// there, exactly as the engine says it: never an internal error.
BOOST_AUTO_TEST_CASE(a_session_the_store_lacks_is_not_found) {
  auto from_store = mapped(store::SessionNotFound("s1"));
  auto from_engine = mapped(engine::SessionNotFound("s1"));
  BOOST_TEST(from_store.code() == jsonrpc::code::resource_not_found);
  BOOST_TEST(from_store.message() == from_engine.message());
  BOOST_TEST(data_of(from_store) == data_of(from_engine));
}

BOOST_AUTO_TEST_CASE(a_taken_session_id_is_named) {
  auto e = mapped(store::SessionExists("s1"));
  BOOST_TEST(e.code() == jsonrpc::code::internal_error);
  BOOST_TEST(e.message() == R"(Session exists: session "s1" already has a log)");
  BOOST_TEST(data_of(e) == R"({"code":"SESSION_EXISTS","sessionId":"s1"})");
}

BOOST_AUTO_TEST_CASE(a_refused_batch_says_why) {
  auto e = mapped(store::InvalidBatch("batch seq 4 does not continue the log; expected 3"));
  BOOST_TEST(e.code() == jsonrpc::code::internal_error);
  BOOST_TEST(e.message() == "Session log write refused: batch seq 4 does not continue the log; expected 3");
  BOOST_TEST(data_of(e) == R"({"code":"SESSION_WRITE_REFUSED"})");
  e = mapped(store::InvalidLogText("s.jsonl: line 2 of the batch is not valid UTF-8 (byte 7)"));
  BOOST_TEST(e.message() == "Session log write refused: s.jsonl: line 2 of the batch is not valid UTF-8 (byte 7)");
  BOOST_TEST(data_of(e) == R"({"code":"SESSION_WRITE_REFUSED"})");
}

// The store's remaining types are internal on purpose: a store that cannot serve at all (both
// encodings in one root, an I/O failure), or sharing asked of files, which the engine answers itself.
BOOST_AUTO_TEST_CASE(a_store_that_cannot_serve_is_an_internal_error) {
  for (const auto& e : {mapped(store::EncodingMismatch("root holds both encodings")),
                        mapped(store::SharingUnsupported("a file root is one person's")),
                        mapped(store::StoreError("write: No space left on device"))}) {
    BOOST_TEST(e.code() == jsonrpc::code::internal_error);
    BOOST_TEST(e.message() == "Internal error");
  }
  BOOST_TEST(data_of(mapped(store::IdTooLong("id too long"))) == R"({"path":"/sessionId"})");
}

BOOST_AUTO_TEST_CASE(anything_else_is_an_internal_error_with_details) {
  auto e = mapped(std::runtime_error("boom"));
  BOOST_TEST(e.code() == jsonrpc::code::internal_error);
  BOOST_TEST(e.message() == "Internal error");
  BOOST_TEST(data_of(e) == R"({"details":"boom"})");
}

// Through the engine: the error the prompt handler lets go is the one the mapping names.
BOOST_FIXTURE_TEST_CASE(a_provider_refusing_the_key_is_named_by_the_engine, Fixture) {
  FailingProvider model(llm::ProviderError("AUTH_REQUIRED", "Authentication Fails (no such user)", 401));
  Process a(root, config, model, io, pool, generation);
  auto session = run(a.engine.create_session("/w", {}));
  Recorder r;
  auto prompt = [&]() -> asio::awaitable<void> {
    auto running = a.engine.prompt(session->id, engine::PromptInput{"hi", {}}, r);
    co_await std::move(running);
  };
  try {
    run(prompt());
    BOOST_FAIL("the prompt succeeded");
  } catch (const engine::ProviderFailed& e) {
    BOOST_TEST(e.provider() == "deepseek");
    BOOST_TEST(e.code() == "AUTH_REQUIRED");
    BOOST_TEST(data_of(handlers::to_rpc_error(std::current_exception())) == R"({"provider":"deepseek"})");
  }
  // The log keeps the provider's own message.
  const auto log = events(a, session->id);
  const auto& reason = last_of(log, "turn/end").at("data").at("reason");
  BOOST_TEST(json::serialize(reason).find("Authentication Fails (no such user)") != std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(an_invalid_candidate_limit_is_named_by_its_parameter, Fixture) {
  auto a = process();
  auto session = run(a->engine.create_session("/w", {}));
  auto list = [&]() -> asio::awaitable<void> {
    const std::optional<json::value> limit = json::value(-1);
    co_await a->engine.candidates(*session, "", limit, false);
  };
  try {
    run(list());
    BOOST_FAIL("a negative limit was accepted");
  } catch (const refs::SessionReferenceError&) {
    auto e = handlers::to_rpc_error(std::current_exception());
    BOOST_TEST(e.code() == jsonrpc::code::invalid_params);
    BOOST_TEST(data_of(e) == R"({"code":"SESSION_REFERENCE_INVALID_REFERENCE","path":"/limit"})");
  }
}

BOOST_AUTO_TEST_SUITE_END()
