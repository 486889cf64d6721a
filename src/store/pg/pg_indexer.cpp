#include "store/pg/pg_indexer.hpp"

#include "store/errors.hpp"
#include "store/pg/pg_store.hpp"

#include <algorithm>
#include <limits>

#include <sys/resource.h>
#include <unistd.h>

namespace acp::store::pg {

namespace {

constexpr std::uint64_t kNoTicket = std::numeric_limits<std::uint64_t>::max();
// Sessions a sweep catches up before the queue is looked at again: batches just committed are not
// kept waiting behind a long backlog.
constexpr std::size_t kSweepSessions = 64;
constexpr int kNice = 10;
constexpr int kPendingListKb = 256;

std::size_t bytes_of(const std::string& id, const std::vector<SearchRow>& rows) {
  std::size_t n = id.size();
  for (const SearchRow& r : rows) n += r.text.size() + 64;
  return n;
}

} // namespace

SearchIndexer::SearchIndexer(PgStore& store, std::string url, ConnectOptions options)
    : store_(store), url_(std::move(url)), options_(std::move(options)) {}

SearchIndexer::~SearchIndexer() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  work_.notify_all();
  thread_.join();
}

void SearchIndexer::submit(const std::string& id, std::int64_t first, std::int64_t next, std::vector<SearchRow> rows) {
  {
    std::lock_guard g(mu_);
    const std::uint64_t ticket = ++issued_;
    const std::size_t bytes = bytes_of(id, rows);
    // Streaming writes a turn in many small batches: one statement takes what queued up meanwhile.
    for (auto it = queue_.rbegin(); it != queue_.rend(); ++it) {
      if (it->id != id) continue;
      if (it->next == first && queued_bytes_ + bytes <= kQueueBytes) {
        it->next = next;
        for (SearchRow& r : rows) it->rows.push_back(std::move(r));
        it->bytes += bytes;
        queued_bytes_ += bytes;
        return;
      }
      break;
    }
    if (auto c = catch_ups_.find(id); c != catch_ups_.end()) {
      // The catch-up reads these lines too.
      c->second = std::min(c->second, ticket);
    } else if (queue_.size() >= kQueueBatches || queued_bytes_ + bytes > kQueueBytes) {
      if (catch_ups_.size() < kCatchUpIds) catch_ups_.emplace(id, ticket);
      else sweep_ = true;  // no ticket: a search does not wait for a sweep
    } else {
      queue_.push_back(Batch{id, first, next, std::move(rows), bytes, ticket, std::chrono::steady_clock::now()});
      queued_bytes_ += bytes;
    }
    if (!thread_.joinable()) thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
  }
  work_.notify_one();
}

void SearchIndexer::drop(const std::string& id) {
  {
    std::lock_guard g(mu_);
    catch_ups_.erase(id);
    std::erase_if(queue_, [&](const Batch& b) {
      if (b.id != id) return false;
      queued_bytes_ -= b.bytes;
      return true;
    });
  }
  tried_.notify_all();
}

bool SearchIndexer::pending(const std::string& id) {
  std::lock_guard g(mu_);
  if (working_id_ == id || catch_ups_.count(id)) return true;
  return std::any_of(queue_.begin(), queue_.end(), [&](const Batch& b) { return b.id == id; });
}

std::uint64_t SearchIndexer::oldest_pending() const {
  std::uint64_t oldest = working_.value_or(kNoTicket);
  for (const Batch& b : queue_) oldest = std::min(oldest, b.ticket);
  for (const auto& [id, ticket] : catch_ups_) oldest = std::min(oldest, ticket);
  return oldest;
}

bool SearchIndexer::wait_settled(std::chrono::milliseconds timeout) {
  std::unique_lock g(mu_);
  const std::uint64_t last = issued_;
  if (oldest_pending() > last) return true;
  ++waiting_;
  work_.notify_all();
  const bool settled = tried_.wait_for(g, timeout, [&] { return oldest_pending() > last; });
  --waiting_;
  return settled;
}

PgConnection& SearchIndexer::connection() {
  if (conn_ && (!conn_->ok() || conn_->in_transaction())) conn_.reset();
  if (!conn_) {
    PgConnection c = PgConnection::connect(url_, options_);
    // A search reads the GIN index's whole pending list (4 MB by default) for every word it looks up:
    // kept short, by this connection's inserts merging it into the index more often, off the writers' path.
    c.exec("SET gin_pending_list_limit = " + std::to_string(kPendingListKb));
    conn_.emplace(std::move(c));
  }
  return *conn_;
}

