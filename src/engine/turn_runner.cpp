#include "engine/turn_runner.hpp"

#include "support/secrets.hpp"

#include "engine/compaction.hpp"
#include "engine/conversation.hpp"
#include "engine/mcp_tools.hpp"
#include "engine/offload.hpp"
#include "engine/permission_log.hpp"
#include "engine/recall.hpp"
#include "engine/turn_log.hpp"
#include "llm/token_estimate.hpp"
#include "refs/errors.hpp"
#include "refs/service.hpp"
#include "store/event_builders.hpp"
#include "store/attachments.hpp"
#include "store/event_model.hpp"
#include "store/records.hpp"
#include "store/session_store.hpp"
#include "store/store_set.hpp"
#include "support/config.hpp"
#include "support/json_text.hpp"
#include "support/log.hpp"
#include "support/memory.hpp"
#include "tools/catalog.hpp"
#include "tools/file_change.hpp"
#include "tools/output_cap.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

namespace acp::engine {

namespace asio = boost::asio;
namespace json = boost::json;
namespace events = store::events;

namespace {

// Chunk batches are written on the session strand while the model keeps streaming. Their records
// are let go there: chunks are not on the conversation's surface, and keeping them until the turn
// ended cost ~1.2 KB a chunk (issue 18). The first failure is kept (strand-only state), stops the
// model stream and ends the turn `error`. At most kChunkWritesInFlight batches are posted and
// unwritten: the model waits (DeltaSink::room) while the disk is behind.
constexpr std::size_t kChunkWritesInFlight = 2;

struct ChunkWrites {
  explicit ChunkWrites(const asio::any_io_executor& ex) : written(ex, asio::steady_timer::time_point::max()) {}
  TurnLog* log = nullptr;
  std::exception_ptr error;    ///< strand only
  std::size_t in_flight = 0;   ///< connection thread: batches posted and not yet written
  bool failed = false;         ///< connection thread: a batch failed
  bool streaming = false;      ///< connection thread: the model stream runs (a failure stops it)
  std::shared_ptr<Turn> turn;
  asio::steady_timer written;  ///< connection thread: cancelled as each batch is written
};

// Writes one batch on the session's strand (none after a batch failed) and frees it there, not on
// the connection thread; then tells the connection thread (`home`), where a first failure stops
// the model stream.
void post_chunks(const std::shared_ptr<ChunkWrites>& writes, const asio::strand<asio::any_io_executor>& strand,
                 ChunkBatch batch, const asio::any_io_executor& home) {
  ++writes->in_flight;
  asio::post(strand, [writes, batch = std::move(batch), home]() mutable {
    if (!writes->error) {
      try {
        writes->log->chunks(std::move(batch));
      } catch (...) {
        writes->error = std::current_exception();
      }
    }
    ChunkBatch().swap(batch);
    asio::post(home, [writes, failed = writes->error != nullptr] {
      --writes->in_flight;
      writes->written.cancel();
      if (failed && !writes->failed && writes->streaming) writes->turn->signal.emit(asio::cancellation_type::terminal);
      writes->failed = writes->failed || failed;
    });
  });
}

// The retry policy, its rule in one place: a request the provider finds too long for its context
// window is compacted and sent again once, never when this turn already compacted or compaction is
// off (--compact-at 0); otherwise the turn fails naming the window and the estimate.
class TooLongRetry {
public:
  bool allows(bool compacted, double compact_at) {
    if (used_ || compacted || compact_at <= 0) return false;
    used_ = true;
    return true;
  }

private:
  bool used_ = false;
};

// A turn that streamed this many chunks frees enough to be worth giving back to the system.
constexpr std::int64_t kTrimAfterChunks = 4096;

bool context_too_long(const llm::ProviderError& e) {
  return (e.http_status() == 400 || e.http_status() == 413 || e.http_status() == 0) && !e.output_started() &&
         llm::names_context_too_long(e.what());
}

// Variables a tool's process must not see: the one list of secrets (child_environment hides them
// from every child anyway; naming them here keeps the request self-describing).
const std::vector<std::string>& hidden_variables() { return support::secret_variables(); }

const std::vector<llm::ToolDefinition>& builtin_definitions() {
  static const std::vector<llm::ToolDefinition> defs = [] {
    std::vector<llm::ToolDefinition> out;
    for (const auto& spec : tools::builtin_tools())
      out.push_back(llm::ToolDefinition{spec.name, spec.description, json::serialize(spec.parameters)});
    return out;
  }();
  return defs;
}

// Read-only work that may run beside other calls of the same answer.
bool runs_concurrently(const std::string& name) { return name == "read" || name == "glob" || name == "grep"; }

// A bash call's `command` and `workdir` (what an "always" rule is about), read as the tool runner
// reads the arguments: a rule names the command that runs.
std::pair<std::string, std::string> command_of(const llm::ToolCall& call) {
  boost::system::error_code ec;
  json::value args = support::parse_json(call.arguments, ec);
  if (ec || !args.is_object()) return {};
  return {std::string(store::string_at(args.get_object(), "command")), std::string(store::string_at(args.get_object(), "workdir"))};
}

std::string_view outcome_name(PermissionAnswer answer) {
  switch (answer) {
  case PermissionAnswer::allow_once:
  case PermissionAnswer::allow_always: return "allowed-once";
  case PermissionAnswer::reject_once:
  case PermissionAnswer::reject_always: return "rejected";
  case PermissionAnswer::cancelled: return "cancelled";
  }
  return "rejected";
}

ToolOutcome error_outcome(std::string text) {
  ToolOutcome out;
  out.text = std::move(text);
  out.is_error = true;
  return out;
}

std::string capped(std::string text, std::size_t max) {
  if (text.size() <= max) return text;
  tools::OutputCap cap(max);
  cap.append(text);
  return cap.text();
}

// tool/result meta. A change's: {diffs:[{path, oldText|null, newText}]}, as replay shows it (the
// harness's shape), the changed lines with some context rather than whole files.
// A command's: {exitStatus:{exitCode, signal}, timedOutMs?}, ACP's terminal exit status, so its
// card (live and replayed) says how it ended.
std::optional<json::object> result_meta(const ToolOutcome& outcome) {
  if (outcome.command_exit) {
    const CommandExit& exit = *outcome.command_exit;
    json::object status;
    status["exitCode"] = exit.exit_code ? json::value(*exit.exit_code) : json::value(nullptr);
    status["signal"] = exit.signal ? json::value(*exit.signal) : json::value(nullptr);
    json::object meta{{"exitStatus", std::move(status)}};
    if (exit.timed_out) meta["timedOutMs"] = exit.timed_out->count();
    return meta;
  }
  if (!outcome.edit || outcome.is_error) return std::nullopt;
  json::object diff;
  diff["path"] = outcome.edit->path;
  if (outcome.edit->old_text) {
    auto [before, after] = tools::changed_lines(*outcome.edit->old_text, outcome.edit->new_text);
    diff["oldText"] = before;
    diff["newText"] = after;
  } else {
    diff["oldText"] = nullptr;
    diff["newText"] = outcome.edit->new_text;
  }
  return json::object{{"diffs", json::array{std::move(diff)}}};
}

} // namespace

struct TurnRunner::Step {
  Step(std::int64_t turn, std::int64_t step, const asio::any_io_executor& ex)
      : buffer(turn, step), writes(std::make_shared<ChunkWrites>(ex)) {}
  ChunkBuffer buffer;
  std::shared_ptr<ChunkWrites> writes;
  llm::Completion completion;
  std::exception_ptr failure;
};

TurnRunner::TurnRunner(TurnHost& host, std::shared_ptr<Session> session, std::shared_ptr<Turn> turn,
                       TurnObserver& observer)
    : host_(host), session_(std::move(session)), turn_(std::move(turn)), observer_(observer),
      ending_(std::make_unique<TurnEnding>()) {}

TurnRunner::~TurnRunner() = default;

bool TurnRunner::cancelled() const { return turn_->cancel_requested; }

template <class F> asio::awaitable<std::vector<json::object>> TurnRunner::write(F& work) {
  TurnLog* log = log_.get();
  auto job = [&work, log] {
    std::vector<json::object> records = work();
    return std::make_pair(log->take_unobserved_chunks(), std::move(records));
  };
  std::pair<std::int64_t, std::vector<json::object>> written = std::move(*co_await offload(session_->strand, job));
  session_->conversation.skip(written.first);  // the chunks precede the records
  for (const auto& r : written.second) session_->conversation.observe(r);
  co_return std::move(written.second);
}

// ---- phases ----

asio::awaitable<bool> TurnRunner::prepare_references(PromptInput& input) {
  if (input.references.empty()) co_return true;
  refs::Target target{session_->id, session_->header.cwd};
  json::array content{json::object{{"type", "text"}, {"text", input.text}}};
  auto prepare = [this, target, content, &input, stop = turn_->stop.get_token()] {
    return host_.references().prepare(target, content, input.references, stop);
  };
  try {
    const asio::any_io_executor bulk = host_.scheduler().bulk_reads();
    std::optional<refs::PreparedMessage> prepared = co_await offload(bulk, prepare);
    context_ = std::move(prepared->additional_context);
  } catch (const refs::SessionReferenceError& e) {
    if (e.code() != refs::ErrorCode::cancelled && !cancelled()) throw;
  }
  co_return !cancelled();
}

std::stop_token TurnRunner::waits_end() const {
  // A prompt cancelled in line is logged all the same: its waits end only with the process.
  return unstarted_ ? host_.scheduler().stopping() : turn_->stop.get_token();
}

asio::awaitable<bool> TurnRunner::start(bool go, bool logs_when_cancelled) {
  if (go) go = co_await open(logs_when_cancelled);
  if (!go) co_await release();
  co_return go;
}

asio::awaitable<bool> TurnRunner::open(bool logs_when_cancelled) {
  if (cancelled() && !unstarted_) co_return false;
  // Taking the write lock may wait for another process (up to 2 s; a cancel ends the wait).
  log_ = co_await host_.open_log(session_, turn_, waits_end());
  if (!log_) co_return false;
  // The lock came: a prompt still logs what the user sent (they see it on reload), ended
  // `aborted`; work that has nothing to show for itself (/compact) stops here.
  if (cancelled() && !logs_when_cancelled) co_return false;
  if (!session_->conversation_known || session_->conversation.next_seq() != log_->writer().next_seq()) {
    const bool read = co_await host_.refresh_conversation(*session_, log_->writer().next_seq(), waits_end());
    if (!read || (cancelled() && !logs_when_cancelled)) co_return false;
  }
  co_return true;
}

asio::awaitable<void> TurnRunner::begin(PromptInput& input) {
  // From here on the turn is logged whatever happens, an early cancel included: the user sees
  // what they sent on reload. The snapshot, turn/start and the direct message are one batch.
  std::vector<store::NewEvent> prefix;
  if (context_) {
    json::array snapshot{json::object{{"type", "text"}, {"text", context_->prompt}}};
    prefix.push_back(events::user_message(std::move(snapshot), context_->source));
  }
  model_ = host_.session_model(*session_);
  provider_name_ = host_.provider().name();
  if (host_.offers_models() && (session_->logged_provider != provider_name_ || session_->logged_model != model_)) {
    store::NewEvent e;
    e.type = "request/header";
    e.data = json::object{{"header", {{"config", {{"provider", provider_name_}, {"model", model_}}}}},
                          {"reason", session_->logged_model.empty() ? "initial" : "change"}};
    request_header_ = std::move(e);
  }
  const bool header_written = request_header_.has_value();
  // Automatic compaction: decided before writing, from the request this turn would send.
  const std::optional<std::int64_t> threshold =
      llm::compaction_threshold(host_.context_window(model_), host_.config().compact_at);
  if (threshold) {
    std::int64_t estimate = host_.estimate_request(*session_) +
                            llm::estimate_message_tokens({llm::Role::user, input.text}) +
                            (context_ ? llm::estimate_message_tokens({llm::Role::user, context_->prompt}) : 0);
    compact_first_ = estimate > *threshold;
    if (compact_first_)
      acp::log::info("session " + session_->id + ": request estimated at " + std::to_string(estimate) +
                     " tokens, above " + std::to_string(*threshold) + ": compacting first");
  }
  session_->conversation_known = false;  // until this turn's records are all observed
  header_pending_ = compact_first_ && request_header_;
  std::optional<json::array> content;
  if (!input.images.empty()) content = co_await save_images(input);
  auto first_batch = [this, &prefix, &input, &content] {
    return log_->begin(std::move(prefix), input.text, compact_first_ ? std::nullopt : std::move(request_header_),
                       !compact_first_, std::move(content));
  };
  std::vector<json::object> first = co_await write(first_batch);
  begun_ = true;
  std::string().swap(input.text);  // logged, and in `first`: not needed any more
  // The session's logged model changes once its header is in the log (held back when a compaction
  // comes first: it goes with the next step/start).
  if (header_written && !header_pending_) {
    session_->logged_provider = provider_name_;
    session_->logged_model = model_;
  }
  if (context_ && !session_->closed) observer_.references(first.front().at("seq").as_int64(), context_->source);
  for (const auto& r : first) {
    if (store::string_at(r, "type") != "session/title" || session_->closed) continue;
    if (const json::object* data = store::object_at(r, "data"))
      observer_.title(std::string(store::string_at(*data, "title")));
  }
}

asio::awaitable<json::array> TurnRunner::save_images(PromptInput& input) {
  // Every object is whole on disk before the log names it (store/attachments.hpp).
  auto save = [&input, home = host_.config().harness_home] {
    std::vector<json::object> refs;
    for (const auto& image : input.images)
      refs.push_back(store::save_image(home, image.bytes, image.header.media_type, image.header.width,
                                       image.header.height, image.name));
    return refs;
  };
  std::vector<json::object> refs = std::move(*co_await offload(host_.scheduler().pool(), save));
  // The harness's order: text and images as the prompt had them, the text between images one block.
  json::array content;
  std::size_t from = 0;
  const std::string_view text = input.text;
  for (std::size_t i = 0; i < refs.size(); ++i) {
    const std::size_t at = std::min(input.images[i].at, text.size());
    if (at > from) content.push_back(json::object{{"type", "text"}, {"text", text.substr(from, at - from)}});
    content.push_back(json::object{{"type", "image"}, {"attachment", std::move(refs[i])}});
    from = std::max(from, at);
  }
  if (from < text.size()) content.push_back(json::object{{"type", "text"}, {"text", text.substr(from)}});
  std::vector<support::PlacedImage>().swap(input.images);  // saved: the bytes are not needed any more
  co_return content;
}

asio::awaitable<void> TurnRunner::load_images(llm::Request& request) {
  bool any = false;
  for (const auto& m : request.messages) any = any || !m.images.empty();
  if (!any) co_return;
  // A model that takes no images reads their placeholders.
  if (!support::takes_images(host_.config(), model_)) {
    for (auto& m : request.messages) m.images.clear();
    co_return;
  }
  auto load = [&request, home = host_.config().harness_home] { engine::load_images(request.messages, home); };
  co_await offload(host_.scheduler().pool(), load);
}

asio::awaitable<llm::StopKind> TurnRunner::prompt(PromptInput& input) {
  // Cancelled while it waited in line (session/cancel, $/cancel_request): the user's message is
  // logged, in a turn ended `aborted`, and nothing else is done (no references read, no model).
  // A session closing or deleted, or a process shutting down, writes nothing more.
  unstarted_ = cancelled();
  bool ready = !unstarted_ || (!session_->closed && !host_.closing());
  // (Each co_await its own statement: GCC 12 miscompiles co_await inside `||`.)
  if (ready && !unstarted_) ready = co_await prepare_references(input);
  ready = co_await start(ready, /*logs_when_cancelled=*/true);
  if (!ready) co_return llm::StopKind::cancelled;
  std::exception_ptr failure;
  try {
    if (!unstarted_) co_await offer_tools();
    co_await begin(input);
    if (compact_first_ && !cancelled()) {
      CompactResult result = co_await host_.run_compaction(session_, *log_, turn_, observer_, no_focus_, false);
      compacted_ = result.kind == CompactResult::Kind::compacted;
    }
    co_await steps();
  } catch (...) {
    failure = std::current_exception();
  }
  co_await close(failure);
  co_return stop_;
}

asio::awaitable<void> TurnRunner::offer_tools() {
  asks_user_ = observer_.can_ask_user();
  if (!session_->others_seen) session_->others_seen = co_await host_.has_other_sessions(session_->id);
  recalls_ = session_->others_seen;
  // Built-in tools work inside the session's roots; roots that do not exist (a cwd the client has
  // not created) leave the model without them.
  // (What it needs of the session is copied here: a load may change the directories meanwhile.)
  // Unusable roots are an answer, not an exception: nothing is thrown across threads here.
  auto make_tools = [this, cwd = session_->cwd(), dirs = session_->additional_directories,
                     editor = observer_.editor()]() -> std::pair<std::unique_ptr<ToolRunner>, std::string> {
    ToolLimits limits;
    limits.max_result_bytes = static_cast<std::size_t>(host_.config().max_tool_result_bytes);
    try {
      return {std::make_unique<ToolRunner>(tools::Roots(cwd, dirs), editor, host_.scheduler().bulk_reads(), limits,
                                           hidden_variables()),
              std::string()};
    } catch (const std::invalid_argument& e) {
      return {nullptr, e.what()};
    }
  };
  std::pair<std::unique_ptr<ToolRunner>, std::string> made = std::move(*co_await offload(session_->strand, make_tools));
  tools_ = std::move(made.first);
  if (!tools_) acp::log::info("session " + session_->id + ": no built-in tools: " + made.second);
}

asio::awaitable<void> TurnRunner::steps() {
  const std::int64_t limit = host_.config().max_steps;
  for (std::int64_t n = 1;; ++n) {
    if (cancelled()) co_return;  // close(): aborted
    if (n > 1 || compact_first_) co_await open_step();
    Step step(log_->turn(), log_->step(), host_.scheduler().connection());
    step.writes->log = log_.get();
    step.writes->turn = turn_;
    co_await stream(step);
    std::vector<llm::ToolCall> calls = settle(step);
    stop_ = step.completion.stop;
    if (calls.empty()) {
      co_await finish(step);
      co_return;
    }
    auto answer = [this, &step] {
      if (step.writes->error) std::rethrow_exception(step.writes->error);
      return log_->answer(step.buffer.take(), step.buffer.blocks(), step.completion);
    };
    co_await write(answer);
    co_await run_tools(calls);
    if (cancelled()) co_return;
    if (n >= limit) {
      acp::log::info("session " + session_->id + ": the turn reached its limit of " + std::to_string(limit) +
                     " model requests");
      *ending_ = TurnEnding{TurnEnding::Kind::step_limit, {}, std::nullopt};
      stop_ = llm::StopKind::max_turn_requests;
      co_return;
    }
  }
}

asio::awaitable<void> TurnRunner::open_step() {
  const bool with_header = header_pending_;
  auto step_start = [this, with_header] {
    std::optional<store::NewEvent> header;
    if (with_header) header = std::move(request_header_);
    return log_->open_step(std::move(header));
  };
  co_await write(step_start);
  if (with_header) {
    header_pending_ = false;
    session_->logged_provider = provider_name_;
    session_->logged_model = model_;
  }
}

std::vector<llm::ToolCall> TurnRunner::settle(Step& step) {
  std::vector<llm::ToolCall> calls = step.buffer.tool_calls();
  TurnEnding& ending = *ending_;
  if (cancelled()) {
    step.failure = nullptr;
    step.completion.stop = llm::StopKind::cancelled;
    ending = TurnEnding{TurnEnding::Kind::aborted, {}, std::nullopt};
    calls.clear();
  } else if (!step.failure) {
    switch (step.completion.stop) {
    case llm::StopKind::max_tokens: ending.kind = TurnEnding::Kind::max_tokens; break;
    case llm::StopKind::refusal: ending.kind = TurnEnding::Kind::refused; break;
    case llm::StopKind::cancelled: ending.kind = TurnEnding::Kind::aborted; break;
    case llm::StopKind::end_turn:
    case llm::StopKind::max_turn_requests: ending.kind = TurnEnding::Kind::completed; break;
    }
    // A cut-off answer's calls are not run: their arguments may be cut too.
    if (ending.kind != TurnEnding::Kind::completed) calls.clear();
    step.buffer.close(step.completion, ending.kind == TurnEnding::Kind::refused);
  } else {
    calls.clear();
  }
  return calls;
}

asio::awaitable<void> TurnRunner::finish(Step& step) {
  TurnEnding& ending = *ending_;
  // The strand runs this after every chunk batch posted: the turn's last events are durable
  // before the prompt is answered, and no write of this turn is left running.
  auto last = [this, &step, &ending] {
    if (step.writes->error) {
      try {
        std::rethrow_exception(step.writes->error);
      } catch (const std::exception& e) {
        ending = TurnEnding{TurnEnding::Kind::error, std::string("log write failed: ") + e.what(), std::nullopt};
      }
    }
    ChunkBatch batch = step.writes->error ? ChunkBatch{} : step.buffer.take();
    return log_->finish(std::move(batch), step.buffer.blocks(), step.completion, ending);
  };
  try {
    co_await write(last);
  } catch (...) {
    // A chunk batch the log could not take failed first (a store connection gone): that says
    // why; the end failing after it (the writer's lock went with it) is only its consequence.
    if (step.writes->error) std::rethrow_exception(step.writes->error);
    throw;
  }
  ended_ = true;
  if (step.writes->failed) std::rethrow_exception(step.writes->error ? step.writes->error : step.failure);
  if (step.failure) std::rethrow_exception(step.failure);
}

// ---- the model stream: the chunk writer, the provider call, the retry policy ----

llm::DeltaSink TurnRunner::chunk_writer(Step& step) {
  // Each delta goes to the client at once and into the log in batches on the session's strand.
  // Cancellation is racy: a delta arriving after cancel is dropped, never sent after the reply.
  auto deliver = [this, &step](const llm::Delta& delta) {
    if (cancelled() || step.writes->failed) return;
    if (step.buffer.add(delta))
      post_chunks(step.writes, session_->strand, step.buffer.take(), host_.scheduler().connection());
    if (!session_->closed && delta.kind != llm::DeltaKind::tool_call)
      observer_.placed_delta(delta, DeltaPlace{log_->turn(), log_->step(), step.buffer.current_block()});
  };
  auto room = [this, &step] { return chunk_room(step); };
  return llm::DeltaSink(deliver, room);
}

asio::awaitable<void> TurnRunner::chunk_room(Step& step) {
  // Back-pressure: the model produces no more while chunk batches wait for the disk or the client
  // for its updates. A cancel ends every wait (the model stream observes it next); a failed batch
  // stops the stream itself, so a provider that keeps billing is not read any further.
  const std::shared_ptr<ChunkWrites> writes = step.writes;
  while (writes->in_flight >= kChunkWritesInFlight && !cancelled() && !writes->failed)
    co_await writes->written.async_wait(asio::as_tuple(asio::use_awaitable));
  if (!cancelled() && !session_->closed && !writes->failed) co_await observer_.room();
}

asio::awaitable<llm::Request> TurnRunner::model_request() {
  llm::Request request = host_.model_request(*session_, model_);
  request.tools = tool_definitions();
  co_await load_images(request);
  co_return request;
}

asio::awaitable<std::optional<std::string>> TurnRunner::call_provider(const llm::Request& request,
                                                                      const llm::DeltaSink& sink, Step& step) {
  std::optional<std::string> too_long;
  step.writes->streaming = true;
  try {
    auto call = asio::co_spawn(host_.scheduler().connection(), host_.provider().stream(request, sink),
                               asio::bind_cancellation_slot(turn_->signal.slot(), asio::use_awaitable));
    step.completion = co_await std::move(call);
  } catch (const llm::ProviderError& e) {
    if (context_too_long(e)) {
      too_long = e.what();
    } else {
      step.failure = std::make_exception_ptr(ProviderFailed(provider_name_, e));
      *ending_ = TurnEnding{TurnEnding::Kind::error, e.what(), e.code()};
      if (e.output_started() && !cancelled() && !session_->closed)
        observer_.placed_delta({llm::DeltaKind::text, "\n\n[The answer was cut off: " + std::string(e.what()) + "]"},
                               DeltaPlace{log_->turn(), log_->step(), step.buffer.current_block()});
    }
  } catch (const std::exception& e) {
    step.failure = std::current_exception();
    *ending_ = TurnEnding{TurnEnding::Kind::error, e.what(), std::nullopt};
  }
  step.writes->streaming = false;
  turn_->signal.slot().clear();
  if (step.writes->failed && !step.failure) {
    // The stream was stopped because the log could not take its chunks.
    step.failure = std::make_exception_ptr(std::runtime_error("log write failed"));
    *ending_ = TurnEnding{TurnEnding::Kind::error, "log write failed", std::nullopt};
  }
  co_return too_long;
}

void TurnRunner::fail_too_long(Step& step, const llm::Request& request, const std::string& too_long) {
  const std::optional<std::int64_t> window = host_.context_window(model_);
  std::string message = "The conversation does not fit the model's context window (" +
                        (window ? std::to_string(*window) + " tokens" : "window of " + model_ + " not configured") +
                        "; this request is estimated at " +
                        std::to_string(llm::estimate_request_tokens(request.messages)) +
                        " tokens). Use /compact or start a new session. The provider said: " + too_long;
  step.failure = std::make_exception_ptr(
      ProviderFailed(provider_name_, llm::ProviderError("PROVIDER_BAD_REQUEST", message, 400)));
  *ending_ = TurnEnding{TurnEnding::Kind::error, message, std::string("PROVIDER_BAD_REQUEST")};
}

asio::awaitable<void> TurnRunner::stream(Step& step) {
  const llm::DeltaSink sink = chunk_writer(step);
  llm::Request request = co_await model_request();
  step.completion.provider = provider_name_;
  step.completion.model = model_;
  TooLongRetry retry;
  while (!cancelled()) {
    const std::optional<std::string> too_long = co_await call_provider(request, sink, step);
    if (!too_long) break;
    if (!cancelled() && retry.allows(compacted_, host_.config().compact_at)) {
      // (No chunk was written: a too-long request fails before any output, so the compaction's
      // records are the next in the log and the conversation.)
      acp::log::info("session " + session_->id + ": the provider found the request too long (" + *too_long +
                     "): compacting");
      CompactResult result = co_await host_.run_compaction(session_, *log_, turn_, observer_, no_focus_, true);
      if (result.kind == CompactResult::Kind::compacted) {
        compacted_ = true;
        request = co_await model_request();
        continue;
      }
    }
    fail_too_long(step, request, *too_long);
    break;
  }
  if (step.failure || cancelled() || step.completion.stop == llm::StopKind::cancelled || session_->closed) co_return;
  report_usage(step, request);
}

void TurnRunner::report_usage(const Step& step, const llm::Request& request) {
  // The answer as the next request carries it (text and calls), and its reasoning, which it does not.
  std::int64_t answer_bytes = 0, thought_bytes = 0, calls = 0;
  for (const auto& block : step.buffer.blocks()) {
    if (block.kind == llm::DeltaKind::reasoning) {
      thought_bytes += static_cast<std::int64_t>(block.text.size());
      continue;
    }
    answer_bytes += static_cast<std::int64_t>(block.text.size());
    if (block.kind == llm::DeltaKind::tool_call) {
      answer_bytes += static_cast<std::int64_t>(block.call_id.size() + block.call_name.size());
      ++calls;
    }
  }
  auto tokens = [](std::int64_t bytes) { return (bytes + llm::kBytesPerToken - 1) / llm::kBytesPerToken; };
  const std::int64_t answer_tokens =
      tokens(answer_bytes) + llm::kMessageOverheadTokens + llm::kToolCallOverheadTokens * calls;
  observer_.model_call(model_call_usage(request, step.completion.usage, answer_tokens, tokens(thought_bytes),
                                        host_.context_window(model_)));
}

std::vector<llm::ToolDefinition> TurnRunner::tool_definitions() const {
  std::vector<llm::ToolDefinition> defs;
  if (tools_) defs = builtin_definitions();
  if (asks_user_) defs.push_back(ask_user_definition());
  if (recalls_) defs.push_back(recall_definition());
  if (session_->mcp)
    for (auto& d : session_->mcp->definitions()) defs.push_back(std::move(d));
  return defs;
}

// ---- tools ----

template <class T>
asio::awaitable<std::vector<std::optional<T>>> TurnRunner::run_all(std::vector<asio::awaitable<T>>& ops) {
  struct State {
    State(const asio::any_io_executor& ex, std::size_t n) : results(n), left(n), done(ex) {}
    std::vector<std::optional<T>> results;  ///< nullopt: the operation threw
    std::size_t left;
    support::Event done;
  };
  auto state = std::make_shared<State>(host_.scheduler().connection(), ops.size());
  if (ops.empty()) co_return std::move(state->results);
  std::vector<std::list<asio::cancellation_signal>::iterator> mine;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    mine.push_back(call_signals_.emplace(call_signals_.end()));
    asio::co_spawn(host_.scheduler().connection(), std::move(ops[i]),
                   asio::bind_cancellation_slot(mine.back()->slot(), [state, i](std::exception_ptr e, T out) {
                     if (!e) state->results[i] = std::move(out);
                     else {
                       try {
                         std::rethrow_exception(e);
                       } catch (const std::exception& ex) {
                         acp::log::warn(std::string("a tool call failed unexpectedly: ") + ex.what());
                       } catch (...) {
                       }
                     }
                     if (--state->left == 0) state->done.set();
                   }));
  }
  // The turn's cancellation reaches every running call (and only while they run).
  turn_->signal.slot().assign([this](asio::cancellation_type type) {
    for (auto& s : call_signals_) s.emit(type);
  });
  if (cancelled())
    for (auto it : mine) it->emit(asio::cancellation_type::terminal);
  while (!state->done.is_set()) co_await state->done.wait();
  for (auto it : mine) call_signals_.erase(it);
  if (call_signals_.empty()) turn_->signal.slot().clear();
  co_return std::move(state->results);
}

