// The outbox over the in-memory transport: byte bound, waiting senders, fairness between keys,
// order within a key, abort and a dead reader. Single-threaded: the test is the client.
#include "transport/memory_transport.hpp"
#include "transport/outbox.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/test/unit_test.hpp>

#include <functional>

namespace asio = boost::asio;
using acp::transport::MemoryTransport;
using acp::transport::Outbox;

namespace {

// Runs `body` (and whatever it spawns) to completion; fails the test if it takes a minute (a hang
// guard: the waits in the cases have no limits of their own).
void run(asio::io_context& io, std::function<asio::awaitable<void>()> body) {
  bool done = false;
  std::exception_ptr failure;
  asio::co_spawn(io, body(), [&](std::exception_ptr e) {
    failure = e;
    done = true;
    io.stop();  // the writer and any suspended producer are simply destroyed with the context
  });
  io.run_for(std::chrono::seconds(60));
  BOOST_REQUIRE_MESSAGE(done, "the test coroutine did not finish");
  if (failure) std::rethrow_exception(failure);
}

// Lets every handler that is ready run (single thread, no I/O outside the process).
asio::awaitable<void> settle() {
  for (int i = 0; i < 200; ++i) co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    out.push_back(text.substr(start, nl - start));
  BOOST_TEST(start == text.size());  // frames are written whole
  return out;
}

// Frame lists are built outside co_await expressions: GCC 12 rejects a braced list there
// ("array used as initializer").
std::vector<std::string> frames_of(std::string a) {
  std::vector<std::string> v;
  v.push_back(std::move(a));
  return v;
}
std::vector<std::string> frames_of(std::string a, std::string b) {
  std::vector<std::string> v = frames_of(std::move(a));
  v.push_back(std::move(b));
  return v;
}

std::string frame(char tag, std::size_t i, std::size_t size) {
  std::string f = std::string(1, tag) + std::to_string(i) + ":";
  f.resize(size, tag);
  return f;
}

struct Harness {
  asio::io_context io{1};
  MemoryTransport transport;
  Outbox outbox;
  bool writer_done = false;
  Harness(std::size_t capacity, std::size_t max_bytes, std::size_t per_key = Outbox::kPerKeyBytes)
      : transport(io.get_executor(), capacity), outbox(io.get_executor(), transport, max_bytes, per_key) {}
  void start_writer() {
    asio::co_spawn(io, outbox.run(), [this](std::exception_ptr) { writer_done = true; });
  }
  // Waits until unread output exists.
  asio::awaitable<void> output() {
    bool arrived = false;
    while (!arrived) arrived = co_await transport.client_wait_output(std::chrono::hours(1));
  }
  // After close(): reads until the writer has written everything and returned.
  asio::awaitable<std::string> read_all() {
    std::string out;
    for (;;) {
      out += transport.client_read();
      if (writer_done && transport.output_pending() == 0) co_return out;
      co_await transport.client_wait_output(std::chrono::milliseconds(5));  // output, or a look again
    }
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(outbox)

BOOST_AUTO_TEST_CASE(frames_keep_their_order_within_a_key) {
  Harness h(1 << 20, 1 << 20);
  run(h.io, [&]() -> asio::awaitable<void> {
    h.start_writer();
    for (std::size_t i = 0; i < 50; ++i) {
      h.outbox.push("a", frame('a', i, 30));
      auto frames = frames_of(frame('b', i, 40), frame('b', i + 1000, 40));
      co_await h.outbox.send(std::string("b"), std::move(frames));
    }
    h.outbox.close();
    std::string out = co_await h.read_all();
    std::vector<std::string> a, b, want_a, want_b;
    for (const auto& l : lines(out)) (l[0] == 'a' ? a : b).push_back(l);
    for (std::size_t i = 0; i < 50; ++i) {
      want_a.push_back(frame('a', i, 30));
      want_b.push_back(frame('b', i, 40));
      want_b.push_back(frame('b', i + 1000, 40));
    }
    BOOST_TEST(a == want_a, boost::test_tools::per_element());
    BOOST_TEST(b == want_b, boost::test_tools::per_element());
  });
  BOOST_TEST(h.writer_done);
}

BOOST_AUTO_TEST_CASE(send_waits_for_room_and_the_bound_holds) {
  constexpr std::size_t kMax = 16 << 10, kFrame = 1000;
  Harness h(4096, kMax);
  run(h.io, [&]() -> asio::awaitable<void> {
    h.start_writer();
    std::size_t sent = 0;
    bool producer_done = false;
    asio::co_spawn(
        h.io,
        [&]() -> asio::awaitable<void> {
          for (std::size_t i = 0; i < 200; ++i) {
            auto frames = frames_of(frame('k', i, kFrame));
            BOOST_REQUIRE(co_await h.outbox.send(std::string("k"), std::move(frames)));
            ++sent;
          }
          producer_done = true;
        },
        asio::detached);
    co_await settle();
    // The client reads nothing: the producer is suspended with the queue at the bound.
    BOOST_TEST(!producer_done);
    BOOST_TEST(sent < 40u);
    BOOST_TEST(h.outbox.queued_bytes() <= kMax);
    BOOST_TEST(h.outbox.queued_bytes() > kMax - kFrame - 2);
    std::string out;
    while (!producer_done) {
      co_await h.output();
      out += h.transport.client_read();
    }
    h.outbox.close();
    out += co_await h.read_all();
    BOOST_TEST(lines(out).size() == 200u);
    BOOST_TEST(h.outbox.peak_queued_bytes() <= kMax);
  });
}

BOOST_AUTO_TEST_CASE(a_frame_larger_than_the_limit_waits_for_an_empty_queue) {
  constexpr std::size_t kMax = 4096;
  Harness h(1024, kMax);
  run(h.io, [&]() -> asio::awaitable<void> {
    h.start_writer();
    for (int i = 0; i < 6; ++i) h.outbox.push("a", frame('a', i, 500));
    bool big_sent = false;
    asio::co_spawn(
        h.io,
        [&]() -> asio::awaitable<void> {
          auto frames = frames_of(frame('b', 0, 10000));
          big_sent = co_await h.outbox.send(std::string("b"), std::move(frames));
        },
        asio::detached);
    co_await settle();
    BOOST_TEST(!big_sent);  // 3000 bytes queued: the big frame waits for them
    std::string out = h.transport.client_read();
    while (!big_sent) {
      co_await h.output();
      out += h.transport.client_read();
    }
    h.outbox.close();
    out += co_await h.read_all();
    auto l = lines(out);
    BOOST_REQUIRE(l.size() == 7u);
    BOOST_TEST(l.back() == frame('b', 0, 10000));
    BOOST_TEST(h.outbox.peak_queued_bytes() <= kMax + 10001);
  });
}

BOOST_AUTO_TEST_CASE(a_bulk_key_does_not_hold_back_another_key) {
  // 4 MiB of small frames on one key, the client reading slowly; then one frame on another key.
  Harness h(8192, 16 << 20);
  run(h.io, [&]() -> asio::awaitable<void> {
    h.start_writer();
    bool bulk_done = false;
    asio::co_spawn(
        h.io,
        [&]() -> asio::awaitable<void> {
          for (std::size_t i = 0; i < 4096; i += 16) {
            std::vector<std::string> batch;
            for (std::size_t k = i; k < i + 16; ++k) batch.push_back(frame('a', k, 1023));
            BOOST_REQUIRE(co_await h.outbox.send(std::string("bulk"), std::move(batch)));
          }
          bulk_done = true;
        },
        asio::detached);
    std::string out;
    for (int i = 0; i < 20; ++i) {
      co_await h.output();
      out += h.transport.client_read();
    }
    co_await settle();
    // What the bulk key has queued is bounded by the per-key limit, not by the whole outbox.
    BOOST_TEST(h.outbox.queued_bytes() <= Outbox::kPerKeyBytes + 64 * 1024 + 1024);
    std::size_t before = out.size() + h.transport.output_pending();
    auto frames = frames_of("OTHER");
    BOOST_REQUIRE(co_await h.outbox.send(std::string("other"), std::move(frames)));
    while (out.find("\nOTHER\n") == std::string::npos) {
      co_await h.output();
      out += h.transport.client_read();
    }
    std::size_t ahead = out.find("\nOTHER\n") + 1 - before;
    BOOST_TEST_MESSAGE("bulk bytes written between the other key's send and its frame: " << ahead);
    BOOST_TEST(ahead <= 256u * 1024);
    BOOST_TEST(!bulk_done);
    while (!bulk_done) {
      co_await h.output();
      out += h.transport.client_read();
    }
    h.outbox.close();
    out += co_await h.read_all();
    auto l = lines(out);
    BOOST_TEST(l.size() == 4097u);
    std::size_t next = 0;
    for (const auto& line : l)
      if (line[0] == 'a') BOOST_TEST(line == frame('a', next++, 1023));
    BOOST_TEST(next == 4096u);
  });
}

BOOST_AUTO_TEST_CASE(small_frames_are_not_served_one_per_large_frame) {
  // A replay's 16 KiB frames on one key, a prompt's 40 small updates on another: the keys share
  // the stream by bytes, so the updates do not wait for 40 large frames (640 KiB).
  Harness h(8192, 16 << 20);
  run(h.io, [&]() -> asio::awaitable<void> {
    h.start_writer();
    bool bulk_done = false;
    asio::co_spawn(
        h.io,
        [&]() -> asio::awaitable<void> {
          for (std::size_t i = 0; i < 256; i += 4) {
            std::vector<std::string> batch;
            for (std::size_t k = i; k < i + 4; ++k) batch.push_back(frame('a', k, 16 * 1024));
            BOOST_REQUIRE(co_await h.outbox.send(std::string("bulk"), std::move(batch)));
          }
          bulk_done = true;
        },
        asio::detached);
    std::string out;
    for (int i = 0; i < 20; ++i) {
      co_await h.output();
      out += h.transport.client_read();
    }
    co_await settle();
    std::size_t before = out.size() + h.transport.output_pending();
    std::vector<std::string> updates;
    for (std::size_t k = 0; k < 40; ++k) updates.push_back(frame('u', k, 200));
    BOOST_REQUIRE(co_await h.outbox.send(std::string("prompt"), std::move(updates)));
    const std::string last = "\n" + frame('u', 39, 200) + "\n";
    while (out.find(last) == std::string::npos) {
      co_await h.output();
      out += h.transport.client_read();
    }
    std::size_t written = out.find(last) + last.size() - before;
    BOOST_TEST_MESSAGE("bytes written between the updates' send and the last update: " << written);
    // The write in progress (up to 64 KiB + a frame), the transport's buffer, the updates
    // (8 KiB) and about one large frame while they were served.
    BOOST_TEST(written <= 128u * 1024);
    BOOST_TEST(!bulk_done);
    while (!bulk_done) {
      co_await h.output();
      out += h.transport.client_read();
    }
    h.outbox.close();
    out += co_await h.read_all();
    auto l = lines(out);
    BOOST_TEST(l.size() == 296u);
    std::size_t next_bulk = 0, next_update = 0;
    for (const auto& line : l) {
      if (line[0] == 'a') BOOST_TEST(line == frame('a', next_bulk++, 16 * 1024));
      else BOOST_TEST(line == frame('u', next_update++, 200));
    }
    BOOST_TEST(next_bulk == 256u);
    BOOST_TEST(next_update == 40u);
  });
}

BOOST_AUTO_TEST_CASE(push_never_overtakes_a_waiting_send_of_its_key) {
  Harness h(1024, 4096, 2048);
  run(h.io, [&]() -> asio::awaitable<void> {
    h.outbox.push("s", frame('s', 0, 1500));  // the writer starts later: the frame stays queued
    bool reply_sent = false;
    asio::co_spawn(
        h.io,
        [&]() -> asio::awaitable<void> {
          auto frames = frames_of(frame('r', 1, 1500));
          reply_sent = co_await h.outbox.send(std::string("s"), std::move(frames));
        },
        asio::detached);
    co_await settle();
    BOOST_TEST(!reply_sent);  // the key holds 1500 of its 2048
    h.outbox.push("s", frame('s', 2, 100));  // a later notification of the same session
    h.start_writer();
    h.outbox.close();
    std::string out = co_await h.read_all();
    auto l = lines(out);
    BOOST_REQUIRE(l.size() == 3u);
    BOOST_TEST(l[0] == frame('s', 0, 1500));
    BOOST_TEST(l[1] == frame('r', 1, 1500));
    BOOST_TEST(l[2] == frame('s', 2, 100));
    BOOST_TEST(reply_sent);
  });
}

BOOST_AUTO_TEST_CASE(ready_waits_while_the_queue_is_full) {
  Harness h(1024, 4096);
  run(h.io, [&]() -> asio::awaitable<void> {
    h.start_writer();
    for (int i = 0; i < 10; ++i) h.outbox.push("a", frame('a', i, 1000));
    bool ready = false;
    asio::co_spawn(
        h.io,
        [&]() -> asio::awaitable<void> {
          co_await h.outbox.ready();
          ready = true;
        },
        asio::detached);
    co_await settle();
    BOOST_TEST(!ready);
    // The last read lets the writer finish; ready() then completes without further output.
    while (!ready) {
      if (co_await h.transport.client_wait_output(std::chrono::milliseconds(5))) h.transport.client_read();
    }
    BOOST_TEST(h.outbox.queued_bytes() < 4096u);
    h.outbox.close();
    co_await h.read_all();
  });
}

// A push() producer that awaits room() (a running turn) adds no more than its key's share while
// the client does not read, and finishes once it reads; abort() lets it go at once.
BOOST_AUTO_TEST_CASE(room_holds_a_producer_to_its_key_share) {
  Harness h(1024, 1u << 20, 8192);
  run(h.io, [&]() -> asio::awaitable<void> {
    h.start_writer();
    std::size_t produced = 0;
    bool finished = false;
    asio::co_spawn(
        h.io,
        [&]() -> asio::awaitable<void> {
          for (int i = 0; i < 1000; ++i) {
            co_await h.outbox.room("a");
            h.outbox.push("a", frame('a', i, 1000));
            ++produced;
          }
          finished = true;
        },
        asio::detached);
    co_await settle();
    // The key's queue, plus the write in progress taken from it, plus one frame.
    BOOST_TEST(!finished);
    BOOST_TEST(produced < 30u);
    BOOST_TEST(h.outbox.peak_queued_bytes() <= 2 * (8192u + 1001u));
    // Another key is not held back by "a"'s backlog.
    bool other = false;
    auto b = [&]() -> asio::awaitable<void> {
      co_await h.outbox.room("b");
      other = true;
    };
    asio::co_spawn(h.io, b(), asio::detached);
    co_await settle();
    BOOST_TEST(other);
    // The client reads: everything arrives, in order.
    std::string out;
    while (!finished) {
      if (co_await h.transport.client_wait_output(std::chrono::milliseconds(5))) out += h.transport.client_read();
    }
    h.outbox.close();
    out += co_await h.read_all();
    auto got = lines(out);
    BOOST_REQUIRE(got.size() == 1000u);
    for (std::size_t i = 0; i < got.size(); ++i) BOOST_TEST(got[i] == frame('a', i, 1000));
    BOOST_TEST(h.outbox.peak_queued_bytes() <= 2 * (8192u + 1001u));
  });
}

BOOST_AUTO_TEST_CASE(room_returns_at_once_after_abort) {
  Harness h(1024, 4096, 4096);
  run(h.io, [&]() -> asio::awaitable<void> {
    h.start_writer();
    for (int i = 0; i < 10; ++i) h.outbox.push("a", frame('a', i, 1000));
    bool released = false;
    auto wait = [&]() -> asio::awaitable<void> {
      co_await h.outbox.room("a");
      released = true;
    };
    asio::co_spawn(h.io, wait(), asio::detached);
    co_await settle();
    BOOST_TEST(!released);
    h.outbox.abort();
    co_await settle();
    BOOST_TEST(released);
  });
}

BOOST_AUTO_TEST_CASE(abort_drops_frames_and_releases_senders) {
  Harness h(1024, 4096);
  run(h.io, [&]() -> asio::awaitable<void> {
    h.start_writer();
    int released = 0;
    for (int i = 0; i < 5; ++i) {
      asio::co_spawn(
          h.io,
          [&, i]() -> asio::awaitable<void> {
            auto frames = frames_of(frame('x', i, 3000));
            if (!co_await h.outbox.send(std::string("k") + std::to_string(i), std::move(frames))) ++released;
          },
          asio::detached);
    }
    co_await settle();
    BOOST_TEST(h.outbox.queued_bytes() > 0u);
    h.outbox.abort();
    co_await settle();
    BOOST_TEST(released >= 3);
    BOOST_TEST(h.writer_done);  // the stalled write was ended
    auto frames = frames_of("x");
    BOOST_TEST(!co_await h.outbox.send(std::string("late"), std::move(frames)));
    BOOST_TEST(!h.outbox.broken());
  });
}

BOOST_AUTO_TEST_CASE(a_dead_reader_breaks_the_outbox_once) {
  Harness h(1024, 4096);
  run(h.io, [&]() -> asio::awaitable<void> {
    int broken_calls = 0;
    h.outbox.on_broken([&] { ++broken_calls; });
    h.start_writer();
    bool result = true;
    for (int i = 0; i < 5; ++i) h.outbox.push("a", frame('a', i, 1000));
    asio::co_spawn(
        h.io,
        [&]() -> asio::awaitable<void> {
          auto frames = frames_of(frame('b', 0, 3000));
          result = co_await h.outbox.send(std::string("b"), std::move(frames));
        },
        asio::detached);
    co_await settle();
    h.transport.client_close_output();
    co_await settle();
    BOOST_TEST(h.outbox.broken());
    BOOST_TEST(broken_calls == 1);
    BOOST_TEST(!result);
    BOOST_TEST(h.outbox.queued_bytes() == 0u);
    BOOST_TEST(h.writer_done);
  });
}

BOOST_AUTO_TEST_SUITE_END()
