// The session engine: sessions, turns, conversation assembly, store access, references and model
// providers behind plain C++ types. It knows nothing of ACP or JSON-RPC (nothing here includes
// protocol/ or handlers/); handlers translate wire structs to these calls and back.
//
// Where its work runs (threads, strands, lock waits, bulk reads, cancellation): scheduler.hpp.
#pragma once

#include "engine/ask_user.hpp"
#include "engine/permissions.hpp"
#include "engine/scheduler.hpp"
#include "engine/session.hpp"
#include "engine/tool_runner.hpp"
#include "llm/provider.hpp"
#include "refs/types.hpp"
#include "store/session_types.hpp"
#include "support/event.hpp"
#include "support/image.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

namespace acp::support {
struct Config;
}
namespace acp::store {
class Backend;
class StoreSet;
struct ListQuery;
}
namespace acp::refs {
class SessionReferenceService;
}

namespace acp::engine {

class TurnLog;

/// Unknown target session (not created, loaded or resumed here, or not stored).
class SessionNotFound : public std::runtime_error {
public:
  explicit SessionNotFound(std::string id) : std::runtime_error("session not found"), id_(std::move(id)) {}
  const std::string& session_id() const noexcept { return id_; }

private:
  std::string id_;
};

/// A write to someone else's shared session (prompt, /compact, /share): it is read-only here.
class ReadOnlySession : public std::runtime_error {
public:
  ReadOnlySession(const std::string& id, const std::string& owner)
      : std::runtime_error("session " + id + " belongs to " + owner + " and is read-only here") {}
};

/// Input the engine refuses; `path` is the JSON Pointer of the offending parameter.
class InvalidInput : public std::invalid_argument {
public:
  InvalidInput(std::string path, const std::string& message) : std::invalid_argument(message), path_(std::move(path)) {}
  const std::string& path() const noexcept { return path_; }

private:
  std::string path_;
};

/// A model provider failed (thrown by prompt() for every llm::ProviderError): the provider's error
/// with the name of the provider that failed, which an authentication failure names on the wire.
class ProviderFailed : public llm::ProviderError {
public:
  ProviderFailed(std::string provider, const llm::ProviderError& error)
      : llm::ProviderError(error), provider_(std::move(provider)) {}
  const std::string& provider() const noexcept { return provider_; }

private:
  std::string provider_;
};

/// The session store, opened on first use (opening sweeps the listing index, which must not delay
/// the answer to initialize). Thread-safe.
class StoreHandle {
public:
  /// Every configured root (issue 15: several roots list and serve as one).
  explicit StoreHandle(std::function<std::unique_ptr<store::StoreSet>()> open);
  /// One store of any backend.
  explicit StoreHandle(std::function<std::unique_ptr<store::Backend>()> open);
  ~StoreHandle();
  store::StoreSet& get();

private:
  std::function<std::unique_ptr<store::StoreSet>()> open_;
  std::once_flag once_;
  std::unique_ptr<store::StoreSet> store_;
};

/// A compaction that was written (the checkpoint is durable).
struct CompactionReport {
  std::int64_t checkpoint_seq = 0;
  std::size_t messages = 0;      ///< surface messages the checkpoint replaced
  std::size_t bytes = 0;         ///< UTF-8 bytes of their texts
  std::string summary;           ///< the summary text
  std::int64_t tokens_before = 0;  ///< estimated tokens of the request before and after
  std::int64_t tokens_after = 0;
};

/// What `/compact` did: a report, or why nothing was condensed.
struct CompactResult {
  enum class Kind { compacted, skipped, failed, cancelled } kind = Kind::skipped;
  std::string message;  ///< skipped: why; failed: the error
  CompactionReport report;
};

/// A tool call the user is asked to allow (session/request_permission).
struct PermissionQuestion {
  std::string call_id;
  std::string tool;
  std::string arguments;  ///< the model's raw JSON text
  /// What an "always" answer remembers, named in its options; none: "always" is not offered (a
  /// compound command, ...): asked each time.
  std::optional<PermissionRule> always;
};

/// One model call that answered (not failed, not cancelled): what it took, and how full the
/// session's context is after it.
struct ModelCallUsage {
  llm::Usage usage;   ///< the provider's count, else our estimate (llm/token_estimate.hpp)
  bool estimated = false;
  /// What the next request starts from: the request and the answer, without the reasoning
  /// (which is not sent back); a compaction's summary call reports the context it left.
  std::int64_t context_used = 0;
  std::optional<std::int64_t> context_window;  ///< the model's (Engine::context_window), when known
};

/// Where a streamed delta sits in the log: its step and its block (the `index` of its
/// assistant/chunk events; -1 before a block opened). A replay reads the same place from those
/// events: what a client is told about a message can be the same live and on session/load.
struct DeltaPlace {
  std::int64_t turn = 0;
  std::int64_t step = 0;
  std::int64_t block = -1;
};

/// What a running turn reports, in order, on the connection thread.
class TurnObserver {
public:
  virtual ~TurnObserver() = default;
  /// A compaction was written (live card) before the model's answer.
  virtual void compacted(const CompactionReport&) {}
  /// A model call answered: after each step's answer and each compaction's summary.
  virtual void model_call(const ModelCallUsage&) {}
  /// The reference card: the snapshot's seq and its durable source record.
  virtual void references(std::int64_t snapshot_seq, const boost::json::object& source) = 0;
  virtual void title(const std::string& title) = 0;
  virtual void delta(const llm::Delta& delta) = 0;
  /// A text or reasoning delta with its place; the default forgets the place.
  virtual void placed_delta(const llm::Delta& delta, const DeltaPlace&) { this->delta(delta); }
  /// Awaited before the model produces more: returns once the client can take more updates (or at
  /// once on cancellation). Back-pressure from the client to the provider; the default never waits.
  virtual boost::asio::awaitable<void> room() { co_return; }

