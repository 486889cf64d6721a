// The connection in-process (router, handlers, echo provider, a real store in a temporary
// directory) over the in-memory transport: the test is the ACP client, on the connection's thread.
#include "../common/temp_dir.hpp"
#include "engine/engine.hpp"
#include "handlers/store_source.hpp"
#include "llm/echo_provider.hpp"
#include "refs/service.hpp"
#include "server/connection.hpp"
#include "store/event_builders.hpp"
#include "store/session_store.hpp"
#include "store/store_set.hpp"
#include "support/config.hpp"
#include "transport/memory_transport.hpp"
#include "transport/outbox.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace acp;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// One server (connection + its collaborators) and one client, sharing an io_context.
struct Fixture {
  acp::test::TempDir home{"dsh-connection"};
  support::Config config;
  asio::io_context io{1};
  asio::thread_pool pool{2};
  std::unique_ptr<llm::Provider> provider;
  std::unique_ptr<engine::StoreHandle> store;
  std::unique_ptr<refs::SessionReferenceService> references;
  std::unique_ptr<transport::MemoryTransport> transport;
  std::unique_ptr<server::Connection> connection;
  bool finished = false;
  Clock::time_point finished_at;
  std::string buffer;
  std::vector<json::object> frames;
  std::map<std::int64_t, std::size_t> responses;  // request id -> index in frames
  std::int64_t next_id = 0;

  explicit Fixture(std::vector<std::string> args = {}, std::size_t pipe_capacity = 64 * 1024) {
    args.insert(args.end(), {"--provider", "echo"});
    config = support::load_config(args, {{"HOME", home.path()}, {"DSH_ACP_HOME", home.path()}}).config;
    provider = llm::make_echo_provider(io.get_executor(), 0ms);
    store::StoreOptions options;
    options.root = config.store;
    options.cache_dir = config.cache_dir;
    // The layout of a new root: DSH_ACP_STORE_GENERATION like the server (the config above is read
    // from a fixed environment).
    if (const char* g = std::getenv("DSH_ACP_STORE_GENERATION"); g && *g)
      options.default_generation = store::parse_generation(g).value_or(store::Generation::flat);
    store = std::make_unique<engine::StoreHandle>([options] { return std::make_unique<store::SessionStore>(options); });
    references = std::make_unique<refs::SessionReferenceService>(std::make_shared<handlers::StoreSessionSource>(*store),
                                                                 refs::Config{});
    transport = std::make_unique<transport::MemoryTransport>(io.get_executor(), pipe_capacity);
    connection = std::make_unique<server::Connection>(io.get_executor(), pool.get_executor(), *transport, config,
                                                      *provider, *store, *references,
                                                      engine::default_system_prompt());
  }
  ~Fixture() { pool.join(); }

  // Runs the connection and `client` together; returns when both are done, or fails after a minute:
  // a hang guard, far beyond what any case takes on a loaded machine (the waits below have no limits
  // of their own).
  void run(std::function<asio::awaitable<void>()> client) {
    bool client_done = false;
    std::exception_ptr failure;
    asio::co_spawn(io, connection->run(), [&](std::exception_ptr e) {
      if (e) failure = e;
      finished = true;
      finished_at = Clock::now();
      if (client_done) io.stop();
    });
    asio::co_spawn(io, client(), [&](std::exception_ptr e) {
      if (e) failure = e;
      client_done = true;
      if (finished) io.stop();
    });
    io.run_for(60s);
    BOOST_REQUIRE_MESSAGE(client_done, "the client did not finish");
    BOOST_REQUIRE_MESSAGE(finished, "the connection did not finish");
    if (failure) std::rethrow_exception(failure);
  }

  std::string request_text(const std::string& method, json::object params) {
    json::object f{{"jsonrpc", "2.0"}, {"id", ++next_id}, {"method", method}, {"params", std::move(params)}};
    return json::serialize(f) + "\n";
  }
  std::int64_t send(const std::string& method, json::object params) {
    transport->client_write(request_text(method, std::move(params)));
    return next_id;
  }