bool SearchIndexer::catch_up(const std::string& id, std::stop_token stop) {
  try {
    store_.index_session(connection(), id, stop);
    return true;
  } catch (const PgError&) {
    if (conn_ && (!conn_->ok() || conn_->in_transaction())) conn_.reset();
    return false;
  } catch (const ReadCancelled&) {
    return false;
  } catch (const StoreError&) {
    // Lines that cannot be read (StoreCorrupt): `dsh-acp store index` reports them; retrying here
    // would fail the same way.
    return true;
  }
}

bool SearchIndexer::index(Batch& b, std::stop_token stop) {
  try {
    with_words(b.rows);
    if (insert_search_rows(connection(), b.id, b.first, b.next, b.rows)) return true;
  } catch (const PgError&) {
    if (conn_ && (!conn_->ok() || conn_->in_transaction())) conn_.reset();
    return false;
  } catch (const StoreError&) {
    return catch_up(b.id, stop);  // an answer not understood: the lines tell
  }
  // The session's texts do not end where the batch starts: a batch left to a catch-up, a crash
  // before its texts, or a catch-up that went past it already. The lines tell.
  return catch_up(b.id, stop);
}

void SearchIndexer::sweep(std::stop_token stop) {
  std::vector<std::string> ids;
  try {
    ids = store_.stale_sessions(connection(), kSweepSessions);
  } catch (const PgError&) {
    if (conn_ && (!conn_->ok() || conn_->in_transaction())) conn_.reset();
    std::lock_guard g(mu_);
    sweep_ = true;
    backoff_ = next_backoff(backoff_);
    retry_at_ = std::chrono::steady_clock::now() + backoff_;
    return;
  }
  bool failed = false;
  for (const std::string& id : ids) {
    if (stop.stop_requested()) break;
    if (!catch_up(id, stop)) {
      failed = true;
      break;
    }
  }
  std::lock_guard g(mu_);
  if (failed || ids.size() == kSweepSessions) sweep_ = true;
  if (failed) {
    backoff_ = next_backoff(backoff_);
    retry_at_ = std::chrono::steady_clock::now() + backoff_;
  }
}

void SearchIndexer::run(std::stop_token stop) {
  // Below the writers and readers of this process: on a busy machine the words of a turn already
  // answered wait for a CPU rather than the next prompt's batches (the thread's own nice value; it
  // cannot be raised back, and need not be).
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kNice);
  std::unique_lock g(mu_);
  bool failed_while_stopping = false;
  for (;;) {
    const bool catch_ups = !catch_ups_.empty() || sweep_;
    if (!queue_.empty() && !failed_while_stopping && waiting_ == 0 && !stop.stop_requested()) {
      const auto due = queue_.front().queued + kGather;
      if (std::chrono::steady_clock::now() < due) {
        work_.wait_until(g, stop, due, [&] { return waiting_ > 0; });
        continue;
      }
    }
    if (!queue_.empty() && !failed_while_stopping) {
      Batch b = std::move(queue_.front());
      queue_.pop_front();
      queued_bytes_ -= b.bytes;
      working_ = b.ticket;
      working_id_ = b.id;
      g.unlock();
      const bool ok = index(b, stop);
      g.lock();
      if (!ok) {
        // Left to a catch-up, after a pause: the server may be down or restarting.
        catch_ups_.emplace(b.id, kNoTicket);
        backoff_ = next_backoff(backoff_);
        retry_at_ = std::chrono::steady_clock::now() + backoff_;
        failed_while_stopping = stop.stop_requested();
      }
      working_.reset();
      working_id_.clear();
      tried_.notify_all();
      continue;
    }
    // Stopping: what is queued was indexed; catch-ups are left to the next process.
    if (stop.stop_requested()) break;
    if (catch_ups && std::chrono::steady_clock::now() >= retry_at_) {
      if (!catch_ups_.empty()) {
        auto first = catch_ups_.begin();
        const std::string id = first->first;
        working_ = first->second;
        working_id_ = id;
        catch_ups_.erase(first);
        g.unlock();
        const bool ok = catch_up(id, stop);
        g.lock();
        if (ok) {
          backoff_ = std::chrono::milliseconds(0);
        } else if (!stop.stop_requested()) {
          catch_ups_.emplace(id, kNoTicket);
          backoff_ = next_backoff(backoff_);
          retry_at_ = std::chrono::steady_clock::now() + backoff_;
        }
        working_.reset();
        working_id_.clear();
        tried_.notify_all();
      } else {
        sweep_ = false;
        g.unlock();
        sweep(stop);
        g.lock();
      }
      continue;
    }
    if (catch_ups) work_.wait_until(g, stop, retry_at_, [&] { return !queue_.empty(); });
    else work_.wait(g, stop, [&] { return !queue_.empty(); });
  }
  // A search waiting on what is left would otherwise wait out its time.
  queue_.clear();
  queued_bytes_ = 0;
  catch_ups_.clear();
  tried_.notify_all();
}

} // namespace acp::store::pg