  // ---- tools ----
  /// A record of a tool call was logged: tool/call (its card, pending), todo/write (a plan) or
  /// tool/result (the card completed or failed). The same records replay shows on session/load.
  virtual void tool_record(const boost::json::object&) {}
  /// A call starts running (allowed); `terminal_id` once it runs in the editor's terminal.
  virtual void tool_running(const std::string& /*call_id*/, const std::optional<std::string>& /*terminal_id*/) {}
  /// Asks the user; cancelling the awaiting operation withdraws the question (answer `cancelled`).
  /// The default has nobody to ask.
  virtual boost::asio::awaitable<PermissionAnswer> ask_permission(const PermissionQuestion&) {
    co_return PermissionAnswer::cancelled;
  }
  /// The editor the turn's tools work through; null (the default): the server does all.
  virtual std::shared_ptr<Editor> editor() { return nullptr; }
  /// Whether a question can reach the user (the ask_user tool is offered only then).
  virtual bool can_ask_user() { return false; }
  /// Puts the model's question to the user; cancelling the awaiting operation withdraws it.
  virtual boost::asio::awaitable<UserAnswer> ask_user(const UserQuestion&) { co_return UserAnswer{}; }
};

struct PromptInput {
  std::string text;  ///< the readable direct message (mentions as @label)
  std::vector<refs::SessionReference> references;
  /// Images, in text order: saved in the attachment store and logged as image blocks where they stand.
  std::vector<support::PlacedImage> images = {};
};

/// A stored session found for load or resume.
struct StoredSession {
  store::SessionHeader header;
  Ownership ownership;
};

/// session/fork: a new session of the caller's own that continues from `source_id`'s history
/// (store/fork_seed.hpp says which prefix and how it is written).
struct ForkRequest {
  std::string source_id;
  std::string cwd;  ///< the fork's; it need not be the source's
  std::vector<std::string> additional_directories;
  /// True for the first event of the source that shows the message to fork at (the caller knows
  /// messages; called in log order on a reader thread); empty: the whole log.
  std::function<bool(const boost::json::object&)> fork_point;
  std::string fork_point_path = "/_meta";  ///< its JSON Pointer in the request, for InvalidInput
  std::optional<std::string> message_id;  ///< the fork point as the client named it, for the log
};

/// Called on a pool thread for every raw event of a replayed log, in order.
using EventSink = std::function<void(boost::json::object&&)>;

struct EngineServices {
  const support::Config& config;
  llm::Provider& provider;
  StoreHandle& store;
  const refs::SessionReferenceService& references;
  std::string system_prompt_template;  ///< with {cwd} and {date} placeholders
};

/// What a turn (TurnRunner) needs of the engine that runs it, and nothing else: the services, where
/// work runs, the session's log and conversation, compaction, the model request and the other
/// sessions recall reads. Engine implements it; a turn sees no more of the engine than this.
class TurnHost {
public:
  virtual const support::Config& config() const = 0;
  virtual llm::Provider& provider() = 0;
  virtual const refs::SessionReferenceService& references() const = 0;
  virtual Scheduler& scheduler() = 0;
  /// The connection is shutting down (cancel_all()): a prompt cancelled in line writes nothing.
  virtual bool closing() const = 0;

