// An in-process transport for tests (clangd's LSPClient side): the test plays the client on the
// same executor, writing input bytes and taking output bytes. Output behaves like a pipe with a
// fixed capacity: once that much is unread, the server's write waits, exactly as with a client
// that stopped reading stdout.
#pragma once

#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace acp::transport {

class MemoryTransport final : public Transport {
public:
  explicit MemoryTransport(boost::asio::any_io_executor executor, std::size_t output_capacity = 64 * 1024);
  ~MemoryTransport() override;

  // ---- the server's side ----
  boost::asio::awaitable<ReadResult> read_some(std::span<char> buffer) override;
  boost::asio::awaitable<boost::system::error_code> write(std::string_view data) override;
  boost::asio::awaitable<bool> input_closed() override;
  boost::asio::awaitable<bool> output_closed() override;
  void cancel_read() override;
  void cancel_write() override;

  // ---- the client's side ----
  void client_write(std::string_view bytes);
  /// End of input (the client closed stdin).
  void client_close_input();
  /// Takes every output byte written so far (frees the pipe for the server's next writes).
  std::string client_read();
  /// Waits until unread output exists or `timeout` passes; false on timeout.
  boost::asio::awaitable<bool> client_wait_output(std::chrono::milliseconds timeout);
  /// The client's reader died: pending and later writes fail with broken_pipe.
  void client_close_output();

  /// Input bytes the server has read so far (backpressure tests: reading stopped).
  std::size_t input_consumed() const;
  /// Unread output bytes.
  std::size_t output_pending() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace acp::transport
