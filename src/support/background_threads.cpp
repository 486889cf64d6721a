#include "support/background_threads.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/require.hpp>

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace acp::support {

namespace {
constexpr int kBackgroundNiceIncrement = 10;
constexpr int kLowestNice = 19;
}

void lower_thread_priority() noexcept {
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, tid);
  if (errno != 0) return;
  ::setpriority(PRIO_PROCESS, tid, std::min(now + kBackgroundNiceIncrement, kLowestNice));
}

struct BackgroundThreads::Impl {
  boost::asio::io_context io;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  std::size_t count = 1;
  bool lowered = true;
  sigset_t mask{};  ///< the threads' signal mask
  std::once_flag started;
  std::vector<std::jthread> threads;

  void start() {
    std::call_once(started, [this] {
      // New threads inherit the mask of the thread that creates them, which is whichever posted
      // first: `mask` is set around their creation.
      sigset_t old;
      ::pthread_sigmask(SIG_SETMASK, &mask, &old);
      threads.reserve(count);
      for (std::size_t i = 0; i < count; ++i)
        threads.emplace_back([this] {
          if (lowered) lower_thread_priority();
          io.run();
        });
      ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    });
  }
};

namespace {

/// The io_context's executor, except that the first work handed to it starts the threads: a
/// process that never offloads anything never creates them. A server answering `initialize`
/// and nothing else (an editor probing its agents) spent ~2 ms of its ~10 ms start creating
/// 18 idle threads (bench/README.md, issue 31). Every property is the io_context executor's own.
template <class Inner, class Threads>
class StartingExecutor {
public:
  StartingExecutor(Inner inner, Threads* threads) noexcept : inner_(std::move(inner)), threads_(threads) {}

  template <class F> void execute(F&& f) const {
    threads_->start();
    inner_.execute(std::forward<F>(f));
  }

  template <class Property>
    requires boost::asio::can_query<const Inner&, const Property&>::value
  decltype(auto) query(const Property& p) const
      noexcept(boost::asio::is_nothrow_query<const Inner&, const Property&>::value) {
    return boost::asio::query(inner_, p);
  }

  template <class Property>
    requires boost::asio::can_require<const Inner&, const Property&>::value
  auto require(const Property& p) const {
    using Required = std::decay_t<decltype(boost::asio::require(inner_, p))>;
    return StartingExecutor<Required, Threads>(boost::asio::require(inner_, p), threads_);
  }

  friend bool operator==(const StartingExecutor& a, const StartingExecutor& b) noexcept { return a.inner_ == b.inner_; }
  friend bool operator!=(const StartingExecutor& a, const StartingExecutor& b) noexcept { return !(a == b); }

private:
  Inner inner_;
  Threads* threads_;
};

} // namespace

BackgroundThreads::BackgroundThreads(std::size_t count, bool lowered, bool block_signals)
    : impl_(std::make_unique<Impl>()) {
  impl_->work.emplace(impl_->io.get_executor());
  impl_->count = std::max<std::size_t>(count, 1);
  impl_->lowered = lowered;
  if (block_signals) ::sigfillset(&impl_->mask);
  else ::pthread_sigmask(SIG_SETMASK, nullptr, &impl_->mask);
}

BackgroundThreads::~BackgroundThreads() { join(); }

void BackgroundThreads::join() {
  impl_->work.reset();  // run() returns once the queued work is done
  impl_->threads.clear();
}

boost::asio::any_io_executor BackgroundThreads::executor() const {
  return StartingExecutor<boost::asio::io_context::executor_type, Impl>(impl_->io.get_executor(), impl_.get());
}

} // namespace acp::support