TurnRunner::Route TurnRunner::route(const std::string& name) const {
  if (session_->mcp && session_->mcp->offers(name)) return Route::mcp;
  if (tools_ && tools::find_builtin(name)) return Route::builtin;
  if (asks_user_ && name == kAskUserTool) return Route::ask_user;
  if (recalls_ && name == kRecallTool) return Route::recall;
  return Route::none;
}

asio::awaitable<ToolOutcome> TurnRunner::run_one(const llm::ToolCall& call_in, Route route) {
  const llm::ToolCall call = call_in;
  ToolOutcome out;
  // The route decided when permission was asked: a server set swapped meanwhile never runs a call
  // that was not asked for.
  if (route == Route::mcp && session_->mcp) {
    out = co_await session_->mcp->call(call.name, call.arguments);
    make_text_valid(out);  // a server's failure quotes its stderr
    out.text = capped(std::move(out.text), static_cast<std::size_t>(host_.config().max_tool_result_bytes));
  } else if (route == Route::builtin) {
    std::function<void(const std::string&)> on_terminal = [this, id = call.id](const std::string& terminal) {
      if (!session_->closed) observer_.tool_running(id, terminal);
    };
    out = co_await tools_->run(call.name, call.arguments, std::move(on_terminal));
  } else if (route == Route::ask_user) {
    std::variant<UserQuestion, std::string> question = read_user_question(call.id, call.arguments);
    if (auto* error = std::get_if<std::string>(&question)) {
      out = error_outcome(std::move(*error));
    } else {
      const UserAnswer answer = co_await observer_.ask_user(std::get<UserQuestion>(question));
      out = user_answer_outcome(answer, static_cast<std::size_t>(host_.config().max_tool_result_bytes));
    }
  } else if (route == Route::recall) {
    out = co_await recall(call);
  } else {
    out = error_outcome("Error: there is no tool named \"" + call.name + "\"");
  }
  co_return out;
}

