// A session attached to this connection, and its running turn. Plain data used on the connection
// thread; the session's log work runs on `strand`.
#pragma once

#include "engine/conversation.hpp"
#include "engine/permissions.hpp"
#include "engine/work_queue.hpp"
#include "store/session_types.hpp"
#include "support/event.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/strand.hpp>

#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

namespace acp::engine {

/// The one cancellation object of a prompt turn, made when its session/prompt arrives (a queued
/// prompt can be cancelled before it runs). `signal` reaches the model stream (Asio terminal
/// cancellation); `stop` reaches reference preparation, which runs on reader threads of its own.
/// `finished` is set when the turn is over, waking anyone who waits for it.
struct Turn {
  explicit Turn(const boost::asio::any_io_executor& ex) : finished(ex) {}
  boost::asio::cancellation_signal signal;
  std::stop_source stop;
  support::Event finished;
  bool cancel_requested = false;
  bool done = false;

  void cancel() {
    if (cancel_requested || done) return;
    cancel_requested = true;
    stop.request_stop();
    signal.emit(boost::asio::cancellation_type::terminal);
  }
};

class McpTools;

/// Whose a session is (issue 17). A store without people (a file root) holds only the user's own.
struct Ownership {
  std::optional<std::string> owner;  ///< the person (role) owning it, in a store with people
  bool mine = true;                  ///< false: someone else's shared session, read-only here
  bool shared = false;               ///< its owner shared it
  bool can_share = false;            ///< its store can mark sessions shared (/share, the `shared` option)
};

struct Session {
  /// `executor`: the connection's thread (the queue's wake-ups); `strand_`: file work.
  Session(std::string id_, store::SessionHeader header_, const boost::asio::any_io_executor& executor,
          boost::asio::strand<boost::asio::any_io_executor> strand_)
      : id(std::move(id_)), header(std::move(header_)), strand(std::move(strand_)), queue(executor) {}
  std::string id;
  store::SessionHeader header;  ///< header.cwd is set: ACP sessions have one
  std::vector<std::string> additional_directories;
  boost::asio::strand<boost::asio::any_io_executor> strand;  ///< serialises this session's file work
  /// The conversation derived from the log, valid while the log has conversation.next_seq() events.
  Conversation conversation;
  bool conversation_known = false;
  std::shared_ptr<Turn> turn;   ///< the running prompt's, set while it holds the front of `queue`
  WorkQueue queue;              ///< prompts and loads in arrival order, one at a time
  std::string model;            ///< the session's model choice ("" = the configured model)
  std::string logged_provider;  ///< config of the log's latest request/header ("" = none yet)
  std::string logged_model;
  /// Another stored session was seen at a turn's start: recall is offered from then on without
  /// listing the stores again (a deletion meanwhile leaves a search that finds nothing).
  bool others_seen = false;
  bool closed = false;          ///< session/close or delete: a running prompt no longer updates it
  SessionMode mode = SessionMode::ask;  ///< what tool calls need (session/set_mode, the `mode` option)
  bool mode_unlogged = false;           ///< chosen since the log last said: Engine::log_mode writes it
  Permissions permissions;              ///< the user's "always" choices (restored from the log)
  std::shared_ptr<McpTools> mcp;        ///< the client's MCP servers; null = none
  Ownership ownership;                  ///< as the store said when the session was created or attached

  const std::string& cwd() const { return *header.cwd; }
};

} // namespace acp::engine
