// One prompt turn as an object with named phases, so that compaction, retries and tool calls are
// phases of one loop rather than branches of one long coroutine:
//
//   references  prepared before anything is written (a failure or a cancel leaves no trace)
//   open        the session's write lock taken, the conversation read back when another writer
//               changed the log
//   begin       turn/start, the direct message (an injected snapshot ahead of it), the title
//   compact     when the request would not fit the context window
//   steps       stream the model's answer; when it calls tools, run them (permission asked first
//               when the mode wants it), log each call and result, and ask again — up to
//               --max-steps requests
//   close       the closing records, fsynced; whatever happened before
//
// Every phase checks the turn's cancellation before it starts work (a cancel that arrived while
// the lock was awaited or the log re-read is never lost; a prompt cancelled while it waited in its
// session's queue logs its message and ends `aborted` at once), and close() runs however the phases
// ended — a failed store write, a failed chunk batch (which also stops the model stream), a
// provider error — so a turn that began is always ended in the log (turn/end error or aborted)
// and the lock released before the prompt is answered.
#pragma once

#include "engine/engine.hpp"
#include "store/new_event.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <exception>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace acp::engine {

class TurnLog;
struct TurnEnding;

class TurnRunner {
public:
  TurnRunner(TurnHost& host, std::shared_ptr<Session> session, std::shared_ptr<Turn> turn, TurnObserver& observer);
  ~TurnRunner();
  TurnRunner(const TurnRunner&) = delete;
  TurnRunner& operator=(const TurnRunner&) = delete;

  /// The prompt turn (Engine::prompt).
  /// `input` lives in the caller's frame for the whole turn (see Engine::prompt).
  boost::asio::awaitable<llm::StopKind> prompt(PromptInput& input);
  /// `/compact [focus]` as a turn of its own (Engine::compact).
  boost::asio::awaitable<CompactResult> compact(const std::string& focus);

private:
  struct Step;
  struct ToolRun;

  boost::asio::awaitable<bool> prepare_references(PromptInput& input);
  /// The lock taken and the conversation current; false when the turn is not to go on.
  boost::asio::awaitable<bool> open(bool logs_when_cancelled);
  /// The set-up prompt() and compact() share: open() when `go`, else (or when open() says no) the
  /// log let go at once. Whether the turn goes on.
  boost::asio::awaitable<bool> start(bool go, bool logs_when_cancelled);
  /// The tools offered this turn (decided once, at its start): built-in, ask_user, recall.
  boost::asio::awaitable<void> offer_tools();
  boost::asio::awaitable<void> begin(PromptInput& input);
  /// Saves the prompt's images in the attachment store; returns the message's content blocks.
  boost::asio::awaitable<boost::json::array> save_images(PromptInput& input);
  /// Loads the request's images when the model takes them, else leaves their placeholders alone.
  boost::asio::awaitable<void> load_images(llm::Request& request);
  boost::asio::awaitable<void> steps();
  /// step/start of a step after the first (the request/header held back for it, if any).
  boost::asio::awaitable<void> open_step();
  /// How the step's answer ends the turn, if it does: the ending noted, and the calls to run (none
  /// when cancelled, failed or cut off).
  std::vector<llm::ToolCall> settle(Step& step);
  /// The turn's last step: its closing records and turn/end, fsynced; then its failure rethrown.
  boost::asio::awaitable<void> finish(Step& step);
  /// One step's model call: the request sent, retried once compacted when it is too long.
  boost::asio::awaitable<void> stream(Step& step);
  /// The chunk writer: the sink the provider streams into (deltas to the observer and the log).
  llm::DeltaSink chunk_writer(Step& step);
  /// Awaited before the model produces more: chunk batches and the client caught up.
  boost::asio::awaitable<void> chunk_room(Step& step);
  /// The provider call: one model stream under the turn's cancellation, its failure mapped onto
  /// the step. Returns the provider's words when the request was too long (the retry policy's to
  /// decide). `request` and `sink` belong to the caller's frame for the whole call.
  boost::asio::awaitable<std::optional<std::string>> call_provider(const llm::Request& request,
                                                                   const llm::DeltaSink& sink, Step& step);
  /// The step fails: the request does not fit the context window.
  void fail_too_long(Step& step, const llm::Request& request, const std::string& too_long);
  /// The conversation as the model is sent it: tools offered, images loaded.
  boost::asio::awaitable<llm::Request> model_request();
  /// The answered call's usage, to the observer.
  void report_usage(const Step& step, const llm::Request& request);
  boost::asio::awaitable<void> run_tools(const std::vector<llm::ToolCall>& calls);
  /// The end prompt() and compact() share: the turn ended in the log (when begun) and the lock let
  /// go, whatever happened; then `failure` (or the end's own) rethrown.
  boost::asio::awaitable<void> close(std::exception_ptr& failure);
  boost::asio::awaitable<void> release();

