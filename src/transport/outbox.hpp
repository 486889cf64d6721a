// The single writer of the frame stream.
//
// Everything that reaches the client goes through send(); run() is the only code that writes the
// frame descriptor. Frames are written whole, in send() order. close() is an end marker, not an
// abort: run() returns only after every frame queued before it has been written (Asio 1.81's
// channel::close() drops buffered items, which is why this is a queue plus a wake-up timer).
// All members are used on the connection's executor only.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <memory>
#include <string>

namespace acp::transport {

class Outbox {
public:
  Outbox(boost::asio::any_io_executor executor, int fd);
  ~Outbox();
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  /// Queues one frame (without its newline).
  void send(std::string frame);
  /// No more frames will be sent; run() drains the queue and returns.
  void close();
  /// The writer loop. A write error (client gone) is logged and drops later frames.
  boost::asio::awaitable<void> run();
  /// True once the peer stopped reading (EPIPE or another write error).
  bool broken() const;
  /// Bytes queued and not yet written; safe to read from any thread (replay backpressure).
  std::size_t queued_bytes() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace acp::transport