  void take_output() {
    buffer += transport->client_read();
    std::size_t start = 0;
    for (std::size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
      frames.push_back(json::parse(std::string_view(buffer).substr(start, nl - start)).as_object());
      const json::object& f = frames.back();
      if (!f.contains("method") && f.contains("id") && f.at("id").is_int64())
        responses.emplace(f.at("id").as_int64(), frames.size() - 1);
    }
    buffer.erase(0, start);
  }
  const json::object* response(std::int64_t id) const {
    auto it = responses.find(id);
    return it == responses.end() ? nullptr : &frames[it->second];
  }
  std::size_t response_index(std::int64_t id) const { return responses.at(id); }
  // Reads output until the response to `id` has come.
  asio::awaitable<json::object> wait_response(std::int64_t id) {
    take_output();
    while (!response(id)) {
      co_await transport->client_wait_output(24h);
      take_output();
    }
    co_return *response(id);
  }
  // Not a coroutine itself: GCC 12 rejects string literals bound to coroutine parameters.
  asio::awaitable<json::object> call(std::string method, json::object params) {
    return call_impl(std::move(method), std::move(params));
  }
  asio::awaitable<json::object> call_impl(std::string method, json::object params) {
    std::int64_t id = send(method, std::move(params));
    json::object r = co_await wait_response(id);
    if (r.contains("error")) throw std::runtime_error(method + " failed: " + json::serialize(r.at("error")));
    co_return r;
  }
  asio::awaitable<std::string> new_session() {
    // Braced lists are built outside co_await expressions (GCC 12: "array used as initializer").
    json::object params{{"cwd", "/tmp"}, {"mcpServers", json::array()}};
    json::object r = co_await call("session/new", std::move(params));
    co_return std::string(r.at("result").at("sessionId").as_string());
  }
  asio::awaitable<void> initialize() {
    json::object params{{"protocolVersion", 1}, {"clientCapabilities", json::object()}};
    co_await call("initialize", std::move(params));
  }
  // Waits for a condition on server state, looking every few milliseconds; for tests only: the
  // server never polls. (A condition that never holds ends the test at run()'s hang guard.)
  asio::awaitable<bool> eventually(std::function<bool()> pred) {
    asio::steady_timer timer(io);
    while (!pred()) {
      timer.expires_after(5ms);
      co_await timer.async_wait(asio::use_awaitable);
    }
    co_return true;
  }
  asio::awaitable<void> wait_finished() {
    BOOST_REQUIRE(co_await eventually([this] { return finished; }));
  }

  // Whether the session's log has a turn/start (the prompt got past its set-up).
  bool turn_started(const std::string& id) {
    try {
      for (const auto& e : store->get().read_log(id).events)
        if (e.at("type") == "turn/start") return true;
    } catch (const std::exception&) {
    }
    return false;
  }

  // Reason of the last turn/end of a session's log.
  std::string last_turn_end(const std::string& id) {
    store::LogSnapshot log = store->get().read_log(id);
    for (auto it = log.events.rbegin(); it != log.events.rend(); ++it) {
      if (it->at("type") == "turn/end") return std::string(it->at("data").at("reason").at("kind").as_string());
    }
    return "(none)";
  }
  std::size_t updates_of(const std::string& session) const {
    std::size_t n = 0;
    for (const auto& f : frames)
      if (f.contains("method") && f.at("params").at("sessionId") == session.c_str()) ++n;
    return n;
  }
};

json::object prompt_params(const std::string& session, const std::string& text) {
  return {{"sessionId", session}, {"prompt", json::array{json::object{{"type", "text"}, {"text", text}}}}};
}

std::string agent_text(const std::vector<json::object>& frames, const std::string& session) {
  std::string text;
  for (const auto& f : frames) {
    if (!f.contains("method") || f.at("params").at("sessionId") != session.c_str()) continue;
    const auto& u = f.at("params").at("update").as_object();
    if (u.at("sessionUpdate") == "agent_message_chunk") text += u.at("content").at("text").as_string();
  }
  return text;
}

} // namespace

BOOST_AUTO_TEST_SUITE(connection)

