// The single writer of the frame stream: bounded in bytes, fair between sessions.
//
// Frames are queued per stream key (a session id; "" for the connection's own frames) and the
// writer serves the keys that have some in turn by bytes (deficit round robin, a few KiB per
// turn), so one session's bulk output (a replay) delays another session's frames by about as many
// bytes as they need themselves plus the write in progress (small while keys compete). Within a
// key, order is kept. Two ways in:
//  - send() waits until the frames fit: everything queued stays within `max_bytes`, and one key
//    within `per_key_bytes` (a frame larger than a limit waits until that queue is empty). The
//    awaiting coroutine is suspended meanwhile (no polling); false = dropped (abort, peer gone).
//  - push() queues at once, for producers that cannot wait (a provider's synchronous delta sink);
//    it never overtakes a waiting send() of its key. Such producers await room() before producing
//    more, which bounds what they add to about one provider read each.
// ready() is the reader's gate: no request is read while the queue is full or many senders wait. close() is an end marker: run()
// returns once everything queued is written. abort() drops what is queued, releases waiting
// senders and ends a pending write; a write failure (EPIPE) does the same and calls on_broken.
// Everything runs on the connection's executor.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace acp::transport {

class Transport;

class Outbox {
public:
  static constexpr std::size_t kDefaultMaxBytes = 16u << 20;
  static constexpr std::size_t kPerKeyBytes = 256u << 10;
  /// ready() also waits while this many send() calls are suspended (each holds frames and a request).
  static constexpr std::size_t kMaxWaitingSenders = 64;

  /// `per_key_bytes` is capped at `max_bytes`.
  Outbox(boost::asio::any_io_executor executor, Transport& transport, std::size_t max_bytes = kDefaultMaxBytes,
         std::size_t per_key_bytes = kPerKeyBytes);
  ~Outbox();
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  /// Queues frames (without their newlines) on `key` once they fit, in order, frame by frame.
  boost::asio::awaitable<bool> send(std::string key, std::vector<std::string> frames);
  /// Queues one frame (without its newline) now.
  void push(const std::string& key, std::string frame);
  /// Returns once a push() producer of `key` may produce more: queued bytes below the limit and the
  /// key's own queue below `per_key_bytes` (a running turn streams no faster than its client
  /// reads), or at once after abort() or when the awaiting coroutine is cancelled.
  boost::asio::awaitable<void> room(const std::string& key);
  /// Returns once a new request may be read: queued bytes below the limit and few senders waiting.
  boost::asio::awaitable<void> ready();
  /// From now on ready() returns at once (the reader is stopping and must not wait for room).
  void release_reader();

  /// The writer loop: returns after close() once everything is written, after abort(), or after a
  /// write failure.
  boost::asio::awaitable<void> run();
  /// No more frames will come; run() writes what is queued or waiting and returns.
  void close();
  /// Drops everything now: queued frames, waiting senders (they return false), the pending write.
  void abort();
  /// The peer stopped reading (write error, or the transport noticed): logged, abort(), on_broken.
  void fail(const std::string& why);
  /// Called once when the peer turns out to be gone.
  void on_broken(std::function<void()> fn);

  bool broken() const;
  /// Bytes queued and not yet written (the batch being written included).
  std::size_t queued_bytes() const;
  /// The most queued_bytes() has ever been (tests of the bound).
  std::size_t peak_queued_bytes() const;
  /// Whether a ready() call is waiting now (tests: the reader has stopped for room).
  bool reader_waiting() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace acp::transport
