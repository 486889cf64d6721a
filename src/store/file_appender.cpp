#include "store/file_appender.hpp"

#include "support/json_text.hpp"
#include "store/errors.hpp"
#include "store/event_model.hpp"
#include "store/line_text.hpp"
#include "store/records.hpp"
#include "store/session_store.hpp"
#include "store/zstd_frames.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace acp::store {

void FileAppender::publish(KnownLog& log, const std::string& lines) {
  // Lazy atomic creation (docs/store-format.md#creating-and-appending): the file appears complete or not at all.
  const std::string header_line =
      header_line_.empty() ? support::to_json_text(header_record(log.header)) + "\n" : header_line_;
  check_log_text(header_line, log.path);
  check_log_text(lines, log.path, 2);
  std::string bytes;
  if (store_->encoding() == Encoding::zstd) {
    bytes = compress_frame(header_line);
    if (!lines.empty()) bytes += compress_frame(lines);
  } else {
    bytes = header_line + lines;
  }
  const std::string dir = log.path.substr(0, log.path.rfind('/'));
  // The bucket (or the whole root) may have been removed since create(); new entries must be durable too.
  store_->ensure_log_dirs(log.path);
  const std::string tmp = log.path + "." + random_hex12() + ".tmp";
  {
    UniqueFd t = open_nofollow(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (!t) throw_errno("create", tmp, errno);
    try {
      if (::fchmod(t.get(), 0600) != 0) throw_errno("chmod", tmp, errno);
      write_all(t.get(), bytes, tmp);
      fsync_fd(t.get(), tmp);
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
  }
  if (::link(tmp.c_str(), log.path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    if (err == EEXIST) throw SessionExists(log.header.id);
    throw_errno("link", log.path, err);
  }
  fsync_dir(dir);
  ::unlink(tmp.c_str());
  fd_ = open_nofollow(log.path, O_RDWR);
  if (!fd_) throw_errno("open", log.path, errno);
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) throw_errno("stat", log.path, errno);
  log.on_disk = true;
  stamp_ = file_stamp(st);
  stamp_.size = bytes.size();
}

void FileAppender::write(KnownLog& log, const std::string& lines, const std::vector<boost::json::object>& records,
                         bool sync) {
  const boost::json::value* seq = records.empty() ? nullptr : records.front().if_contains("seq");
  write_batch(log, lines, seq && seq->is_int64() ? seq->get_int64() : -1, !records.empty(), sync);
}

void FileAppender::write_plain(KnownLog& log, const std::string& lines, std::int64_t count, bool sync) {
  write_batch(log, lines, log.state.count(), count > 0, sync);
}

void FileAppender::write_batch(KnownLog& log, const std::string& lines, std::int64_t first_seq, bool any,
                               bool sync) {
  batch_.reset();
  if (store_->content_live_.load() && any) {
    // The batch's own text, so the indexer never reads the log back; finding the texts in it is
    // the indexer's work, off the prompt's path.
    CommittedEvents b;
    b.first_seq = first_seq;
    b.lines = lines;
    b.reread = b.first_seq < 0;
    batch_ = std::move(b);
  }
  if (!log.on_disk) {
    publish(log, lines);  // fsynced as part of publication
  } else {
    check_log_text(lines, log.path);
    std::string compressed;
    const bool zstd = store_->encoding() == Encoding::zstd;
    if (zstd) compressed = compress_frame(lines);
    const std::string& bytes = zstd ? compressed : lines;
    try {
      pwrite_all(fd_.get(), bytes, stamp_.size, log.path);
      if (sync) fsync_fd(fd_.get(), log.path);
    } catch (...) {
      // Roll back to the previous length so the log never keeps half a batch.
      if (::ftruncate(fd_.get(), off_t(stamp_.size)) == 0) (void)::fsync(fd_.get());
      throw;
    }
    stamp_.size += bytes.size();
    unsynced_ = !sync;
  }
  struct stat st {};
  if (::fstat(fd_.get(), &st) == 0) stamp_.mtime_ns = mtime_ns(st);
}

void FileAppender::committed(const KnownLog& log) {
  store_->remember(log, stamp_);
  ContentIndex* index = store_->content_live_.load();
  if (!index || !batch_) return;
  CommittedEvents b = std::move(*batch_);
  batch_.reset();
  b.id = log.id;
  b.path = log.path;
  b.size = stamp_.size;
  b.ino = stamp_.ino;
  b.mtime_ns = stamp_.mtime_ns;
  b.end_seq = log.state.count();
  index->post(std::move(b));
}

void FileAppender::sync(KnownLog& log) {
  if (unsynced_ && fd_) {
    fsync_fd(fd_.get(), log.path);
    unsynced_ = false;
  }
}

} // namespace acp::store
