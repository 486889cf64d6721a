#include "outbox.hpp"

#include "support/log.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <deque>

namespace acp::transport {

namespace asio = boost::asio;

struct Outbox::Impl {
  Impl(asio::any_io_executor ex, int fd) : stream(ex, fd), wake(ex, asio::steady_timer::time_point::max()) {}
  asio::posix::stream_descriptor stream;
  asio::steady_timer wake;
  std::deque<std::string> queue;
  bool closed = false;
  bool broken = false;
  std::atomic<std::size_t> queued_bytes{0};
};

Outbox::Outbox(asio::any_io_executor executor, int fd) : impl_(std::make_unique<Impl>(std::move(executor), fd)) {}
Outbox::~Outbox() = default;

void Outbox::send(std::string frame) {
  if (impl_->broken) return;
  frame.push_back('\n');
  impl_->queued_bytes += frame.size();
  impl_->queue.push_back(std::move(frame));
  impl_->wake.cancel_one();
}

void Outbox::close() {
  impl_->closed = true;
  impl_->wake.cancel_one();
}

bool Outbox::broken() const { return impl_->broken; }

std::size_t Outbox::queued_bytes() const { return impl_->queued_bytes; }

asio::awaitable<void> Outbox::run() {
  auto& s = *impl_;
  for (;;) {
    while (!s.queue.empty()) {
      // Coalesce what is queued into one write; frames stay whole and ordered.
      std::string batch = std::move(s.queue.front());
      s.queue.pop_front();
      while (!s.queue.empty() && batch.size() < (1u << 16)) {
        batch += s.queue.front();
        s.queue.pop_front();
      }
      if (s.broken) {
        s.queued_bytes -= batch.size();
        continue;
      }
      auto [ec, n] = co_await asio::async_write(s.stream, asio::buffer(batch), asio::as_tuple(asio::use_awaitable));
      s.queued_bytes -= batch.size();
      if (ec) {
        log::error("frame stream write failed: " + ec.message() + "; dropping further output");
        s.broken = true;
        for (const auto& f : s.queue) s.queued_bytes -= f.size();
        s.queue.clear();
      }
    }
    if (s.closed) break;
    s.wake.expires_at(asio::steady_timer::time_point::max());
    co_await s.wake.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  boost::system::error_code ignored;
  s.stream.release();
}

} // namespace acp::transport
