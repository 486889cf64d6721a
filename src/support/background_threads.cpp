#include "support/background_threads.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <thread>
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
  std::vector<std::jthread> threads;
};

BackgroundThreads::BackgroundThreads(std::size_t count, bool lowered) : impl_(std::make_unique<Impl>()) {
  impl_->work.emplace(impl_->io.get_executor());
  impl_->threads.reserve(count);
  for (std::size_t i = 0; i < std::max<std::size_t>(count, 1); ++i)
    impl_->threads.emplace_back([io = &impl_->io, lowered] {
      if (lowered) lower_thread_priority();
      io->run();
    });
}

BackgroundThreads::~BackgroundThreads() {
  impl_->work.reset();  // run() returns once the queued work is done; the jthreads join
  impl_->threads.clear();
}

boost::asio::any_io_executor BackgroundThreads::executor() const { return impl_->io.get_executor(); }

} // namespace acp::support