asio::awaitable<ToolOutcome> TurnRunner::recall(const llm::ToolCall& call) {
  const std::size_t max_references = static_cast<std::size_t>(host_.references().config().max_references);
  std::variant<RecallRequest, std::string> request = read_recall_request(call.arguments, max_references);
  if (auto* error = std::get_if<std::string>(&request)) co_return error_outcome(std::move(*error));
  RecallRequest& r = std::get<RecallRequest>(request);
  ToolOutcome out;
  if (!r.query.empty()) {
    std::vector<refs::ContentMatch> found;
    try {
      found = co_await host_.search_sessions(session_.get(), r.query, kRecallResults, turn_->stop.get_token());
    } catch (const std::exception& e) {
      co_return error_outcome(std::string("Error: recall: the search failed: ") + e.what());
    }
    if (cancelled()) {
      out.cancelled = out.is_error = true;
      out.text = "Error: the search was cancelled";
      co_return out;
    }
    out.text = describe_recall_matches(found, r.query);
    co_return out;
  }
  // The same preparation as a person's mentions: labelled by the sessions' titles, bounded by the
  // reference budget, nothing kept when it fails or is cancelled.
  refs::Target target{session_->id, session_->header.cwd};
  json::array content{json::object{{"type", "text"}, {"text", describe_recall_references(r.sessions)}}};
  auto prepare = [this, target, content, &r, stop = turn_->stop.get_token()] {
    host_.label_references(r.sessions);
    return host_.references().prepare(target, content, r.sessions, stop);
  };
  try {
    const asio::any_io_executor bulk = host_.scheduler().bulk_reads();
    std::optional<refs::PreparedMessage> prepared = co_await offload(bulk, prepare);
    if (!prepared->additional_context) co_return error_outcome("Error: recall: nothing to reference");
    recalled_.push_back(std::move(*prepared->additional_context));
    out.text = describe_recall_references(r.sessions);
  } catch (const refs::SessionReferenceError& e) {
    if (e.code() == refs::ErrorCode::cancelled || cancelled()) {
      out.cancelled = out.is_error = true;
      out.text = "Error: the reference was cancelled";
    } else {
      out = error_outcome(std::string("Error: recall: ") + e.what());
    }
  }
  co_return out;
}

