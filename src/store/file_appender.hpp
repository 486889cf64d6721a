// The file backend's Appender: a log file in a SessionStore root, guarded by its flock. The first
// write publishes the file atomically with its header (docs/store-format.md#creating-and-appending);
// later writes append (one zstd frame or raw lines per batch) and roll back to the previous length on
// failure.
#pragma once

#include "store/backend.hpp"
#include "store/content_index.hpp"
#include "store/file_io.hpp"
#include "store/session_lock.hpp"
#include "store/session_store.hpp"

#include <optional>

namespace acp::store {

class FileAppender final : public Appender {
public:
  /// `stamp`: the file `fd` is open on as the store last saw it (nothing when the log is new).
  FileAppender(SessionStore& store, SessionLock lock, UniqueFd fd, FileStamp stamp = {})
      : store_(&store), lock_(std::move(lock)), fd_(std::move(fd)), stamp_(stamp) {}

  void write(KnownLog& log, const std::string& lines, const std::vector<boost::json::object>& records,
             bool sync) override;
  void write_plain(KnownLog& log, const std::string& lines, std::int64_t count, bool sync) override;
  void committed(const KnownLog& log) override;
  void sync(KnownLog& log) override;
  bool held() const noexcept override { return lock_.held(); }
  void release() noexcept override {
    lock_.release();
    fd_.reset();
  }
  /// Publishes a new log with this header line (verbatim, ending in '\n') instead of one built
  /// from the header: a log copied from another store keeps its bytes (import_lines).
  void set_header_line(std::string line) { header_line_ = std::move(line); }

private:
  void publish(KnownLog& log, const std::string& lines);
  /// write()'s work, given the batch's first seq (-1: unknown) and whether it holds any event.
  void write_batch(KnownLog& log, const std::string& lines, std::int64_t first_seq, bool any, bool sync);

  SessionStore* store_;
  SessionLock lock_;
  UniqueFd fd_;
  FileStamp stamp_;  ///< the file after our last write: appends go at stamp_.size
  bool unsynced_ = false;
  /// The last write's texts, for the content index once committed (only while it is open).
  std::optional<CommittedEvents> batch_;
  std::string header_line_;  ///< "" = built from log.header
};

} // namespace acp::store
