#include "engine/scheduler.hpp"

#include <boost/asio/strand.hpp>

namespace acp::engine {

namespace asio = boost::asio;

namespace {

// Whole-log reads (session/load replays, resume's model scan) at once per connection: a replay to a
// slow client holds up to 8 MiB of frames back and a pool thread, so twenty loads must not run twenty
// reads (measured: 227 MB peak with eight at once).
constexpr std::size_t kConcurrentLogReads = 2;
// Lock waits at once (each sleeps in flock for up to the lock timeout); more queue behind them and
// still end at their own deadlines.
constexpr std::size_t kLockWaitThreads = 4;
// Reference preparations and whole-log re-reads at once; more queue behind them.
constexpr std::size_t kBulkReadThreads = 4;

} // namespace

Scheduler::Scheduler(asio::any_io_executor connection, asio::any_io_executor pool)
    : connection_(std::move(connection)), pool_(std::move(pool)), log_read_freed_(connection_),
      lock_waits_(kLockWaitThreads, /*lowered=*/false), bulk_reads_(kBulkReadThreads),
      log_readers_(kConcurrentLogReads) {}

Scheduler::~Scheduler() = default;

asio::strand<asio::any_io_executor> Scheduler::session_strand() const { return asio::make_strand(pool_); }

asio::awaitable<void> Scheduler::replay(const std::function<void()>& read_in) {
  const std::function<void()> read = read_in;
  while (log_reads_ >= kConcurrentLogReads) co_await log_read_freed_.wait();
  ++log_reads_;
  struct Slot {
    Scheduler& scheduler;
    ~Slot() {
      --scheduler.log_reads_;
      scheduler.log_read_freed_.notify_one();
    }
  } slot{*this};
  const asio::any_io_executor readers = log_readers_.executor();
  co_await offload(readers, read);
}

} // namespace acp::engine