asio::awaitable<void> TurnRunner::log_recalled() {
  if (recalled_.empty()) co_return;
  std::vector<refs::AdditionalContext> contexts = std::move(recalled_);
  recalled_.clear();
  auto logged = [this, &contexts] {
    std::vector<store::NewEvent> batch;
    for (const auto& c : contexts) {
      json::array snapshot{json::object{{"type", "text"}, {"text", c.prompt}}};
      batch.push_back(events::user_message(std::move(snapshot), c.source));
    }
    return log_->records(std::move(batch));
  };
  const std::vector<json::object> records = co_await write(logged);
  for (std::size_t i = 0; i < records.size() && i < contexts.size(); ++i)
    if (!session_->closed) observer_.references(records[i].at("seq").as_int64(), contexts[i].source);
}

asio::awaitable<std::optional<std::string>> TurnRunner::permission(const llm::ToolCall& call_in, Route route) {
  const llm::ToolCall call = call_in;
  ToolEffect effect = ToolEffect::none;
  if (route == Route::mcp) {
    effect = ToolEffect::external;
  } else if (const tools::ToolSpec* spec = route == Route::builtin ? tools::find_builtin(call.name) : nullptr) {
    effect = spec->changes_files ? ToolEffect::changes_files : spec->runs_commands ? ToolEffect::runs_commands : ToolEffect::none;
  }
  if (effect == ToolEffect::none) co_return std::nullopt;
  const auto [command, workdir] = call.name == "bash" ? command_of(call) : std::pair<std::string, std::string>();
  switch (session_->permissions.check(session_->mode, call.name, effect, command, workdir)) {
  case PermissionNeed::allowed: co_return std::nullopt;
  case PermissionNeed::refused:
    co_return session_->mode == SessionMode::read_only
        ? "Error: the session is in read-only mode: " + call.name + " is not allowed. Ask the user to switch modes if it is needed."
        : "Error: the user has rejected this for the rest of the session.";
  case PermissionNeed::ask: break;
  }
  const std::string id = store::random_uuid();
  auto asked = [this, &id, &call] {
    std::vector<store::NewEvent> batch;
    batch.push_back(events::approval_asked(id, call.name, call.id));
    return log_->records(std::move(batch));
  };
  co_await write(asked);
  // The rule an "always" creates is the one its option names.
  PermissionQuestion question{call.id, call.name, call.arguments, Permissions::rule_for(call.name, command, workdir)};
  // Withdrawn with the turn (the client is told the request was cancelled).
  std::vector<asio::awaitable<PermissionAnswer>> ops;
  ops.push_back(observer_.ask_permission(question));
  std::vector<std::optional<PermissionAnswer>> answered = co_await run_all(ops);
  PermissionAnswer answer = answered.front().value_or(PermissionAnswer::cancelled);
  if (cancelled()) answer = PermissionAnswer::cancelled;
  bool always = answer == PermissionAnswer::allow_always || answer == PermissionAnswer::reject_always;
  // An "always" that was not offered is not one of the options: read fail-closed, as a rejection.
  if (always && !question.always) {
    answer = PermissionAnswer::reject_once;
    always = false;
  }
  const bool allow = answer == PermissionAnswer::allow_once || answer == PermissionAnswer::allow_always;
  // "Always" is remembered for the session and logged, so load and resume restore it.
  std::optional<PermissionRule> rule;
  if (always) {
    rule = std::move(question.always);
    rule->allow = allow;
    session_->permissions.add(*rule);
  }
  auto decided = [this, &id, answer, &rule] {
    std::vector<store::NewEvent> batch;
    batch.push_back(events::approval_decided(id, outcome_name(answer)));
    if (rule) batch.push_back(permission_rule_event(*rule));
    return log_->records(std::move(batch));
  };
  co_await write(decided);
  if (allow) co_return std::nullopt;
  if (answer == PermissionAnswer::cancelled) co_return std::string("Error: the permission request was cancelled; the call did not run.");
  co_return std::string("Error: the user rejected this call; it did not run.");
}