  /// Opens the session's log for a turn (its write lock taken), a wait ended by `stop`; nullptr
  /// when the turn was cancelled while waiting for the lock.
  virtual boost::asio::awaitable<std::unique_ptr<TurnLog>> open_log(const std::shared_ptr<Session>& session,
                                                                   const std::shared_ptr<Turn>& turn,
                                                                   const std::stop_token& stop) = 0;
  /// Reads the conversation back from the log; false when `stop` ended the read.
  virtual boost::asio::awaitable<bool> refresh_conversation(Session& session, std::int64_t log_events,
                                                            const std::stop_token& stop) = 0;
  /// One compaction inside the open turn of `log` (docs/store-format.md#compaction); observes what it writes.
  virtual boost::asio::awaitable<CompactResult> run_compaction(const std::shared_ptr<Session>& session, TurnLog& log,
                                                               const std::shared_ptr<Turn>& turn,
                                                               TurnObserver& observer, const std::string& focus,
                                                               bool manual) = 0;

  virtual bool offers_models() const = 0;
  virtual std::string session_model(const Session& session) const = 0;
  virtual std::optional<std::int64_t> context_window(const std::string& model) const = 0;
  /// The system prompt and the conversation, for `model`.
  virtual llm::Request model_request(const Session& session, const std::string& model) const = 0;
  /// The request's estimated tokens, without building it (no copy of the conversation).
  virtual std::int64_t estimate_request(const Session& session) const = 0;

  virtual boost::asio::awaitable<bool> has_other_sessions(const std::string& id) = 0;
  virtual boost::asio::awaitable<std::vector<refs::ContentMatch>> search_sessions(const Session* session,
                                                                                  const std::string& words,
                                                                                  std::size_t limit,
                                                                                  std::stop_token stop) = 0;
  virtual void label_references(std::vector<refs::SessionReference>& references) = 0;

protected:
  ~TurnHost() = default;  // never deleted through this interface
};

class TurnRunner;

class Engine : private TurnHost {
public:
  /// `executor`: the connection's thread; `pool`: where file work runs.
  Engine(EngineServices services, boost::asio::any_io_executor executor, boost::asio::any_io_executor pool);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const support::Config& config() const noexcept override { return services_.config; }
  llm::Provider& provider() noexcept override { return services_.provider; }
  const refs::SessionReferenceService& references() const noexcept override { return services_.references; }
  boost::asio::any_io_executor pool() const { return scheduler_.pool(); }

  // ---- sessions of this connection ----

