// The session queue (src/engine/work_queue.hpp): arrival order, the bounds of a prompt queue (count
// and held text), loads beside them (bounded on their own), cancelling every prompt in line, and leaving a slot.
#include "engine/session.hpp"
#include "engine/work_queue.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/test/unit_test.hpp>

using namespace acp;
namespace asio = boost::asio;

namespace {

struct Line {
  asio::io_context io;
  engine::WorkQueue queue{io.get_executor()};
  std::shared_ptr<engine::Turn> turn() { return std::make_shared<engine::Turn>(io.get_executor()); }
  std::shared_ptr<engine::QueueEntry> prompt(std::size_t bytes = 10) { return queue.push(turn(), bytes, "s"); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(work_queue)

BOOST_FIXTURE_TEST_CASE(entries_start_one_at_a_time_in_arrival_order, Line) {
  auto a = prompt(), b = prompt(), load = queue.push(nullptr, 0, "s"), c = prompt();
  BOOST_TEST(a->go.is_set());
  BOOST_TEST(!b->go.is_set());
  queue.remove(a);
  BOOST_TEST(b->go.is_set());
  BOOST_TEST(!load->go.is_set());
  // A waiting entry that leaves wakes nobody.
  queue.remove(c);
  BOOST_TEST(!load->go.is_set());
  queue.remove(b);
  BOOST_TEST(load->go.is_set());
  queue.remove(load);
  BOOST_TEST(queue.empty());
}

BOOST_FIXTURE_TEST_CASE(eight_prompts_wait_behind_the_running_one_the_ninth_is_refused, Line) {
  auto running = prompt();
  for (std::size_t i = 0; i < engine::kMaxQueuedPrompts; ++i) prompt();
  BOOST_CHECK_EXCEPTION(prompt(), engine::QueueFull, [](const engine::QueueFull& e) { return e.session_id() == "s"; });
  // A load does not count against the prompts.
  BOOST_CHECK_NO_THROW(queue.push(nullptr, 0, "s"));
  // Once the running one is over, one more may wait.
  queue.remove(running);
  BOOST_CHECK_NO_THROW(prompt());
  BOOST_CHECK_THROW(prompt(), engine::QueueFull);
}

BOOST_FIXTURE_TEST_CASE(waiting_prompts_hold_a_bounded_amount_of_text, Line) {
  prompt(engine::kMaxQueuedPromptBytes * 2);  // running: not held by the queue
  // The first waiting prompt may hold more than the bound (one maximal frame must be able to wait).
  BOOST_CHECK_NO_THROW(prompt(engine::kMaxQueuedPromptBytes + 1));
  BOOST_CHECK_THROW(prompt(1), engine::QueueFull);
}

BOOST_FIXTURE_TEST_CASE(waiting_text_adds_up, Line) {
  prompt();
  prompt(engine::kMaxQueuedPromptBytes / 2);
  BOOST_CHECK_NO_THROW(prompt(engine::kMaxQueuedPromptBytes / 2));
  BOOST_CHECK_THROW(prompt(1), engine::QueueFull);
}

BOOST_FIXTURE_TEST_CASE(cancel_reaches_every_prompt_in_line_and_none_that_comes_later, Line) {
  auto a = prompt(), b = prompt();
  queue.push(nullptr, 0, "s");
  queue.cancel_prompts();
  auto later = prompt();
  BOOST_TEST(a->turn->cancel_requested);
  BOOST_TEST(b->turn->cancel_requested);
  BOOST_TEST(!later->turn->cancel_requested);
}

BOOST_AUTO_TEST_CASE(a_slot_left_clears_the_running_turn_and_starts_the_next) {
  asio::io_context io;
  auto session = std::make_shared<engine::Session>("s", store::SessionHeader{}, io.get_executor(),
                                                   asio::make_strand(io.get_executor()));
  auto first = std::make_shared<engine::Turn>(io.get_executor());
  auto next = session->queue.push(std::make_shared<engine::Turn>(io.get_executor()), 1, "s");
  {
    engine::QueueSlot slot(session, session->queue.push(first, 1, "s"));
    // `next` came first and runs: the slot's entry waits behind it until `next` leaves.
    BOOST_TEST(!slot.entry()->go.is_set());
    session->queue.remove(next);
    BOOST_TEST(slot.entry()->go.is_set());
    session->turn = first;  // as Engine::enqueue does once the entry may start
  }
  BOOST_TEST(!session->turn);
  BOOST_TEST(first->done);
  BOOST_TEST(first->finished.is_set());
  BOOST_TEST(session->queue.empty());
}

BOOST_FIXTURE_TEST_CASE(eight_loads_wait_at_most_the_ninth_is_refused, Line) {
  auto running = prompt();
  for (std::size_t i = 0; i < engine::kMaxQueuedPrompts; ++i) queue.push(nullptr, 0, "s");
  BOOST_CHECK_THROW(queue.push(nullptr, 0, "s"), engine::QueueFull);
  // Prompts have bounds of their own.
  BOOST_CHECK_NO_THROW(prompt());
}

// The connection's budget across queues: taken per prompt, refused past the bound (taking nothing),
// given back when an entry is gone, and never refusing a prompt when nothing is held.
BOOST_AUTO_TEST_CASE(a_connections_prompts_share_one_budget) {
  asio::io_context io;
  constexpr std::size_t kLimit = 4096, kPart = kLimit / 4;
  auto budget = std::make_shared<engine::PromptBudget>(kLimit);
  std::vector<std::unique_ptr<engine::WorkQueue>> queues;
  for (int i = 0; i < 6; ++i) queues.push_back(std::make_unique<engine::WorkQueue>(io.get_executor()));
  auto prompt = [&](std::size_t q, std::size_t bytes) {
    const std::string id = "s" + std::to_string(q);
    return queues[q]->push(std::make_shared<engine::Turn>(io.get_executor()), bytes, id, budget->take(bytes, id));
  };
  std::vector<std::shared_ptr<engine::QueueEntry>> running;
  for (std::size_t q = 0; q < 4; ++q) running.push_back(prompt(q, kPart));  // each session's first: its own bounds allow it
  BOOST_TEST(budget->held() == kLimit);
  BOOST_CHECK_EXCEPTION(prompt(4, 1), engine::ServerBusy, [](const engine::ServerBusy& e) {
    return e.session_id() == "s4" && e.held_bytes() == kLimit && e.limit() == kLimit;
  });
  BOOST_TEST(budget->held() == kLimit);
  BOOST_TEST(queues[4]->empty());
  // Removed from its queue but still referenced, an entry keeps its share; gone, it gives it back.
  queues[0]->remove(running[0]);
  BOOST_CHECK_THROW(prompt(4, 1), engine::ServerBusy);
  running[0].reset();
  BOOST_TEST(budget->held() == 3 * kPart);
  auto fits = prompt(4, kPart);
  BOOST_CHECK_THROW(prompt(5, 1), engine::ServerBusy);
  // With nothing held, one prompt of any size is taken.
  for (std::size_t q = 1; q < 4; ++q) queues[q]->remove(running[q]);
  queues[4]->remove(fits);
  running.clear();
  fits.reset();
  BOOST_TEST(budget->held() == 0u);
  auto huge = prompt(5, 2 * kLimit);
  BOOST_CHECK_THROW(prompt(4, 1), engine::ServerBusy);
  queues[5]->remove(huge);
  huge.reset();
  BOOST_TEST(budget->held() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
