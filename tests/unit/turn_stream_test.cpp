// A turn's memory follows what it has not written yet, not its whole answer (issue 18): chunk
// batches are bounded in events and bytes however fast the model streams, the records of written
// chunks are not kept (the conversation still counts them), and the model waits for the client
// (TurnObserver::room) before producing more.
#include "engine_fixture.hpp"
#include "engine/turn_log.hpp"
#include "llm/echo_provider.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>

using namespace acp;
using namespace engine_fixture;
namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// Streams `count` deltas, awaiting the sink's room() before each as real providers do.
class LongProvider final : public llm::Provider {
public:
  explicit LongProvider(std::size_t count) : count_(count) {}
  std::string name() const override { return "fake"; }
  asio::awaitable<llm::Completion> stream(const llm::Request& request, llm::DeltaSink sink) override {
    requests.push_back(request);
    for (std::size_t i = 0; i < count_; ++i) {
      co_await sink.room();
      sink(llm::Delta{i % 1000 == 999 ? llm::DeltaKind::reasoning : llm::DeltaKind::text, "w" + std::to_string(i) + " "});
    }
    co_return llm::Completion{llm::StopKind::end_turn, std::nullopt, "fake", request.model};
  }
  std::vector<llm::Request> requests;

private:
  std::size_t count_;
};

// An observer whose client is slow: each room() yields a few times before it returns, and no
// delta may arrive meanwhile.
struct SlowClient final : engine::TurnObserver {
  void references(std::int64_t, const json::object&) override {}
  void title(const std::string&) override {}
  void delta(const llm::Delta& d) override {
    if (in_room) ++deltas_while_waiting;
    ++deltas;
    text_bytes += d.text.size();
  }
  asio::awaitable<void> room() override {
    ++room_calls;
    in_room = true;
    auto ex = co_await asio::this_coro::executor;
    for (int i = 0; i < 3; ++i) co_await asio::post(ex, asio::use_awaitable);
    in_room = false;
  }
  bool in_room = false;
  std::size_t deltas = 0, deltas_while_waiting = 0, room_calls = 0, text_bytes = 0;
};

} // namespace

BOOST_AUTO_TEST_SUITE(turn_stream)

// 100,000 small deltas arriving at once (a fast model, the echo model): the pending batch never
// holds more than kChunkBatchEvents chunks, where it used to hold everything of 100 ms.
BOOST_AUTO_TEST_CASE(chunk_batches_stay_bounded_however_fast_the_model_streams) {
  engine::ChunkBuffer buffer(1, 1);
  std::size_t most = 0, taken = 0, batches = 0;
  for (int i = 0; i < 100000; ++i) {
    const bool due = buffer.add({i % 500 == 499 ? llm::DeltaKind::reasoning : llm::DeltaKind::text, "word "});
    most = std::max(most, buffer.pending_events());
    if (due) {
      taken += buffer.take().size();
      ++batches;
    }
  }
  // (A delta that opens a block brings the previous block's end and its start along.)
  BOOST_TEST(most <= engine::kChunkBatchEvents + 2);
  BOOST_TEST(batches >= 100000 / engine::kChunkBatchEvents);
  BOOST_TEST(buffer.pending_events() < engine::kChunkBatchEvents);
  taken += buffer.take().size();
  // Every delta, plus a block-start per block and a block-end per closed block: nothing is lost.
  BOOST_TEST(taken == 100000u + 400u + 399u);
  BOOST_TEST(buffer.pending_events() == 0u);
  BOOST_TEST(buffer.pending_bytes() == 0u);
}

// Big deltas: a batch is due once it holds kChunkBatchBytes of text, whatever its event count.
BOOST_AUTO_TEST_CASE(chunk_batches_stay_bounded_in_bytes) {
  engine::ChunkBuffer buffer(1, 1);
  const std::string piece(10000, 'x');
  std::size_t most = 0;
  int due = 0;
  for (int i = 0; i < 100; ++i) {
    if (buffer.add({llm::DeltaKind::text, piece})) {
      most = std::max(most, buffer.pending_bytes());
      buffer.take();
      ++due;
    }
  }
  BOOST_TEST(most >= engine::kChunkBatchBytes);
  BOOST_TEST(most < engine::kChunkBatchBytes + piece.size());
  BOOST_TEST(due >= 100 * static_cast<int>(piece.size()) / static_cast<int>(engine::kChunkBatchBytes + piece.size()));
  BOOST_TEST(buffer.blocks().size() == 1u);
  BOOST_TEST(buffer.blocks().front().text.size() == 100 * piece.size());  // assistant/message keeps the answer
}