asio::awaitable<void> TurnRunner::run_tools(const std::vector<llm::ToolCall>& calls_in) {
  const std::vector<llm::ToolCall> calls = calls_in;
  const std::int64_t turn = log_->turn();
  const std::int64_t step = log_->step();
  for (std::size_t i = 0; i < calls.size();) {
    // Read-only calls next to each other run together; anything else alone, in the model's order.
    std::size_t end = i + 1;
    if (runs_concurrently(calls[i].name) && !cancelled())
      while (end < calls.size() && runs_concurrently(calls[end].name)) ++end;
    std::vector<std::int64_t> call_seqs;
    auto logged = [this, &calls, i, end, turn, step] {
      std::vector<store::NewEvent> batch;
      for (std::size_t k = i; k < end; ++k)
        batch.push_back(events::tool_call(turn, step, calls[k].id, calls[k].name, calls[k].arguments));
      return log_->records(std::move(batch));
    };
    const std::vector<json::object> call_records = co_await write(logged);
    for (const auto& r : call_records) {
      call_seqs.push_back(r.at("seq").as_int64());
      if (!session_->closed) observer_.tool_record(r);
    }
    std::vector<ToolOutcome> outcomes(end - i);
    std::vector<bool> skipped(end - i, false);  // never started: the turn was cancelled first
    std::vector<Route> routes(end - i, Route::none);
    std::vector<std::size_t> running;           // indexes into outcomes
    for (std::size_t k = i; k < end; ++k) {
      routes[k - i] = route(calls[k].name);
      if (!cancelled()) {
        std::optional<std::string> refusal = co_await permission(calls[k], routes[k - i]);
        if (refusal && !cancelled()) {
          outcomes[k - i] = error_outcome(std::move(*refusal));
          continue;
        }
      }
      if (cancelled()) {
        outcomes[k - i] = error_outcome("Error: tool call aborted before dispatch");
        skipped[k - i] = true;
        continue;
      }
      running.push_back(k - i);
    }
    std::vector<asio::awaitable<ToolOutcome>> ops;
    for (std::size_t r : running) {
      if (!session_->closed) observer_.tool_running(calls[i + r].id, std::nullopt);
      ops.push_back(run_one(calls[i + r], routes[r]));
    }
    std::vector<std::optional<ToolOutcome>> done = co_await run_all(ops);
    for (std::size_t r = 0; r < running.size(); ++r)
      outcomes[running[r]] = done[r] ? std::move(*done[r]) : error_outcome("Error: the tool failed unexpectedly");
    auto results = [this, &calls, &outcomes, &skipped, &call_seqs, i, turn, step] {
      std::vector<store::NewEvent> batch;
      for (std::size_t k = 0; k < outcomes.size(); ++k) {
        ToolOutcome& out = outcomes[k];
        if (out.todos && !out.is_error) batch.push_back(events::todo_write(*out.todos));
        // The harness's codes: a call the cancel came before, and one it stopped.
        std::optional<json::object> error;
        if (skipped[k]) error = json::object{{"name", "AbortError"}, {"code", "TOOL_ABORTED_BEFORE_DISPATCH"}};
        else if (out.cancelled) error = json::object{{"name", "AbortError"}, {"code", "TOOL_ABORTED"}};
        json::array content{json::object{{"type", "text"}, {"text", out.text}}};
        batch.push_back(events::tool_result(turn, step, calls[i + k].id, std::move(content), out.is_error,
                                            call_seqs[k], std::move(error), result_meta(out)));
      }
      return log_->records(std::move(batch));
    };
    const std::vector<json::object> result_records = co_await write(results);
    for (const auto& r : result_records)
      if (!session_->closed) observer_.tool_record(r);
    i = end;
  }
  // After every result of the answer's calls: a message between them would break the pairing of
  // calls and results the model's API requires.
  co_await log_recalled();
}

