// The byte stream under one ACP connection (clangd's Transport): input read in pieces, output
// written whole. Implementations: stdio (the process's pipes) and memory (in-process tests).
// Every call is made on the connection's executor; at most one read, one write and one
// of each watch are pending at a time.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <span>
#include <string_view>

namespace acp::transport {

struct ReadResult {
  boost::system::error_code error;  ///< eof at the end of input; operation_aborted after cancel_read()
  std::size_t bytes = 0;
};

class Transport {
public:
  virtual ~Transport() = default;

  /// Reads at least one byte unless it fails.
  virtual boost::asio::awaitable<ReadResult> read_some(std::span<char> buffer) = 0;
  /// Writes all of `data`, or fails (broken_pipe: the peer stopped reading; operation_aborted).
  virtual boost::asio::awaitable<boost::system::error_code> write(std::string_view data) = 0;
  /// True once the peer has closed its end of the input, noticed even while nothing is read (input
  /// may still be buffered). False after cancel_read(), or at once if the stream cannot tell.
  virtual boost::asio::awaitable<bool> input_closed() = 0;
  /// True once the peer can no longer receive output, noticed even while nothing is written (a
  /// pipe whose reader closed). False after cancel_write(), or at once if the stream cannot tell.
  virtual boost::asio::awaitable<bool> output_closed() = 0;

  /// Ends a pending read and a pending input_closed(); no read follows.
  virtual void cancel_read() = 0;
  /// Ends a pending write (its unwritten part is dropped) and a pending output_closed(); no write follows.
  virtual void cancel_write() = 0;
};

} // namespace acp::transport
