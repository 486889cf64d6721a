// PgStore's indexer: the texts of a writer's committed batches go into dsh_acp.search on a thread and
// a connection of their own, so a prompt's batches pay neither the words nor the GIN index
// (docs/recall.md#postgresql-stores). The queue is bounded and never blocks a writer: a batch that
// finds it full leaves its session to a catch-up from the lines (PgStore::index_session), which the
// indexer runs once the queue is empty. What is still queued at shutdown is indexed before the
// thread is joined; what a crash loses stays behind sessions.indexed_count, where any later catch-up
// of the owner finds it.
#pragma once

#include "store/pg/connection.hpp"
#include "store/pg/pg_appender.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace acp::store::pg {

class PgStore;

class SearchIndexer {
public:
  /// The thread starts with the first submit(); it connects to `url` as the store does.
  SearchIndexer(PgStore& store, std::string url, ConnectOptions options);
  /// Indexes what is queued (unless the server cannot be reached), then joins the thread.
  ~SearchIndexer();
  SearchIndexer(const SearchIndexer&) = delete;
  SearchIndexer& operator=(const SearchIndexer&) = delete;

  /// The texts of own session `id`'s lines [first, next), just committed (rows without their words:
  /// add_search_texts). Joined to the session's queued batch when it ends at `first`. Never blocks
  /// on the database.
  void submit(const std::string& id, std::int64_t first, std::int64_t next, std::vector<SearchRow> rows);
  /// Forgets what is queued for `id` (deleted: a session made again under its id must not get its texts).
  void drop(const std::string& id);
  /// A batch of `id` is queued, being indexed or left to a catch-up here.
  bool pending(const std::string& id);
  /// Waits up to `timeout` until everything submitted before the call was tried (indexed, or left to
  /// a later catch-up by a failure); false on timeout.
  bool wait_settled(std::chrono::milliseconds timeout);

  /// Queued batches and their text bytes at most; past either, a batch is left to a catch-up.
  static constexpr std::size_t kQueueBatches = 1024;
  static constexpr std::size_t kQueueBytes = 16u << 20;
  /// How long a batch waits for the next of its session before it is indexed, unless a search of this
  /// store waits for it: a turn's batches go in one transaction rather than several, and the writer's
  /// next batches are not contended by the indexer's statements as much.
  static constexpr std::chrono::milliseconds kGather{10};
  /// Sessions remembered for a catch-up at most; past that, every session of the role's that lags
  /// is looked for (PgStore::stale_sessions).
  static constexpr std::size_t kCatchUpIds = 4096;

private:
  struct Batch {
    std::string id;
    std::int64_t first = 0, next = 0;
    std::vector<SearchRow> rows;
    std::size_t bytes = 0;
    std::uint64_t ticket = 0;  ///< the oldest submit() it holds
    std::chrono::steady_clock::time_point queued;
  };

  void run(std::stop_token stop);
  /// One queued batch, or a catch-up of its session when the batch does not continue its texts.
  /// False when the database failed it (the session is caught up later).
  bool index(Batch& b, std::stop_token stop);
  bool catch_up(const std::string& id, std::stop_token stop);
  void sweep(std::stop_token stop);
  PgConnection& connection();
  /// The smallest ticket not tried yet (~0 when none); mu_ held.
  std::uint64_t oldest_pending() const;

  PgStore& store_;
  const std::string url_;
  const ConnectOptions options_;
  std::optional<PgConnection> conn_;  ///< the thread's

  std::mutex mu_;
  std::condition_variable_any work_;  ///< something queued, or the stop
  std::condition_variable tried_;      ///< a ticket tried
  std::deque<Batch> queue_;            ///< guarded by mu_, as everything below
  std::size_t queued_bytes_ = 0;
  std::map<std::string, std::uint64_t> catch_ups_;  ///< session -> its oldest ticket (~0: none)
  bool sweep_ = false;
  std::uint64_t issued_ = 0;                          ///< the last ticket given
  std::optional<std::uint64_t> working_;              ///< the ticket being tried
  std::string working_id_;
  std::chrono::steady_clock::time_point retry_at_{};  ///< catch-ups wait for it after a failure
  std::chrono::milliseconds backoff_{0};
  std::size_t waiting_ = 0;  ///< searches in wait_settled(): nothing is gathered meanwhile
  std::jthread thread_;
};

} // namespace acp::store::pg
