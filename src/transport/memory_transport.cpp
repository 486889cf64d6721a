#include "transport/memory_transport.hpp"

#include "support/event.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cstring>

namespace acp::transport {

namespace asio = boost::asio;

struct MemoryTransport::Impl {
  explicit Impl(asio::any_io_executor ex, std::size_t capacity)
      : executor(ex), input_changed(ex), output_changed(ex), client_wake(ex), capacity(capacity) {}
  asio::any_io_executor executor;
  support::Event input_changed;        ///< input bytes, EOF or a read cancel
  support::Event output_changed;       ///< output taken or written, output closed, or a write cancel
  asio::steady_timer client_wake;  ///< client_wait_output(): output written, or its deadline
  std::string input;
  bool input_eof = false;
  bool read_cancelled = false;
  std::size_t consumed = 0;
  std::string output;
  std::size_t capacity;
  bool output_dead = false;
  bool write_cancelled = false;
};

MemoryTransport::MemoryTransport(asio::any_io_executor executor, std::size_t output_capacity)
    : impl_(std::make_unique<Impl>(std::move(executor), std::max<std::size_t>(output_capacity, 1))) {}
MemoryTransport::~MemoryTransport() = default;

asio::awaitable<ReadResult> MemoryTransport::read_some(std::span<char> buffer) {
  auto& s = *impl_;
  for (;;) {
    if (s.read_cancelled) co_return ReadResult{asio::error::operation_aborted, 0};
    if (!s.input.empty()) {
      std::size_t n = std::min(buffer.size(), s.input.size());
      std::memcpy(buffer.data(), s.input.data(), n);
      s.input.erase(0, n);
      s.consumed += n;
      co_return ReadResult{{}, n};
    }
    if (s.input_eof) co_return ReadResult{asio::error::eof, 0};
    co_await s.input_changed.wait();
  }
}

asio::awaitable<boost::system::error_code> MemoryTransport::write(std::string_view data) {
  auto& s = *impl_;
  for (;;) {
    if (s.output_dead) co_return asio::error::broken_pipe;
    if (s.write_cancelled) co_return asio::error::operation_aborted;
    std::size_t room = s.capacity > s.output.size() ? s.capacity - s.output.size() : 0;
    std::size_t n = std::min(room, data.size());
    s.output.append(data.substr(0, n));
    data.remove_prefix(n);
    if (n > 0) {
      s.output_changed.notify_all();
      s.client_wake.cancel();
    }
    if (data.empty()) co_return boost::system::error_code{};
    co_await s.output_changed.wait();
  }
}

asio::awaitable<bool> MemoryTransport::input_closed() {
  auto& s = *impl_;
  for (;;) {
    if (s.input_eof) co_return true;
    if (s.read_cancelled) co_return false;
    co_await s.input_changed.wait();
  }
}

asio::awaitable<bool> MemoryTransport::output_closed() {
  auto& s = *impl_;
  for (;;) {
    if (s.output_dead) co_return true;
    if (s.write_cancelled) co_return false;
    co_await s.output_changed.wait();
  }
}

void MemoryTransport::cancel_read() {
  impl_->read_cancelled = true;
  impl_->input_changed.notify_all();
}

void MemoryTransport::cancel_write() {
  impl_->write_cancelled = true;
  impl_->output_changed.notify_all();
}

void MemoryTransport::client_write(std::string_view bytes) {
  impl_->input.append(bytes);
  impl_->input_changed.notify_all();
}

void MemoryTransport::client_close_input() {
  impl_->input_eof = true;
  impl_->input_changed.notify_all();
}

std::string MemoryTransport::client_read() {
  std::string out = std::move(impl_->output);
  impl_->output.clear();
  impl_->output_changed.notify_all();
  return out;
}

asio::awaitable<bool> MemoryTransport::client_wait_output(std::chrono::milliseconds timeout) {
  auto& s = *impl_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (s.output.empty()) {
    if (std::chrono::steady_clock::now() >= deadline) co_return false;
    s.client_wake.expires_at(deadline);
    co_await s.client_wake.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  co_return true;
}

void MemoryTransport::client_close_output() {
  impl_->output_dead = true;
  impl_->output.clear();
  impl_->output_changed.notify_all();
}

std::size_t MemoryTransport::input_consumed() const { return impl_->consumed; }
std::size_t MemoryTransport::output_pending() const { return impl_->output.size(); }

} // namespace acp::transport
