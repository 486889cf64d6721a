// Error types of the session store. Each one maps to exactly one wire outcome in the host
// (handlers/errors.cpp, the table in docs/decisions.md#errors-on-the-wire), so callers catch by type
// instead of parsing messages:
//   StoreCorrupt   -> -32603 "Session log unreadable: <file>:<line>: <why>" (SESSION_LOG_CORRUPT)
//   FoldError      -> the same, "invalid session surface: <message>"
//   SessionBusy    -> -32603 "Session busy" (SESSION_BUSY)
//   SessionNotFound -> -32002, as a session not open here (SESSION_REFERENCE_READ_FAILED for a reference)
//   SessionExists  -> -32603 "Session exists" (SESSION_EXISTS)
//   InvalidBatch (incl. InvalidLogText) -> -32603 "Session log write refused" (SESSION_WRITE_REFUSED)
//   InvalidSessionId (incl. IdTooLong), SessionReadOnly -> -32602 at /sessionId
//   ReadCancelled  -> the caller asked to stop (never reported as a failure)
// Everything else the store throws (EncodingMismatch, SharingUnsupported, a plain StoreError) is
// an internal error.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace acp::store {

/// Base of every store failure.
class StoreError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A stored log cannot be read (docs/store-format.md#reading-the-committed-prefix): names the file
/// and the 1-based line. The store never modifies a log after raising this.
class StoreCorrupt : public StoreError {
public:
  StoreCorrupt(std::string file, std::int64_t line, std::string reason)
      : StoreError(file + ":" + std::to_string(line) + ": " + reason),
        file_(std::move(file)), line_(line), reason_(std::move(reason)) {}
  const std::string& file() const noexcept { return file_; }
  std::int64_t line() const noexcept { return line_; }
  const std::string& reason() const noexcept { return reason_; }

private:
  std::string file_;
  std::int64_t line_;
  std::string reason_;
};

/// The per-session lock was not obtained in time: another process writes the session.
class SessionBusy : public StoreError {
public:
  explicit SessionBusy(const std::string& id) : StoreError("session busy: " + id) {}
};

/// The session id cannot name a file (empty).
class InvalidSessionId : public StoreError {
public:
  using StoreError::StoreError;
};

/// The encoded file name of the id would exceed NAME_MAX (255 bytes).
class IdTooLong : public InvalidSessionId {
public:
  using InvalidSessionId::InvalidSessionId;
};

/// No log exists for the id.
class SessionNotFound : public StoreError {
public:
  explicit SessionNotFound(const std::string& id) : StoreError("session \"" + id + "\" not found"), id_(id) {}
  const std::string& id() const noexcept { return id_; }

private:
  std::string id_;
};

/// The session may be read but not written: its root is read-only (a discovered harness root),
/// or it is a flat-layout log found inside a 0.1 root (docs/store-format.md#project-layout-01).
class SessionReadOnly : public StoreError {
public:
  SessionReadOnly(const std::string& id, const std::string& why)
      : StoreError("session \"" + id + "\" is read-only: " + why) {}
};

/// create() or a first import of an id that already has a log.
class SessionExists : public StoreError {
public:
  explicit SessionExists(const std::string& id) : StoreError("session \"" + id + "\" already exists"), id_(id) {}
  const std::string& id() const noexcept { return id_; }

private:
  std::string id_;
};

/// The store cannot mark sessions shared: it has no people (a file root is one person's files).
class SharingUnsupported : public StoreError {
public:
  using StoreError::StoreError;
};

/// The root holds the other encoding than the one requested, or holds both (incompatible artifact).
class EncodingMismatch : public StoreError {
public:
  using StoreError::StoreError;
};

/// foldSurface() rejected the event sequence (docs/store-format.md#folding); what() is the fold message.
class FoldError : public StoreError {
public:
  using StoreError::StoreError;
};

/// A read was stopped through its stop_token before it finished.
class ReadCancelled : public StoreError {
public:
  ReadCancelled() : StoreError("session log read was cancelled") {}
};

/// A batch handed to append() or import_lines() is malformed (bad seq, surface metadata on a
/// non-surface type, an imported line a reader would refuse...): nothing of it was written.
class InvalidBatch : public StoreError {
public:
  using StoreError::StoreError;
};

/// A line handed to a writer is not JSON text (its bytes are not valid UTF-8): nothing of its
/// batch was written, so no log can become unreadable.
class InvalidLogText : public InvalidBatch {
public:
  using InvalidBatch::InvalidBatch;
};

} // namespace acp::store
