#include "engine/turn_log.hpp"

#include "store/event_builders.hpp"
#include "store/records.hpp"
#include "support/utf8.hpp"

#include <boost/json.hpp>

#include <algorithm>

namespace acp::engine {

namespace json = boost::json;
namespace events = store::events;

namespace {

constexpr auto kChunkBatchAge = std::chrono::milliseconds(100);

store::NewEvent chunk_event(std::int64_t turn, std::int64_t step, json::object chunk) {
  store::NewEvent e;
  e.type = "assistant/chunk";
  e.data = json::object{{"turn", turn}, {"step", step}, {"chunk", std::move(chunk)}};
  return e;
}

const char* block_type(llm::DeltaKind kind) {
  switch (kind) {
  case llm::DeltaKind::text: return "text";
  case llm::DeltaKind::reasoning: return "reasoning";
  case llm::DeltaKind::tool_call: return "tool-call";
  }
  return "text";
}

// A block as assistant/message and block-end carry it: {type, text} or {type:"tool-call", id, name, arguments}.
json::object block_object(const TextBlock& b) {
  if (b.kind != llm::DeltaKind::tool_call) return json::object{{"type", block_type(b.kind)}, {"text", b.text}};
  return json::object{{"type", "tool-call"}, {"id", b.call_id}, {"name", b.call_name}, {"arguments", b.text}};
}

// cacheReadTokens only when the provider reported it (docs/decisions.md#session-store).
json::object usage_object(const llm::Usage& u) {
  json::object o{{"inputTokens", u.input_tokens}, {"outputTokens", u.output_tokens}};
  if (u.cached_input_tokens) o["cacheReadTokens"] = *u.cached_input_tokens;
  if (u.reasoning_tokens) o["reasoningTokens"] = *u.reasoning_tokens;
  return o;
}

// The original's LlmFailure shape: finish reasons carry `failure`, never message/code directly. The
// message is the harness's for an unmapped finish reason (`model stopped: <finish_reason>`).
json::object refusal_failure() {
  return json::object{{"message", "model stopped: content_filter"}, {"code", kContentFilterCode}};
}

} // namespace

void ChunkBuffer::push_event(store::NewEvent event) {
  PendingChunk chunk;
  chunk.event = std::make_unique<store::NewEvent>(std::move(event));
  pending_.push_back(std::move(chunk));
}

bool ChunkBuffer::add(const llm::Delta& delta) {
  const bool call = delta.kind == llm::DeltaKind::tool_call;
  const bool new_block = blocks_.empty() || blocks_.back().kind != delta.kind ||
                         (call && blocks_.back().call_index != delta.call_index);
  // An empty text delta says nothing; the first fragment of a call opens its block even when empty.
  if (delta.text.empty() && !(call && new_block)) return false;
  if (pending_.empty()) {
    pending_since_ = std::chrono::steady_clock::now();
    pending_bytes_ = 0;
  }
  if (new_block) {
    if (!blocks_.empty()) {
      auto index = static_cast<std::int64_t>(blocks_.size() - 1);
      push_event(chunk_event(turn_, step_, {{"type", "block-end"}, {"index", index}, {"block", block_object(blocks_.back())}}));
    }
    blocks_.push_back(TextBlock{delta.kind, {}, delta.call_index, delta.call_id, delta.call_name});
    push_event(chunk_event(turn_, step_, {{"type", "block-start"},
                                                  {"index", static_cast<std::int64_t>(blocks_.size() - 1)},
                                                  {"blockType", block_type(delta.kind)}}));
  }
  auto index = static_cast<std::int64_t>(blocks_.size() - 1);
  TextBlock& block = blocks_.back();
  block.text += delta.text;
  if (call) {
    // Later fragments may omit the id and name (OpenAI sends them once).
    if (block.call_id.empty()) block.call_id = delta.call_id;
    if (block.call_name.empty()) block.call_name = delta.call_name;
    json::object chunk{{"type", "tool-call-delta"}, {"index", index}, {"id", block.call_id}};
    if (!block.call_name.empty()) chunk["name"] = block.call_name;
    chunk["argumentsDelta"] = delta.text;
    push_event(chunk_event(turn_, step_, std::move(chunk)));
  } else {
    pending_.push_back(PendingChunk{index, delta.kind, delta.text, nullptr});
  }
  pending_bytes_ += delta.text.size();
  return pending_.size() >= kChunkBatchEvents || pending_bytes_ >= kChunkBatchBytes ||
         std::chrono::steady_clock::now() - pending_since_ >= kChunkBatchAge;
}

std::vector<llm::ToolCall> ChunkBuffer::tool_calls() const {
  std::vector<llm::ToolCall> calls;
  for (const auto& b : blocks_)
    if (b.kind == llm::DeltaKind::tool_call) calls.push_back(llm::ToolCall{b.call_id, b.call_name, b.text});
  return calls;
}

ChunkBatch ChunkBuffer::take() {
  ChunkBatch out = std::move(pending_);
  pending_.clear();
  pending_bytes_ = 0;
  return out;
}

void ChunkBuffer::close(const llm::Completion& completion, bool refused) {
  if (!blocks_.empty()) {
    auto index = static_cast<std::int64_t>(blocks_.size() - 1);
    push_event(chunk_event(turn_, step_, {{"type", "block-end"}, {"index", index}, {"block", block_object(blocks_.back())}}));
  }
  if (completion.usage)
    push_event(chunk_event(turn_, step_, {{"type", "usage"}, {"usage", usage_object(*completion.usage)}}));
  const bool calls = std::any_of(blocks_.begin(), blocks_.end(),
                                 [](const TextBlock& b) { return b.kind == llm::DeltaKind::tool_call; });
  json::object reason = refused ? json::object{{"kind", "error"}, {"failure", refusal_failure()}}
                        : completion.stop == llm::StopKind::max_tokens ? json::object{{"kind", "max-tokens"}}
                        : calls                                       ? json::object{{"kind", "tool-calls"}}
                                                                       : json::object{{"kind", "stop"}};
  push_event(chunk_event(turn_, step_, {{"type", "finish"}, {"reason", std::move(reason)}}));
}

TurnLog::TurnLog(store::SessionWriter writer) : writer_(std::move(writer)) { turn_ = writer_.last_turn() + 1; }

std::vector<json::object> TurnLog::append(std::vector<store::NewEvent> batch, bool sync) {
  return writer_.append(std::move(batch), sync);
}

std::vector<json::object> TurnLog::begin(std::vector<store::NewEvent> prefix, const std::string& user_text,
                                         std::optional<store::NewEvent> request_header, bool with_step,
                                         std::optional<json::array> content) {
  std::vector<store::NewEvent> batch = std::move(prefix);
  batch.push_back(events::turn_start(turn_));
  std::int64_t user_seq = writer_.next_seq() + static_cast<std::int64_t>(batch.size());
  batch.push_back(content ? events::user_message(std::move(*content), json::object{{"kind", "user"}})
                          : events::user_message(user_text));
  // Like the original, a log without a title gets the fallback from the next direct message.
  if (!writer_.title()) {
    std::string title = events::fallback_title(user_text);
    if (!title.empty()) batch.push_back(events::session_title(title, user_seq));
  }
  if (with_step) {
    batch.push_back(events::step_start(turn_, step_));
    if (request_header) batch.push_back(std::move(*request_header));
  }
  auto written = append(std::move(batch), false);
  if (with_step) step_open_ = step_used_ = true;
  return written;
}

std::vector<json::object> TurnLog::open_step(std::optional<store::NewEvent> request_header) {
  const std::int64_t step = step_used_ ? step_ + 1 : step_;
  std::vector<store::NewEvent> batch;
  if (step_open_) batch.push_back(events::step_end(turn_, step_));
  batch.push_back(events::step_start(turn_, step));
  if (request_header) batch.push_back(std::move(*request_header));
  auto written = append(std::move(batch), false);
  step_ = step;
  step_open_ = step_used_ = true;
  chunk_runs_.clear();
  return written;
}

store::NewEvent TurnLog::message(const std::vector<TextBlock>& blocks, const llm::Completion& completion) {
  json::array content;
  for (const auto& b : blocks) content.push_back(block_object(b));
  std::optional<json::object> usage;
  if (completion.usage) usage = usage_object(*completion.usage);
  json::array chunk_seqs;
  std::int64_t n = 0;
  for (const auto& [from, to] : chunk_runs_) n += to - from + 1;
  chunk_seqs.reserve(static_cast<std::size_t>(n));
  for (const auto& [from, to] : chunk_runs_)
    for (std::int64_t seq = from; seq <= to; ++seq) chunk_seqs.push_back(seq);
  chunk_runs_.clear();
  return events::assistant_message(turn_, step_, std::move(content), completion.provider, completion.model,
                                   std::move(usage), std::move(chunk_seqs));
}

std::vector<json::object> TurnLog::answer(ChunkBatch last_chunks, const std::vector<TextBlock>& blocks,
                                          const llm::Completion& completion) {
  chunks(std::move(last_chunks));
  std::vector<store::NewEvent> batch;
  batch.push_back(message(blocks, completion));
  return append(std::move(batch), false);
}

std::vector<json::object> TurnLog::records(std::vector<store::NewEvent> batch) { return append(std::move(batch), false); }

std::vector<json::object> TurnLog::end(const TurnEnding& ending) {
  std::vector<store::NewEvent> batch;
  if (step_open_) batch.push_back(events::step_end(turn_, step_));
  batch.push_back(events::turn_end(turn_, turn_reason(ending)));
  auto written = append(std::move(batch), true);
  step_open_ = false;
  return written;
}

std::vector<json::object> TurnLog::begin_compact_turn() {
  std::vector<store::NewEvent> batch;
  batch.push_back(events::compact_turn_start(turn_));
  return append(std::move(batch), false);
}

std::vector<json::object> TurnLog::compact_start() {
  std::vector<store::NewEvent> batch;
  batch.push_back(events::compact_start(turn_));
  auto records = append(std::move(batch), false);
  compact_start_seq_ = records.front().at("seq").as_int64();
  return records;
}

std::vector<json::object> TurnLog::compact_done(json::array summary, const json::array& shadowed_seqs,
                                                std::int64_t shadowed_tokens, const std::string& provider,
                                                const std::string& model, std::optional<std::int64_t> max_tokens) {
  const std::int64_t summary_seq = writer_.next_seq();
  std::vector<store::NewEvent> batch;
  store::NewEvent checkpoint = events::compact_checkpoint(summary, compact_start_seq_, summary_seq, shadowed_seqs);
  batch.push_back(events::compact_summary(std::move(summary), shadowed_seqs.front().as_int64(),
                                          shadowed_seqs.back().as_int64(), shadowed_seqs, shadowed_tokens, provider,
                                          model, max_tokens));
  batch.push_back(std::move(checkpoint));
  batch.push_back(events::compact_end(turn_));
  return append(std::move(batch), true);
}

std::vector<json::object> TurnLog::compact_failed(const std::string& error) {
  std::vector<store::NewEvent> batch;
  batch.push_back(events::compact_end(turn_, error));
  return append(std::move(batch), true);
}

std::vector<json::object> TurnLog::end_turn(json::object reason) {
  std::vector<store::NewEvent> batch;
  batch.push_back(events::turn_end(turn_, std::move(reason)));
  return append(std::move(batch), true);
}

void TurnLog::chunks(ChunkBatch batch) {
  if (batch.empty()) return;
  const std::int64_t first = writer_.next_seq();
  const auto n = static_cast<std::int64_t>(batch.size());
  // Lines straight from the deltas: no records are built, only their seqs are needed.
  store::ChunkLines lines = writer_.chunk_lines();
  for (auto& c : batch) {
    if (c.event) lines.add_event(std::move(*c.event));
    else lines.add_delta(turn_, step_, c.kind == llm::DeltaKind::text ? "text-delta" : "reasoning-delta", c.index, c.text);
  }
  ChunkBatch().swap(batch);
  writer_.append_chunk_lines(lines, false);
  if (!chunk_runs_.empty() && chunk_runs_.back().second + 1 == first) chunk_runs_.back().second = first + n - 1;
  else chunk_runs_.emplace_back(first, first + n - 1);
  chunk_events_ += n;
  unobserved_chunks_ += n;
}

std::vector<json::object> TurnLog::finish(ChunkBatch last_chunks, const std::vector<TextBlock>& blocks,
                                          const llm::Completion& completion, const TurnEnding& ending) {
  using Kind = TurnEnding::Kind;
  chunks(std::move(last_chunks));
  std::vector<store::NewEvent> batch;
  if (ending.kind == Kind::completed || ending.kind == Kind::max_tokens) batch.push_back(message(blocks, completion));
  if (step_open_) batch.push_back(events::step_end(turn_, step_));
  batch.push_back(events::turn_end(turn_, turn_reason(ending)));
  auto written = append(std::move(batch), true);
  step_open_ = false;
  return written;
}

json::object TurnLog::turn_reason(const TurnEnding& ending) const {
  using Kind = TurnEnding::Kind;
  switch (ending.kind) {
  case Kind::completed: return events::reason("completed");
  case Kind::max_tokens: return events::reason("max-tokens");
  case Kind::aborted: return events::reason("aborted");
  case Kind::step_limit: return events::reason("blocked");
  case Kind::refused: return json::object{{"kind", "error"}, {"step", step_}, {"failure", refusal_failure()}};
  case Kind::error: break;
  }
  // Any exception's message may end a turn, and one may quote a path or a server: the log takes text only.
  return events::error_reason(step_, support::valid_utf8_text(ending.message),
                              ending.code ? std::optional<std::string_view>(*ending.code) : std::nullopt);
}

} // namespace acp::engine