BOOST_AUTO_TEST_CASE(initialize_new_and_prompt_over_the_memory_transport) {
  Fixture f;
  std::string session;
  f.run([&]() -> asio::awaitable<void> {
    json::object params{{"protocolVersion", 1}, {"clientCapabilities", json::object()}};
    json::object init = co_await f.call("initialize", std::move(params));
    BOOST_TEST(init.at("result").at("protocolVersion") == 1);
    session = co_await f.new_session();
    std::int64_t id = f.send("session/prompt", prompt_params(session, "hello there"));
    json::object r = co_await f.wait_response(id);
    BOOST_TEST(r.at("result").at("stopReason") == "end_turn");
    // Every update of the prompt precedes its answer.
    std::size_t answer_at = 0;
    for (std::size_t i = 0; i < f.frames.size(); ++i)
      if (&f.frames[i] == f.response(id)) answer_at = i;
    BOOST_TEST(f.updates_of(session) > 0u);
    for (std::size_t i = answer_at; i < f.frames.size(); ++i) BOOST_TEST(!f.frames[i].contains("method"));
    BOOST_TEST(agent_text(f.frames, session).find("last user message: hello there") != std::string::npos);
    f.transport->client_close_input();
    co_await f.wait_finished();
  });
  BOOST_TEST(f.last_turn_end(session) == "completed");
}

BOOST_AUTO_TEST_CASE(a_full_outbox_stops_reading_and_bounds_queued_bytes) {
  constexpr std::size_t kLimit = 64 * 1024;
  Fixture f({"--max-outbox-bytes", std::to_string(kLimit)}, 4096);
  std::string session;
  f.run([&]() -> asio::awaitable<void> {
    co_await f.initialize();
    session = co_await f.new_session();
    // One prompt that sleeps, then 10,000 pipelined prompts in the same session: 8 wait in line
    // behind it, the others are answered -32010 at once. The client reads nothing meanwhile.
    std::string input = f.request_text("session/prompt", prompt_params(session, "[[echo:sleep=60000]] hold"));
    std::int64_t sleeper = f.next_id;
    for (int i = 0; i < 10000; ++i) input += f.request_text("session/prompt", prompt_params(session, "x"));
    const std::size_t before = f.transport->input_consumed();
    f.transport->client_write(input);
    const auto& outbox = f.connection->outbox();
    BOOST_REQUIRE(co_await f.eventually([&] { return outbox.queued_bytes() + 1024 >= kLimit; }));
    // A few more requests may be read until enough answers wait for room; then the reader waits for
    // room. Nothing can make room while the client reads nothing (the pipe is full, so the writer
    // waits too): from here on reading has stopped, however long the test would look.
    BOOST_REQUIRE(co_await f.eventually([&] { return outbox.reader_waiting(); }));
    const std::size_t consumed = f.transport->input_consumed();
    BOOST_TEST(consumed < before + input.size());
    BOOST_TEST(outbox.peak_queued_bytes() <= kLimit + 1024);  // the bound plus at most one frame
    // Reading everything, every refused request is answered and the bound still holds.
    constexpr std::size_t kQueued = engine::kMaxQueuedPrompts;
    BOOST_TEST(f.transport->input_consumed() == consumed);  // nothing was read while the client read nothing
    while (f.responses.size() < 10002 - kQueued) {  // initialize, session/new and the refused prompts
      co_await f.transport->client_wait_output(24h);
      f.take_output();
    }
    for (const auto& [id, at] : f.responses) {
      BOOST_TEST((id <= 2 || f.frames[at].at("error").at("code") == -32010));
      BOOST_TEST((id <= 2 || id > sleeper + std::int64_t(kQueued)), "the first 8 behind the sleeper wait in line");
    }
    BOOST_TEST(f.transport->input_consumed() == before + input.size());
    BOOST_TEST(outbox.peak_queued_bytes() <= kLimit + 1024);
    BOOST_TEST(!f.response(sleeper));
    BOOST_REQUIRE(co_await f.eventually([&] { return f.turn_started(session); }));
    f.transport->client_close_input();
    json::object r = co_await f.wait_response(sleeper);
    BOOST_TEST(r.at("result").at("stopReason") == "cancelled");
    for (std::int64_t id = sleeper + 1; id <= sleeper + std::int64_t(kQueued); ++id) {
      json::object q = co_await f.wait_response(id);
      BOOST_TEST(q.at("result").at("stopReason") == "cancelled");
    }
    co_await f.wait_finished();
  });
  BOOST_TEST(f.last_turn_end(session) == "aborted");
}