  /// Creates a session durably (its header is written and fsynced) and attaches it.
  /// (Coroutine arguments are taken by reference and copied before the first suspension: GCC 12
  /// destroys by-value class-type coroutine parameters twice when the call is co_awaited.)
  boost::asio::awaitable<std::shared_ptr<Session>> create_session(const std::string& cwd,
                                                                  const std::vector<std::string>& additional_directories);
  /// Creates a fork of a stored session durably (header and seed in one batch, fsynced) and attaches
  /// it: the caller's own and writable, whoever's the source was; the source is only read. Throws
  /// SessionNotFound as find_stored does (a session the person cannot see is not found), and
  /// InvalidInput(fork_point_path) when the fork point is not in the log.
  boost::asio::awaitable<std::shared_ptr<Session>> fork_session(const ForkRequest& request);
  /// Checks `additionalDirectories` (absolute, existing directories: the roots tools work in);
  /// throws InvalidInput(/additionalDirectories/N).
  boost::asio::awaitable<void> check_directories(const std::vector<std::string>& directories);
  /// Finds a stored session for load/resume, and whose it is; checks its cwd against `cwd`
  /// (InvalidInput /cwd). A session the person cannot see is not found, as one that does not exist.
  boost::asio::awaitable<StoredSession> find_stored(const std::string& id, const std::string& cwd);
  /// Streams a stored log's raw events to `sink` on the pool (replay; model restore); `boundary`,
  /// when set, runs there before the first and after the last event. Events are transient (see
  /// store::EventLifetime): the sink should let each go before it returns. Returns the log's latest
  /// request/header (provider, model), "" when none.
  boost::asio::awaitable<std::pair<std::string, std::string>> read_log(const std::string& id, const EventSink& sink,
                                                                      const std::function<void()>& boundary = {});
  /// Attaches a stored session (load/resume). A session already attached keeps its state, its
  /// ownership taken anew from `stored`.
  std::shared_ptr<Session> attach(const StoredSession& stored,
                                  const std::optional<std::vector<std::string>>& additional_directories,
                                  const std::string& logged_provider, const std::string& logged_model);
  /// As above, for a session of the user's own.
  std::shared_ptr<Session> attach(const store::SessionHeader& header,
                                  const std::optional<std::vector<std::string>>& additional_directories,
                                  const std::string& logged_provider, const std::string& logged_model);
  std::shared_ptr<Session> find(const std::string& id) const;
  std::shared_ptr<Session> require(const std::string& id) const;  ///< throws SessionNotFound

  /// Held by a session/load or resume from its start (before its first suspension) to its end:
  /// requests for that session that arrive meanwhile wait in attached() instead of finding no session.
  class Attaching {
  public:
    Attaching(Engine& engine, std::string id);
    Attaching(const Attaching&) = delete;
    Attaching& operator=(const Attaching&) = delete;
    ~Attaching();

  private:
    Engine& engine_;
    std::string id_;
  };
  /// The attached session; while a load or resume of it is under way (Attaching), waits for its
  /// end first. Throws SessionNotFound when there is none then. (`id` copied before suspending.)
  boost::asio::awaitable<std::shared_ptr<Session>> attached(const std::string& id);

  /// Takes a place in the session's queue (work_queue.hpp) and returns once everything that arrived
  /// before it is over: then `turn` (a prompt's; null for a load) is the session's running turn
  /// until the slot is let go. `bytes`: the prompt text it holds while it waits. Throws
  /// SessionNotFound and QueueFull (nothing queued). (References: copied before suspending.)
  boost::asio::awaitable<QueueSlot> enqueue(const std::string& id, const std::shared_ptr<Turn>& turn, std::size_t bytes);

