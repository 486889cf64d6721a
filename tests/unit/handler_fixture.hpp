// What the tests that call handlers directly stand in for the connection with: a ClientChannel that
// records everything sent to the client and answers our requests from a script (or has no client),
// and a HandlerContext over a fixture engine that sends through one.
#pragma once

#include "engine_fixture.hpp"

#include "handlers/client_channel.hpp"
#include "handlers/handler_context.hpp"
#include "handlers/text_chunks.hpp"
#include "protocol/wire.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/json.hpp>

#include <functional>
#include <string>
#include <variant>
#include <vector>

namespace engine_fixture {

class RecordingChannel final : public acp::handlers::ClientChannel {
public:
  /// The client's answer to a request of ours (its `result`; throw protocol::ClientCallFailed or
  /// ClientCallAborted for the other outcomes). Unset: there is no client to ask.
  using Client = std::function<asio::awaitable<json::value>(std::string method, json::value params)>;
  Client client;

  /// Every frame sent, in order: notifications serialised as the connection does, replays' batches.
  std::vector<std::string> frames;
  /// The notifications among them (notify, notify_frame), read back from their frames where they
  /// came serialised.
  std::vector<acp::protocol::SessionNotification> notes;
  /// The frames that came in send_frames batches (session/load's replay).
  std::vector<std::string> replayed;

  void notify(const acp::protocol::SessionNotification& note) override {
    frames.push_back(acp::handlers::notification_frame(note));
    notes.push_back(note);
  }
  void notify_frame(const std::string&, std::string frame) override {
    notes.push_back(acp::wire::decode<acp::protocol::SessionNotification>(json::parse(frame).at("params")));
    frames.push_back(std::move(frame));
  }
  asio::awaitable<bool> send_frames(std::string, std::vector<std::string> batch) override {
    for (auto& frame : batch) {
      replayed.push_back(frame);
      frames.push_back(std::move(frame));
    }
    return accepted();
  }
  bool has_client() const noexcept override { return static_cast<bool>(client); }
  asio::awaitable<json::value> call_client(std::string, std::string method, json::value params) override {
    return client(std::move(method), std::move(params));
  }
  asio::awaitable<void> room(const std::string&) override { co_return; }

  /// The updates of kind T among the notifications from `from` on.
  template <class T> std::vector<const T*> updates(std::size_t from = 0) const {
    std::vector<const T*> out;
    for (std::size_t i = from; i < notes.size(); ++i)
      if (const auto* u = std::get_if<T>(&notes[i].update)) out.push_back(u);
    return out;
  }

private:
  static asio::awaitable<bool> accepted() { co_return true; }
};

/// A HandlerContext over one engine of the fixture, its client a RecordingChannel (without a client
/// to ask until with_client).
struct Wire {
  Wire(engine::Engine& engine, Fixture& f) : ctx{engine, f.config, f.io.get_executor(), channel} {}
  Wire(Process& p, Fixture& f) : Wire(p.engine, f) {}
  Wire(const Wire&) = delete;
  Wire& operator=(const Wire&) = delete;

  /// A client that answers our requests with `answer` and said at initialize it can do `capabilities`.
  void with_client(RecordingChannel::Client answer, json::object capabilities = {}) {
    channel.client = std::move(answer);
    ctx.client_capabilities = std::move(capabilities);
  }

  RecordingChannel channel;
  acp::handlers::HandlerContext ctx;
};

} // namespace engine_fixture