// stdin EOF, stop() (the signals) and a dead reader, each with a client that never reads again.
void shutdown_with_a_stalled_client(const std::string& how) {
  Fixture f({"--max-outbox-bytes", "65536"}, 4096);
  std::string session;
  Clock::time_point began;
  f.run([&]() -> asio::awaitable<void> {
    co_await f.initialize();
    session = co_await f.new_session();
    std::string input = f.request_text("session/prompt", prompt_params(session, "[[echo:sleep=60000]] hold"));
    for (int i = 0; i < 2000; ++i) input += f.request_text("session/prompt", prompt_params(session, "x"));
    f.transport->client_write(input);
    BOOST_REQUIRE(co_await f.eventually([&] { return f.connection->outbox().queued_bytes() + 1024 >= 65536; }));
    BOOST_REQUIRE(co_await f.eventually([&] { return f.turn_started(session); }));
    began = Clock::now();
    if (how == "eof") f.transport->client_close_input();
    if (how == "stop") f.connection->stop();
    if (how == "epipe") f.transport->client_close_output();
    co_await f.wait_finished();
  });
  // The promise is 2 s, reported rather than asserted (a loaded machine is slow, not wrong). The
  // sleeper would hold its turn for a minute: "aborted" shows the shutdown ended it.
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(f.finished_at - began);
  BOOST_TEST_MESSAGE(how << ": shutdown took " << took.count() << " ms");
  BOOST_TEST(f.last_turn_end(session) == "aborted");
}

BOOST_AUTO_TEST_CASE(shutdown_on_eof_with_a_stalled_client_finishes) { shutdown_with_a_stalled_client("eof"); }
BOOST_AUTO_TEST_CASE(shutdown_on_stop_with_a_stalled_client_finishes) { shutdown_with_a_stalled_client("stop"); }
BOOST_AUTO_TEST_CASE(a_dead_reader_cancels_running_turns) { shutdown_with_a_stalled_client("epipe"); }

BOOST_AUTO_TEST_CASE(a_replay_interleaves_with_another_session) {
  Fixture f({}, 4096);
  // A stored session with ~10 MB of replay frames (beyond the 8 MiB the replay holds back).
  const std::string bulk_id = "bulk-session";
  {
    store::SessionHeader header;
    header.id = bulk_id;
    header.cwd = "/tmp";
    header.createdAt = 1000;
    store::SessionWriter w = f.store->get().create(header);
    const std::string piece(150, 'z');
    for (std::int64_t turn = 1; turn <= 100; ++turn) {
      std::vector<store::NewEvent> batch{store::events::turn_start(turn), store::events::user_message("q"),
                                         store::events::step_start(turn, 1)};
      for (int c = 0; c < 400; ++c) batch.push_back(store::events::text_delta(turn, 1, 0, piece));
      json::object block{{"type", "text"}, {"text", "done"}};
      batch.push_back(store::events::assistant_message(turn, 1, json::array{block}, "echo", "echo"));
      batch.push_back(store::events::step_end(turn, 1));
      batch.push_back(store::events::turn_end(turn, store::events::reason("completed")));
      w.append(std::move(batch));
    }
    w.sync();
  }
  std::int64_t load_id = 0, prompt_id = 0;
  std::string other;
  f.run([&]() -> asio::awaitable<void> {
    co_await f.initialize();
    other = co_await f.new_session();
    f.take_output();
    std::size_t settled_frames = f.frames.size();
    load_id = f.send("session/load", {{"sessionId", bulk_id}, {"cwd", "/tmp"}, {"mcpServers", json::array()}});
    // The client does not read until the replay has filled its share of the outbox.
    const auto& outbox = f.connection->outbox();
    BOOST_REQUIRE(co_await f.eventually([&] { return outbox.queued_bytes() >= 200 * 1024; }));
    prompt_id = f.send("session/prompt", prompt_params(other, "hello"));
    // Still not reading: once the other prompt's turn is over, all its frames are queued.
    BOOST_REQUIRE(co_await f.eventually([&] {
      try {
        return f.last_turn_end(other) == "completed";
      } catch (const std::exception&) {
        return false;
      }
    }));
    co_await f.wait_response(load_id);
    // The other prompt's answer follows its turn's end in the log, but nothing orders it before the
    // load's answer (another session): wait for it rather than expect it read already.
    co_await f.wait_response(prompt_id);
    // Bytes of the replay written before the other session's first frame.
    std::size_t bulk_bytes = 0, other_at = 0, load_at = f.response_index(load_id);
    for (std::size_t i = settled_frames; i < f.frames.size(); ++i) {
      const auto& fr = f.frames[i];
      bool bulk = fr.contains("method") && fr.at("params").at("sessionId") == bulk_id.c_str();
      if (!bulk && !other_at) other_at = i;
      if (bulk && !other_at) bulk_bytes += json::serialize(fr).size() + 1;
    }
    BOOST_TEST_MESSAGE("replay bytes ahead of the other session: " << bulk_bytes);
    BOOST_TEST(bulk_bytes <= 400u * 1024);  // its 256 KiB share, the write in progress and the pipe
    BOOST_TEST(f.updates_of(bulk_id) >= 40000u);
    // The load's answer comes after its whole history, and after its commands too.
    std::size_t late = 0;
    for (std::size_t i = load_at + 1; i < f.frames.size(); ++i) {
      const auto& fr = f.frames[i];
      if (fr.contains("method") && fr.at("params").at("sessionId") == bulk_id.c_str()) {
        if (!late++) BOOST_TEST_MESSAGE("first update after the load's answer: " << json::serialize(f.frames[i]).substr(0, 300));
      }
    }
    BOOST_TEST(late == 0u);
    BOOST_TEST(f.frames[other_at].at("params").at("sessionId") == other.c_str());
    f.transport->client_close_input();
    co_await f.wait_finished();
  });
}

