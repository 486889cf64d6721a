#include "scripted_server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <variant>

namespace acp::llm::testing {

namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

net::awaitable<void> ServerConn::start_sse(std::string_view extra_headers) {
  std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                     "Transfer-Encoding: chunked\r\n";
  head += extra_headers;
  head += "\r\n";
  co_await write(head);
}

net::awaitable<void> ServerConn::chunk(std::string_view data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out = size;
  out += data;
  out += "\r\n";
  co_await write(out);
}

net::awaitable<void> ServerConn::end_chunks() { co_await write("0\r\n\r\n"); }

net::awaitable<void> ServerConn::respond(int status, std::string_view body, std::string_view extra_headers) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " Scripted\r\nContent-Type: application/json\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += extra_headers;
  out += "\r\n";
  out += body;
  co_await write(out);
}

std::string sse_chunk_event(std::string_view delta_json, std::string_view finish_reason) {
  std::string fr = finish_reason.empty() ? "null" : "\"" + std::string(finish_reason) + "\"";
  return "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,"
         "\"delta\":" +
         std::string(delta_json) + ",\"finish_reason\":" + fr + "}]}\n\n";
}

struct ScriptedServer::Impl {
  std::vector<Script> scripts;
  std::optional<ssl::context> tls;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::thread thread;

  mutable std::mutex mutex;
  mutable std::condition_variable changed;  // first_write_failure was set
  int connections = 0;
  int failed_handshakes = 0;
  std::vector<RecordedRequest> requests;
  std::optional<Clock::time_point> first_write_failure;

  net::awaitable<void> accept_loop();
  net::awaitable<void> serve(tcp::socket socket, int index);
};

namespace {

using Stream = std::variant<tcp::socket, ssl::stream<tcp::socket>>;

class Conn final : public ServerConn {
public:
  Conn(Stream& stream, RecordedRequest request, std::function<void()> on_write_failure)
      : stream_(stream), request_(std::move(request)), on_write_failure_(std::move(on_write_failure)) {}
  const RecordedRequest& request() const override { return request_; }

  net::awaitable<void> write(std::string_view bytes) override {
    try {
      co_await std::visit([&](auto& s) { return net::async_write(s, net::buffer(bytes), net::use_awaitable); },
                          stream_);
    } catch (...) {
      on_write_failure_();
      throw;
    }
  }

  net::awaitable<void> sleep(std::chrono::milliseconds ms) override {
    net::steady_timer t(co_await net::this_coro::executor, ms);
    co_await t.async_wait(net::use_awaitable);
  }

private:
  Stream& stream_;
  RecordedRequest request_;
  std::function<void()> on_write_failure_;
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

net::awaitable<RecordedRequest> read_request(Stream& stream) {
  std::string data;
  std::size_t header_end = co_await std::visit(
      [&](auto& s) { return net::async_read_until(s, net::dynamic_buffer(data), "\r\n\r\n", net::use_awaitable); },
      stream);
  RecordedRequest req;
  std::string head = data.substr(0, header_end);
  std::size_t pos = head.find("\r\n");
  std::string line = head.substr(0, pos);
  auto sp1 = line.find(' ');
  auto sp2 = line.find(' ', sp1 + 1);
  req.method = line.substr(0, sp1);
  req.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  while (pos + 2 < head.size()) {
    auto next = head.find("\r\n", pos + 2);
    std::string h = head.substr(pos + 2, next - pos - 2);
    pos = next;
    auto colon = h.find(':');
    if (colon == std::string::npos)
      continue;
    std::string value = h.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    req.headers[lower(h.substr(0, colon))] = value;
  }
  std::size_t length = 0;
  if (auto it = req.headers.find("content-length"); it != req.headers.end())
    length = std::stoul(it->second);
  req.body = data.substr(header_end);
  if (req.body.size() < length) {
    std::size_t missing = length - req.body.size();
    std::string rest(missing, '\0');
    co_await std::visit(
        [&](auto& s) { return net::async_read(s, net::buffer(rest), net::use_awaitable); }, stream);
    req.body += rest;
  }
  co_return req;
}

} // namespace

net::awaitable<void> ScriptedServer::Impl::accept_loop() {
  for (int index = 0;; ++index) {
    tcp::socket socket = co_await acceptor.async_accept(net::use_awaitable);
    {
      std::lock_guard lock(mutex);
      ++connections;
    }
    net::co_spawn(ioc, serve(std::move(socket), index), net::detached);
  }
}

net::awaitable<void> ScriptedServer::Impl::serve(tcp::socket socket, int index) {
  socket.set_option(tcp::no_delay(true));
  std::optional<Stream> stream;
  try {
    if (tls) {
      stream.emplace(std::in_place_index<1>, std::move(socket), *tls);
      try {
        co_await std::get<1>(*stream).async_handshake(ssl::stream_base::server, net::use_awaitable);
      } catch (...) {
        std::lock_guard lock(mutex);
        ++failed_handshakes;
        co_return;
      }
    } else {
      stream.emplace(std::in_place_index<0>, std::move(socket));
    }
    RecordedRequest req = co_await read_request(*stream);
    {
      std::lock_guard lock(mutex);
      requests.push_back(req);
    }
    Conn conn(*stream, std::move(req), [this] {
      std::lock_guard lock(mutex);
      if (!first_write_failure) {
        first_write_failure = Clock::now();
        changed.notify_all();
      }
    });
    if (static_cast<std::size_t>(index) < scripts.size())
      co_await scripts[index](conn);
    else
      co_await conn.respond(500, R"({"error":{"message":"scripted server: unexpected connection"}})");
  } catch (...) {
    // The client went away or broke the framing: nothing more to serve on this connection.
  }
  if (stream) {
    boost::system::error_code ec;
    auto& sock = stream->index() == 0 ? std::get<0>(*stream) : std::get<1>(*stream).next_layer();
    sock.shutdown(tcp::socket::shutdown_send, ec);
    sock.close(ec);
  }
}

ScriptedServer::ScriptedServer(std::vector<Script> scripts, std::optional<TlsFiles> tls) : impl_(new Impl) {
  impl_->scripts = std::move(scripts);
  if (tls) {
    impl_->tls.emplace(ssl::context::tls_server);
    impl_->tls->use_certificate_chain_file(tls->cert_chain);
    impl_->tls->use_private_key_file(tls->key, ssl::context::pem);
  }
  tcp::endpoint ep(net::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(ep.protocol());
  impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor.bind(ep);
  impl_->acceptor.listen();
  net::co_spawn(impl_->ioc, impl_->accept_loop(), net::detached);
  impl_->thread = std::thread([impl = impl_.get()] { impl->ioc.run(); });
}

ScriptedServer::~ScriptedServer() {
  impl_->ioc.stop();
  impl_->thread.join();
}

unsigned short ScriptedServer::port() const { return impl_->acceptor.local_endpoint().port(); }

std::string ScriptedServer::base_url(std::string_view host, std::string_view path) const {
  return std::string(impl_->tls ? "https://" : "http://") + std::string(host) + ":" + std::to_string(port()) +
         std::string(path);
}

int ScriptedServer::connections() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->connections;
}

std::vector<RecordedRequest> ScriptedServer::requests() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->requests;
}

int ScriptedServer::failed_handshakes() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->failed_handshakes;
}

ScriptedServer::Clock::time_point ScriptedServer::wait_first_write_failure() const {
  std::unique_lock lock(impl_->mutex);
  impl_->changed.wait(lock, [&] { return impl_->first_write_failure.has_value(); });
  return *impl_->first_write_failure;
}

} // namespace acp::llm::testing
