#include "transport/stdio_transport.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <poll.h>
#include <sys/stat.h>

namespace acp::transport {

namespace asio = boost::asio;

namespace {

// poll() with no requested events still reports POLLERR and POLLHUP: a pipe whose other end is
// closed (POLLERR for a writer without readers, POLLHUP for a reader without writers).
bool hung_up(int fd) {
  pollfd p{fd, 0, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0;
}

bool watchable(int fd) {
  struct stat st {};
  // Regular files and /dev/null cannot be watched (epoll refuses them; they never hang up anyway).
  return ::fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

// Waits until `d` reports a hang-up; false when the wait is cancelled. epoll (edge-triggered)
// wakes an error wait on EPOLLERR/EPOLLHUP; the state is checked before each wait since an edge
// that came before the wait was queued would not wake it.
asio::awaitable<bool> wait_hang_up(asio::posix::stream_descriptor& d) {
  for (;;) {
    if (hung_up(d.native_handle())) co_return true;
    auto [ec] = co_await d.async_wait(asio::posix::descriptor_base::wait_error, asio::as_tuple(asio::use_awaitable));
    if (ec) co_return false;
  }
}

class StdioTransport final : public Transport {
public:
  StdioTransport(asio::any_io_executor ex, int in_fd, int out_fd)
      : in_(ex, in_fd), out_(ex, out_fd), watch_in_(watchable(in_fd)), watch_out_(watchable(out_fd)) {}

  asio::awaitable<ReadResult> read_some(std::span<char> buffer) override {
    auto [ec, n] = co_await in_.async_read_some(asio::buffer(buffer.data(), buffer.size()),
                                                asio::as_tuple(asio::use_awaitable));
    co_return ReadResult{ec, n};
  }

  asio::awaitable<boost::system::error_code> write(std::string_view data) override {
    auto [ec, n] = co_await asio::async_write(out_, asio::buffer(data.data(), data.size()),
                                              asio::as_tuple(asio::use_awaitable));
    co_return ec;
  }

  asio::awaitable<bool> input_closed() override {
    if (!watch_in_) co_return false;
    co_return co_await wait_hang_up(in_);
  }

  asio::awaitable<bool> output_closed() override {
    if (!watch_out_) co_return false;
    co_return co_await wait_hang_up(out_);
  }

  void cancel_read() override {
    boost::system::error_code ignored;
    in_.cancel(ignored);
  }

  void cancel_write() override {
    boost::system::error_code ignored;
    out_.cancel(ignored);
  }

private:
  asio::posix::stream_descriptor in_;
  asio::posix::stream_descriptor out_;
  bool watch_in_;
  bool watch_out_;
};

} // namespace

std::unique_ptr<Transport> make_stdio_transport(asio::any_io_executor executor, int in_fd, int out_fd) {
  return std::make_unique<StdioTransport>(std::move(executor), in_fd, out_fd);
}

} // namespace acp::transport
