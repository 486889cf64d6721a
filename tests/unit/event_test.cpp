// support::Event at its edges: set before the wait, set twice, notify with nobody waiting, a
// cancelled wait, the event destroyed under its waiters.
#include "support/event.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <exception>
#include <memory>
#include <optional>
#include <vector>

namespace asio = boost::asio;
using acp::support::Event;

namespace {

// One waiter: its result once it returned.
struct Waiter {
  std::optional<bool> result;
  std::exception_ptr error;
};

std::shared_ptr<Waiter> start_wait(asio::io_context& io, Event& event, asio::cancellation_slot slot = {}) {
  auto w = std::make_shared<Waiter>();
  asio::co_spawn(io, event.wait(), asio::bind_cancellation_slot(slot, [w](std::exception_ptr e, bool r) {
                   w->error = e;
                   if (!e) w->result = r;
                 }));
  return w;
}

// Runs what is ready (an io_context that ran out of work stops until restarted).
void drain(asio::io_context& io) {
  io.restart();
  io.poll();
}

} // namespace

BOOST_AUTO_TEST_SUITE(support_event)

BOOST_AUTO_TEST_CASE(set_before_the_wait_returns_at_once) {
  asio::io_context io;
  Event event(io.get_executor());
  event.set();
  auto w = start_wait(io, event);
  drain(io);
  BOOST_TEST((w->result == std::optional<bool>(true)));
}

BOOST_AUTO_TEST_CASE(set_wakes_every_waiter_and_setting_twice_is_harmless) {
  asio::io_context io;
  Event event(io.get_executor());
  std::vector<std::shared_ptr<Waiter>> waiters;
  for (int i = 0; i < 3; ++i) waiters.push_back(start_wait(io, event));
  drain(io);
  for (auto& w : waiters) BOOST_TEST(!w->result);
  event.set();
  event.set();
  drain(io);
  for (auto& w : waiters) BOOST_TEST((w->result == std::optional<bool>(true)));
  BOOST_TEST(event.is_set());
  auto late = start_wait(io, event);
  drain(io);
  BOOST_TEST((late->result == std::optional<bool>(true)));
}

BOOST_AUTO_TEST_CASE(reset_makes_waits_suspend_again) {
  asio::io_context io;
  Event event(io.get_executor());
  event.set();
  event.reset();
  auto w = start_wait(io, event);
  drain(io);
  BOOST_TEST(!w->result);
  event.set();
  drain(io);
  BOOST_TEST((w->result == std::optional<bool>(true)));
}

BOOST_AUTO_TEST_CASE(notify_wakes_only_current_waiters) {
  asio::io_context io;
  Event event(io.get_executor());
  event.notify_all();  // nobody waits: lost
  auto a = start_wait(io, event);
  auto b = start_wait(io, event);
  drain(io);
  BOOST_TEST(!a->result);
  event.notify_one();
  drain(io);
  BOOST_TEST((a->result.has_value() != b->result.has_value()));  // exactly one woke
  event.notify_all();
  drain(io);
  BOOST_TEST((a->result == std::optional<bool>(true)));
  BOOST_TEST((b->result == std::optional<bool>(true)));
  BOOST_TEST(!event.is_set());
}

BOOST_AUTO_TEST_CASE(a_cancelled_wait_returns_false_and_leaves_the_others_waiting) {
  asio::io_context io;
  Event event(io.get_executor());
  asio::cancellation_signal cancel;
  auto cancelled = start_wait(io, event, cancel.slot());
  auto other = start_wait(io, event);
  drain(io);
  BOOST_TEST(!cancelled->result);
  cancel.emit(asio::cancellation_type::terminal);
  drain(io);
  BOOST_TEST((cancelled->result == std::optional<bool>(false)));
  BOOST_TEST(!other->result);
  event.set();
  drain(io);
  BOOST_TEST((other->result == std::optional<bool>(true)));
}

BOOST_AUTO_TEST_CASE(destroying_the_event_wakes_its_waiters) {
  asio::io_context io;
  auto event = std::make_unique<Event>(io.get_executor());
  auto a = start_wait(io, *event);
  auto b = start_wait(io, *event);
  drain(io);
  BOOST_TEST(!a->result);
  event.reset();  // the waiters resume without touching it (ASan would see a use after free)
  io.run();
  BOOST_TEST((a->result == std::optional<bool>(true)));
  BOOST_TEST((b->result == std::optional<bool>(true)));
}

BOOST_AUTO_TEST_SUITE_END()