// ---- the end ----

asio::awaitable<void> TurnRunner::close(std::exception_ptr& failure) {
  if (begun_ && !ended_ && log_) {
    TurnEnding& ending = *ending_;
    if (cancelled()) {
      ending = TurnEnding{TurnEnding::Kind::aborted, {}, std::nullopt};
      stop_ = llm::StopKind::cancelled;
    } else if (failure && ending.kind != TurnEnding::Kind::error) {
      std::string message = "the turn failed";
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& e) {
        message = e.what();
      } catch (...) {
      }
      ending = TurnEnding{TurnEnding::Kind::error, message, std::nullopt};
    }
    auto end = [this, &ending] { return log_->end(ending); };
    try {
      co_await write(end);
      ended_ = true;
    } catch (const std::exception& e) {
      // The log cannot take even its end: the next writer's crash repair closes the turn.
      acp::log::warn("session " + session_->id + ": the turn could not be ended in the log: " + e.what());
      if (!failure) failure = std::current_exception();
    }
  }
  if (ended_) session_->conversation_known = true;
  co_await release();
  if (failure) std::rethrow_exception(failure);
}

asio::awaitable<void> TurnRunner::release() {
  if (!log_) co_return;
  auto job = [this] {
    log_->release();
    // A long answer's chunk records were freed in the pool threads' malloc arenas, where glibc
    // keeps them: give them back (issue 18: +106 MB after three turns of 100,000 chunks).
    if (log_->chunk_events() >= kTrimAfterChunks) support::give_back_memory();
  };
  try {
    co_await offload(session_->strand, job);
  } catch (const std::exception& e) {
    acp::log::warn("session " + session_->id + ": releasing the log failed: " + e.what());
  }
  if (!ended_) session_->conversation_known = false;
}

