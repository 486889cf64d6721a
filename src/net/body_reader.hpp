// The body of an HTTP response read piece by piece into a buffer of ours, as it arrives: an SSE event
// must not wait for a full buffer, and the caller bounds what it keeps. Beast's buffer_body parser,
// with the pieces' size computed from what the parser left of the lent buffer.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <cstddef>
#include <string_view>
#include <utility>

namespace acp::net {

template <std::size_t ChunkBytes = 16 * 1024>
class BodyReader {
public:
  using Parser = boost::beast::http::response_parser<boost::beast::http::buffer_body>;

  BodyReader() { parser_.body_limit(boost::none); }  // the caller counts what it keeps

  Parser& parser() { return parser_; }
  boost::beast::flat_buffer& buffer() { return buffer_; }
  bool done() const { return parser_.is_done(); }

  /// The next piece of the body (possibly empty) and the read's error (a full chunk is none).
  template <class Stream>
  boost::asio::awaitable<std::pair<std::string_view, boost::system::error_code>> next(Stream& stream) {
    parser_.get().body().data = chunk_.data();
    parser_.get().body().size = chunk_.size();
    auto [ec, unused] = co_await boost::beast::http::async_read_some(stream, buffer_, parser_,
                                                                      boost::asio::as_tuple(boost::asio::use_awaitable));
    (void)unused;
    if (ec == boost::beast::http::error::need_buffer) ec = {};
    co_return std::pair{std::string_view(chunk_.data(), chunk_.size() - parser_.get().body().size), ec};
  }

private:
  boost::beast::flat_buffer buffer_;
  Parser parser_;
  std::array<char, ChunkBytes> chunk_;
};

} // namespace acp::net
