#include "store/pg/change_feed.hpp"

#include "store/pg/schema.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace acp::store::pg {

using namespace std::chrono_literals;

ChangeFeed::ChangeFeed(std::string url, ConnectOptions options) : url_(std::move(url)), options_(std::move(options)) {
  wake_fd_ = support::UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd_) throw std::system_error(errno, std::generic_category(), "eventfd");
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

ChangeFeed::~ChangeFeed() {
  thread_.request_stop();
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

std::uint64_t ChangeFeed::current() const noexcept {
  const std::uint64_t s = state_.load(std::memory_order_acquire);
  return (s & 1) ? s >> 1 : 0;  // the counter is at least 1 once listening
}

bool ChangeFeed::wait_listening(std::chrono::milliseconds timeout) {
  std::unique_lock g(mu_);
  return changed_.wait_for(g, timeout, [&] { return current() != 0; });
}

void ChangeFeed::moved(bool up) {
  {
    std::lock_guard g(mu_);
    const std::uint64_t counter = (state_.load(std::memory_order_relaxed) >> 1) + 1;
    state_.store((counter << 1) | (up ? 1 : 0), std::memory_order_release);
  }
  changed_.notify_all();
}

int ChangeFeed::wait(int fd, bool write, int timeout_ms) {
  pollfd p[2] = {{wake_fd_.get(), POLLIN, 0}, {fd, short(write ? POLLOUT : POLLIN), 0}};
  for (;;) {
    const int n = ::poll(p, fd >= 0 ? 2 : 1, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (p[0].revents) return -1;
    if (n < 0) return -1;
    return n > 0 ? 1 : 0;
  }
}

void ChangeFeed::run(std::stop_token stop) {
  auto backoff = 0ms;
  ConnectOptions options = options_;
  options.application_name = "dsh-acp listener";
  const int connect_ms = options.connect_timeout_s > 0 ? options.connect_timeout_s * 1000 : -1;
  while (!stop.stop_requested()) {
    if (backoff > 0ms && wait(-1, false, int(backoff.count())) < 0) break;
    backoff = next_backoff(backoff);
    std::optional<PgConnection> c;
    try {
      // Every wait on the server is one this thread can be stopped out of (a shutdown is bounded),
      // the LISTEN's answer too. Host names are still resolved by libpq without that.
      c.emplace(PgConnection::connect(url_, options, [&](int fd, bool write) { return wait(fd, write, connect_ms) > 0; }));
      c->send("LISTEN " + std::string(kNotifyChannel));
      while (!c->result_ready())
        if (wait(c->socket(), false, connect_ms) <= 0) throw StoreError("no answer to LISTEN");
      c->receive();
    } catch (const StoreError&) {
      continue;  // down (or stopping): try again after the backoff
    }
    // Listening from here: a change committed before this point is in what the next query reads.
    const auto since = std::chrono::steady_clock::now();
    moved(true);
    for (;;) {
      const int ready = wait(c->socket(), false, -1);
      if (ready < 0) break;  // stopping
      try {
        if (!c->take_notifications().empty()) moved(true);
        if (c->ok()) continue;
      } catch (const StoreError&) {
      }
      break;  // lost: relist once it is back
    }
    moved(false);
    // A connection that lasted is retried at once; one dropped right away (a server that ends idle
    // sessions at once, a pooler) waits out the growing backoff like a failed connect.
    if (std::chrono::steady_clock::now() - since >= 1s) backoff = 0ms;
  }
}

} // namespace acp::store::pg