  /// Runs one prompt turn in the slot it holds; returns how it stopped. Throws ReadOnlySession,
  /// InvalidInput, reference errors (nothing written), store errors, and ProviderFailed (after the
  /// turn is logged `error`). A prompt cancelled while it waited in line is never sent to the model:
  /// its message is logged as a turn ended `aborted` (not once its session is closing or the
  /// process shuts down) and it answers `cancelled`.
  /// `input` is taken by value (move it in: a prompt may be tens of megabytes) and let go once logged.
  boost::asio::awaitable<llm::StopKind> prompt(QueueSlot& slot, PromptInput input, TurnObserver& observer);
  /// enqueue() with a turn of its own, then the prompt.
  boost::asio::awaitable<llm::StopKind> prompt(const std::string& id, PromptInput input, TurnObserver& observer);
  /// Runs `/compact [focus]` in the slot it holds, as a turn of its own (turn/start, the compaction,
  /// turn/end). Writes nothing when there is nothing worth condensing. Throws ReadOnlySession.
  boost::asio::awaitable<CompactResult> compact(QueueSlot& slot, const std::string& focus, TurnObserver& observer);
  /// enqueue() with a turn of its own, then the compaction.
  boost::asio::awaitable<CompactResult> compact(const std::string& id, const std::string& focus, TurnObserver& observer);

  /// The mode of a new session, and of an attached one whose log holds no choice (--default-mode).
  SessionMode default_mode() const;
  /// Logs the session's mode (a `dsh-acp/mode` event, permission_log.hpp) when it was chosen since the
  /// log last said, so load and resume in another process restore it. Holding `slot`, nothing else of
  /// this process writes the session. Failures are logged, never thrown: the choice still holds here.
  boost::asio::awaitable<void> log_mode(QueueSlot& slot);
  /// As above for session/set_mode: at once when nothing runs in the session (after a load in line);
  /// while a prompt or command runs, it logs the mode when it is over (the handler's log_mode(slot)).
  boost::asio::awaitable<void> log_mode(const std::shared_ptr<Session>& session);
  /// The context window (tokens) of `model`: configured, else published (DeepSeek), else none.
  std::optional<std::int64_t> context_window(const std::string& model) const override;
  /// Cancels the session's running turn and every prompt waiting in line (session/cancel); prompts
  /// that arrive later are not affected.
  void cancel(const std::string& id);
  /// Detaches a session; its running turn and the prompts in line are cancelled, and all have
  /// finished when this returns.
  boost::asio::awaitable<void> close(const std::string& id);
  /// Deletes a stored session (and detaches it). A session that does not exist, or that the
  /// person may not see, is no error and is left untouched (nothing tells the two apart).
  boost::asio::awaitable<void> remove(const std::string& id);
  /// Marks an attached session shared or not in its store (/share, /unshare, the `shared` option);
  /// no log record (sharing is the store's, not the conversation's). Returns nullopt when done, else
  /// why its store cannot share (a store without people: an answer, not a failure). Throws
  /// ReadOnlySession (someone else's session) and store errors.
  boost::asio::awaitable<std::optional<std::string>> set_shared(const std::string& id, bool shared);

  /// Cancels every running turn (shutdown) and gives up MCP server starts still running.
  void cancel_all();
  /// Stops the MCP servers of every session (shutdown).
  boost::asio::awaitable<void> stop_mcp_servers();
  /// cancel_all(), and stops the work of no turn too — replays, deletes' lock waits — now and
  /// from now on (the end of the shutdown's grace period).
  void stop();
  std::size_t running_turns() const;

  // ---- models ----
  bool offers_models() const override;
  /// The configured model, then config.models, then the session's own choice, each once.
  std::vector<std::string> model_choices(const Session& session) const;
  std::string session_model(const Session& session) const override;
  /// Throws InvalidInput(/value) for a model that is not a choice.
  void set_model(Session& session, const std::string& model);