// Each session bounds its own queue; the connection bounds the prompt text all its sessions hold
// together (--max-held-prompt-bytes), running prompts included, so more sessions cannot make the
// server hold more. A refused prompt is answered -32010 and takes nothing; one that fits still runs.
BOOST_AUTO_TEST_CASE(prompts_across_sessions_hold_a_bounded_amount_of_text) {
  constexpr std::size_t kLimit = 64 * 1024, kBig = 50 * 1024, kRefused = 20 * 1024;
  static_assert(kBig < kLimit && kBig + kRefused > kLimit);
  Fixture f({"--max-held-prompt-bytes", std::to_string(kLimit)});
  f.run([&]() -> asio::awaitable<void> {
    co_await f.initialize();
    const std::string a = co_await f.new_session(), b = co_await f.new_session();
    const std::int64_t held = f.send("session/prompt", prompt_params(a, "[[echo:sleep=60000]] " + std::string(kBig, 'a')));
    BOOST_REQUIRE(co_await f.eventually([&] { return f.turn_started(a); }));  // queued: its text is held
    json::object refused = co_await f.wait_response(f.send("session/prompt", prompt_params(b, std::string(kRefused, 'b'))));
    BOOST_TEST(refused.at("error").at("code") == -32010);
    const json::object& data = refused.at("error").at("data").as_object();
    BOOST_TEST(data.at("reason") == "busy");
    BOOST_TEST(data.at("sessionId").as_string() == b);
    BOOST_TEST(data.at("heldBytes").to_number<std::uint64_t>() >= kBig);
    BOOST_TEST(data.at("maxHeldBytes").to_number<std::uint64_t>() == kLimit);
    // What fits in the rest runs, in the other session, while the first still holds its text.
    json::object fits = co_await f.wait_response(f.send("session/prompt", prompt_params(b, "small")));
    BOOST_TEST(fits.at("result").at("stopReason") == "end_turn");
    BOOST_TEST(!f.response(held));
    f.transport->client_write("{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"" + a + "\"}}\n");
    json::object cancelled = co_await f.wait_response(held);
    BOOST_TEST(cancelled.at("result").at("stopReason") == "cancelled");
    // Its text given back, the refused prompt now fits.
    json::object later = co_await f.wait_response(f.send("session/prompt", prompt_params(b, std::string(kRefused, 'b'))));
    BOOST_TEST(later.at("result").at("stopReason") == "end_turn");
    f.transport->client_close_input();
    co_await f.wait_finished();
  });
}

BOOST_AUTO_TEST_SUITE_END()
