// One write sequence on one session (docs/decisions.md#session-store): holds the session's write lock (through its
// backend's Appender) from construction to release, knows the log's committed state (refreshed and
// repaired on acquire), and appends batches with contiguous seqs. Batches may be left unsynced
// while streaming; sync() makes everything durable (step and turn ends). Obtained from a
// Backend's open / create; the logic here is the same for every backend.
#pragma once

#include "store/backend.hpp"
#include "store/chunk_lines.hpp"
#include "store/layout.hpp"
#include "store/new_event.hpp"
#include "store/session_types.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace acp::store {

class SessionWriter {
public:
  /// `generation`: the shape the lines are written in; `appender` holds the session's lock.
  SessionWriter(Generation generation, KnownLog log, std::unique_ptr<Appender> appender);
  SessionWriter(SessionWriter&&) noexcept;
  SessionWriter& operator=(SessionWriter&&) = delete;
  SessionWriter(const SessionWriter&) = delete;
  ~SessionWriter();  // syncs nothing: call sync() for durability; releases the lock

  const SessionHeader& header() const noexcept { return log_.header; }
  const std::string& path() const noexcept { return log_.path; }
  /// Seq the next appended event gets (= number of events in the log).
  std::int64_t next_seq() const noexcept { return log_.state.count(); }
  /// Highest turn number of any turn/start (0 if none): the next turn is last_turn() + 1.
  std::int64_t last_turn() const noexcept { return log_.state.last_turn(); }
  std::int64_t last_time() const noexcept { return log_.state.last_time(); }
  const std::optional<TitleInfo>& title() const noexcept { return log_.state.title(); }
  bool turn_open() const noexcept { return log_.state.turn_open(); }
  /// True once the log file exists (the first append publishes it).
  bool on_disk() const noexcept { return log_.on_disk; }

  /// Assigns seqs and times, writes the batch (one zstd frame / one write), returns the records
  /// exactly as written. Throws InvalidBatch for surface metadata misuse; on an I/O failure the
  /// file is rolled back to its previous length. `sync` fsyncs before returning.
  std::vector<boost::json::object> append(std::vector<NewEvent> batch, bool sync = false);

  /// A chunk batch to fill (numbered from next_seq()) and hand to append_chunk_lines().
  ChunkLines chunk_lines() const { return ChunkLines(next_seq()); }
  /// Writes a chunk batch as append() would write the same events (the lines are the same in both
  /// generations), without records: nothing is returned. Throws InvalidBatch when the batch does not
  /// continue the log.
  void append_chunk_lines(const ChunkLines& batch, bool sync = false);

  /// Appends complete records; the first seq must equal next_seq() and seqs must be contiguous.
  void append_records(const std::vector<boost::json::object>& records, bool sync = false);

  /// fsync of everything appended so far (no-op when nothing is pending).
  void sync();

  /// Syncs pending data and releases the lock; the writer is unusable afterwards.
  void release();

private:
  void write_bytes(const std::vector<boost::json::object>& records, bool sync);
  void ensure_usable() const;

  Generation generation_;
  KnownLog log_;
  std::unique_ptr<Appender> appender_;
  std::string compaction_id_;
  bool released_ = false;  ///< 0.1: the open compaction's id (compact/start .. compact/end)
};

} // namespace acp::store