  // ---- store queries (offloaded) ----
  /// Throws InvalidInput(/cwd) for a cwd filter that is not absolute or holds NUL or a line break.
  boost::asio::awaitable<std::vector<store::SessionListing>> list(const store::ListQuery& query);
  boost::asio::awaitable<std::vector<refs::Candidate>> candidates(const Session& session, const std::string& query,
                                                                  const std::optional<boost::json::value>& limit,
                                                                  bool match_titles);
  /// Stored sessions by what was said in them (docs/recall.md), best first, at most `limit`;
  /// `session`, when given, is left out. A cancel of `stop` ends the search (then empty).
  boost::asio::awaitable<std::vector<refs::ContentMatch>> search_sessions(const Session* session, const std::string& words,
                                                                          std::size_t limit,
                                                                          std::stop_token stop = {}) override;

  /// Whether the stores hold a session other than `id` (the recall tool is offered only then).
  boost::asio::awaitable<bool> has_other_sessions(const std::string& id) override;
  /// Labels references by their sessions' latest titles (a reference without a listed session keeps
  /// its label). Blocks: call it off the connection thread.
  void label_references(std::vector<refs::SessionReference>& references) override;

private:
  // ---- TurnHost: what a turn sees of the engine ----
  Scheduler& scheduler() override { return scheduler_; }
  bool closing() const override { return closing_; }
  boost::asio::awaitable<std::unique_ptr<TurnLog>> open_log(const std::shared_ptr<Session>& session,
                                                           const std::shared_ptr<Turn>& turn,
                                                           const std::stop_token& stop) override;
  boost::asio::awaitable<bool> refresh_conversation(Session& session, std::int64_t log_events,
                                                    const std::stop_token& stop) override;
  boost::asio::awaitable<CompactResult> run_compaction(const std::shared_ptr<Session>& session, TurnLog& log,
                                                       const std::shared_ptr<Turn>& turn, TurnObserver& observer,
                                                       const std::string& focus, bool manual) override;
  llm::Request model_request(const Session& session, const std::string& model) const override;
  std::int64_t estimate_request(const Session& session) const override;

  std::string system_prompt(const Session& session) const;
  /// What prompt() and compact() share: enqueue() with a turn of its own, for a session that takes
  /// writes (ReadOnlySession otherwise); then, in the slot, the runner of that turn.
  boost::asio::awaitable<QueueSlot> enqueue_turn(const std::string& id, std::size_t bytes);
  TurnRunner turn_runner(QueueSlot& slot, TurnObserver& observer);

  EngineServices services_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  /// Loads and resumes under way, by session id: how many, and the event set when the last ends.
  struct AttachWait {
    explicit AttachWait(const boost::asio::any_io_executor& ex) : done(ex) {}
    std::size_t count = 0;
    support::Event done;
  };
  std::map<std::string, std::shared_ptr<AttachWait>> attaching_;
  bool closing_ = false;  ///< cancel_all(): the connection is shutting down
  /// Prompt text held by every session's queue together (--max-held-prompt-bytes).
  std::shared_ptr<PromptBudget> prompt_budget_;
  /// The last member: its threads are joined before anything their jobs use is destroyed.
  Scheduler scheduler_;
};

/// A model call's usage: the provider's count when it gave one (`reported`, unless a stand-in),
/// else our estimate of `request` and of the answer (`answer_tokens` as the next request carries
/// it, `thought_tokens` of reasoning, which it does not). `context_used` is the request and the
/// answer without its reasoning.
ModelCallUsage model_call_usage(const llm::Request& request, const std::optional<llm::Usage>& reported,
                                std::int64_t answer_tokens, std::int64_t thought_tokens,
                                std::optional<std::int64_t> window);

/// Throws ReadOnlySession for someone else's shared session (it takes no writes here).
void require_writable(const Session& session);

/// The built-in system prompt (used when --system-prompt is not given).
std::string default_system_prompt();
/// Replaces {cwd} and {date} (UTC, YYYY-MM-DD).
std::string render_system_prompt(const std::string& tmpl, const std::string& cwd);
/// If `event` is a request/header, records its provider and model.
void note_request_header(const boost::json::object& event, std::string& provider, std::string& model);

} // namespace acp::engine