// ---- /compact ----

asio::awaitable<CompactResult> TurnRunner::compact(const std::string& focus_in) {
  const std::string focus = focus_in;  // copied before the first suspension (see Engine::create_session)
  CompactResult result;
  const bool ready = co_await start(true, /*logs_when_cancelled=*/false);
  if (!ready) {
    result.kind = CompactResult::Kind::cancelled;
    co_return result;
  }
  // Nothing worth condensing: no turn, no log write.
  if (!plan_compaction(session_->conversation, {host_.config().compact_keep_turns, 1}, result.message)) {
    co_await release();
    co_return result;
  }
  session_->conversation_known = false;
  std::exception_ptr failure;
  try {
    auto opened = [this] { return log_->begin_compact_turn(); };
    co_await write(opened);
    begun_ = true;
    if (cancelled()) {
      result.kind = CompactResult::Kind::cancelled;
    } else {
      result = co_await host_.run_compaction(session_, *log_, turn_, observer_, focus, true);
    }
    json::object reason = result.kind == CompactResult::Kind::cancelled ? events::reason("aborted")
                          : result.kind == CompactResult::Kind::failed ? events::error_reason(0, result.message)
                                                                        : events::reason("completed");
    auto end = [this, &reason] { return log_->end_turn(std::move(reason)); };
    co_await write(end);
    ended_ = true;
  } catch (...) {
    failure = std::current_exception();
  }
  co_await close(failure);
  co_return result;
}

} // namespace acp::engine