// A turn of 20,000 chunks through the engine: the log lists every chunk in assistant/message's
// sourceEventSeqs, the conversation counted the chunks it did not keep (no re-read of the log), and
// the model waited for the slow client before every delta.
BOOST_FIXTURE_TEST_CASE(a_long_turn_keeps_no_chunk_records_and_waits_for_its_client, Fixture) {
  LongProvider model(20000);
  Process a(root, config, model, io, pool, generation);
  auto session = run(a.engine.create_session("/w", {}));
  SlowClient client;
  auto prompt = [&](const char* text) -> asio::awaitable<llm::StopKind> {
    // The awaitable in a local: the moved-in input must not be a temporary across the co_await (GCC 12).
    auto running = a.engine.prompt(session->id, engine::PromptInput{text, {}}, client);
    co_return co_await std::move(running);
  };
  BOOST_TEST((run(prompt("go")) == llm::StopKind::end_turn));
  BOOST_TEST(client.deltas == 20000u);
  BOOST_TEST(client.deltas_while_waiting == 0u);
  BOOST_TEST(client.room_calls >= client.deltas);

  auto log = events(a, session->id);
  json::array chunk_seqs;
  for (const auto& e : log)
    if (store::string_at(e, "type") == "assistant/chunk") chunk_seqs.push_back(e.at("seq"));
  BOOST_TEST(chunk_seqs.size() == 20000u + 2 * 40 + 1);  // deltas, block start/end pairs, finish
  const json::object& message = last_of(log, "assistant/message");
  BOOST_TEST(json::serialize(message.at("sourceEventSeqs")) == json::serialize(chunk_seqs));
  // The conversation followed the log without keeping the chunks' records.
  BOOST_TEST(session->conversation_known);
  BOOST_TEST(session->conversation.next_seq() == static_cast<std::int64_t>(log.size()));
  BOOST_TEST((run(prompt("again")) == llm::StopKind::end_turn));
  const auto& second = model.requests.back().messages;
  BOOST_REQUIRE(second.size() == 4u);  // system, go, the answer, again
  BOOST_TEST((second[2].role == llm::Role::assistant));
  std::size_t text_bytes = 0;  // the text blocks; reasoning never goes back to the model
  for (std::size_t i = 0; i < 20000; ++i)
    if (i % 1000 != 999) text_bytes += ("w" + std::to_string(i) + " ").size();
  BOOST_TEST(second[2].text.size() == text_bytes);
}

// The echo model asks for room before every word, and produces nothing while it waits.
BOOST_AUTO_TEST_CASE(echo_waits_for_room_before_every_chunk) {
  asio::io_context io;
  auto echo = llm::make_echo_provider(io.get_executor(), std::chrono::milliseconds(0));
  llm::Request request;
  request.messages = {{llm::Role::user, std::string(2000, 'a') + " b c d e f g h"}};
  bool in_room = false;
  std::size_t chunks = 0, rooms = 0, while_waiting = 0;
  llm::DeltaSink sink(
      [&](const llm::Delta&) {
        ++chunks;
        if (in_room) ++while_waiting;
      },
      [&]() -> asio::awaitable<void> {
        ++rooms;
        in_room = true;
        co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
        in_room = false;
      });
  std::optional<llm::Completion> done;
  asio::co_spawn(io, echo->stream(request, sink), [&](std::exception_ptr e, llm::Completion c) {
    BOOST_REQUIRE(!e);
    done = c;
  });
  io.run();
  BOOST_REQUIRE(done);
  BOOST_TEST(chunks == llm::echo_chunks(llm::echo_answer(request)).size());
  BOOST_TEST(rooms == chunks);
  BOOST_TEST(while_waiting == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