  /// Appends on the session's strand and feeds the conversation (chunks written meanwhile are skipped).
  template <class F> boost::asio::awaitable<std::vector<boost::json::object>> write(F& work);
  /// Runs `ops` concurrently, each cancelled with the turn; every one has ended when this returns.
  template <class T>
  boost::asio::awaitable<std::vector<std::optional<T>>> run_all(std::vector<boost::asio::awaitable<T>>& ops);
  /// Where a call goes, decided once per call (before its permission).
  enum class Route { builtin, mcp, ask_user, recall, none };
  Route route(const std::string& name) const;
  boost::asio::awaitable<ToolOutcome> run_one(const llm::ToolCall& call, Route route);
  /// The recall tool: a search, or references prepared (their snapshots wait in recalled_).
  boost::asio::awaitable<ToolOutcome> recall(const llm::ToolCall& call);
  /// Logs the snapshots recall prepared during a step, after all its tool results, and shows their cards.
  boost::asio::awaitable<void> log_recalled();
  /// Whether the call may run: nullopt, or the error text the model reads instead of a result.
  boost::asio::awaitable<std::optional<std::string>> permission(const llm::ToolCall& call, Route route);
  std::vector<llm::ToolDefinition> tool_definitions() const;
  bool cancelled() const;
  /// What ends the turn's lock wait and log re-read.
  std::stop_token waits_end() const;

  TurnHost& host_;  ///< all it sees of the engine
  std::shared_ptr<Session> session_;
  std::shared_ptr<Turn> turn_;
  TurnObserver& observer_;
  std::unique_ptr<TurnLog> log_;
  std::unique_ptr<ToolRunner> tools_;  ///< null: the session's roots are unusable (no built-in tools)
  bool asks_user_ = false;             ///< ask_user is offered this turn (decided once, at its start)
  bool recalls_ = false;               ///< recall is offered this turn: other sessions exist (decided at its start)
  std::vector<refs::AdditionalContext> recalled_;  ///< prepared by recall, logged after the step's results
  std::optional<refs::AdditionalContext> context_;
  std::string model_;
  std::string provider_name_;
  std::optional<store::NewEvent> request_header_;
  bool header_pending_ = false;  ///< request_header_ is still to be written with the next step/start
  bool compact_first_ = false;
  bool compacted_ = false;
  bool unstarted_ = false;  ///< cancelled while it waited in line: only its message is logged
  bool begun_ = false;   ///< turn/start written: the turn must be ended in the log
  bool ended_ = false;   ///< turn/end written
  std::unique_ptr<TurnEnding> ending_;
  llm::StopKind stop_ = llm::StopKind::end_turn;
  const std::string no_focus_;  ///< automatic compactions have none
  /// The signals of the calls running now: a cancel of the turn is passed on to each.
  std::list<boost::asio::cancellation_signal> call_signals_;
};

} // namespace acp::engine
