#include "engine/turn_log.hpp"

#include "store/event_builders.hpp"
#include "store/records.hpp"

#include <boost/json.hpp>

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

const char* block_type(llm::DeltaKind kind) { return kind == llm::DeltaKind::text ? "text" : "reasoning"; }

// cacheReadTokens only when the provider reported it (contracts §4).
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

bool ChunkBuffer::add(const llm::Delta& delta) {
  if (delta.text.empty()) return false;
  if (pending_.empty()) pending_since_ = std::chrono::steady_clock::now();
  if (blocks_.empty() || blocks_.back().kind != delta.kind) {
    if (!blocks_.empty()) {
      auto index = static_cast<std::int64_t>(blocks_.size() - 1);
      pending_.push_back(chunk_event(turn_, step_, {{"type", "block-end"}, {"index", index},
                                                    {"block", {{"type", block_type(blocks_.back().kind)},
                                                               {"text", blocks_.back().text}}}}));
    }
    blocks_.push_back(TextBlock{delta.kind, {}});
    pending_.push_back(chunk_event(turn_, step_, {{"type", "block-start"},
                                                  {"index", static_cast<std::int64_t>(blocks_.size() - 1)},
                                                  {"blockType", block_type(delta.kind)}}));
  }
  auto index = static_cast<std::int64_t>(blocks_.size() - 1);
  blocks_.back().text += delta.text;
  pending_.push_back(delta.kind == llm::DeltaKind::text ? events::text_delta(turn_, step_, index, delta.text)
                                                        : events::reasoning_delta(turn_, step_, index, delta.text));
  return std::chrono::steady_clock::now() - pending_since_ >= kChunkBatchAge;
}

std::vector<store::NewEvent> ChunkBuffer::take() {
  std::vector<store::NewEvent> out = std::move(pending_);
  pending_.clear();
  return out;
}

void ChunkBuffer::close(const llm::Completion& completion, bool refused) {
  if (!blocks_.empty()) {
    auto index = static_cast<std::int64_t>(blocks_.size() - 1);
    pending_.push_back(chunk_event(turn_, step_, {{"type", "block-end"}, {"index", index},
                                                  {"block", {{"type", block_type(blocks_.back().kind)},
                                                             {"text", blocks_.back().text}}}}));
  }
  if (completion.usage)
    pending_.push_back(chunk_event(turn_, step_, {{"type", "usage"}, {"usage", usage_object(*completion.usage)}}));
  json::object reason = refused ? json::object{{"kind", "error"}, {"failure", refusal_failure()}}
                        : completion.stop == llm::StopKind::max_tokens ? json::object{{"kind", "max-tokens"}}
                                                                       : json::object{{"kind", "stop"}};
  pending_.push_back(chunk_event(turn_, step_, {{"type", "finish"}, {"reason", std::move(reason)}}));
}

TurnLog::TurnLog(store::SessionWriter writer) : writer_(std::move(writer)) { turn_ = writer_.last_turn() + 1; }

std::vector<json::object> TurnLog::append(std::vector<store::NewEvent> batch, bool sync) {
  return writer_.append(std::move(batch), sync);
}

std::vector<json::object> TurnLog::begin(std::vector<store::NewEvent> prefix, const std::string& user_text,
                                         std::optional<store::NewEvent> request_header, bool with_step) {
  std::vector<store::NewEvent> batch = std::move(prefix);
  batch.push_back(events::turn_start(turn_));
  std::int64_t user_seq = writer_.next_seq() + static_cast<std::int64_t>(batch.size());
  batch.push_back(events::user_message(user_text));
  // Like the original, a log without a title gets the fallback from the next direct message.
  if (!writer_.title()) {
    std::string title = events::fallback_title(user_text);
    if (!title.empty()) batch.push_back(events::session_title(title, user_seq));
  }
  if (with_step) {
    batch.push_back(events::step_start(turn_, step()));
    if (request_header) batch.push_back(std::move(*request_header));
  }
  return append(std::move(batch), false);
}

std::vector<json::object> TurnLog::open_step(std::optional<store::NewEvent> request_header) {
  std::vector<store::NewEvent> batch;
  batch.push_back(events::step_start(turn_, step()));
  if (request_header) batch.push_back(std::move(*request_header));
  return append(std::move(batch), false);
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

std::vector<json::object> TurnLog::chunks(std::vector<store::NewEvent> batch) {
  if (batch.empty()) return {};
  auto records = append(std::move(batch), false);
  for (const auto& r : records) chunk_seqs_.push_back(r.at("seq"));
  return records;
}

std::vector<json::object> TurnLog::finish(std::vector<store::NewEvent> last_chunks, const std::vector<TextBlock>& blocks,
                                          const llm::Completion& completion, const TurnEnding& ending) {
  using Kind = TurnEnding::Kind;
  std::vector<json::object> written = chunks(std::move(last_chunks));
  std::vector<store::NewEvent> batch;
  if (ending.kind == Kind::completed || ending.kind == Kind::max_tokens) {
    json::array content;
    for (const auto& b : blocks) content.push_back(json::object{{"type", block_type(b.kind)}, {"text", b.text}});
    std::optional<json::object> usage;
    if (completion.usage) usage = usage_object(*completion.usage);
    batch.push_back(events::assistant_message(turn_, step(), std::move(content), completion.provider, completion.model,
                                              std::move(usage), chunk_seqs_));
  }
  batch.push_back(events::step_end(turn_, step()));
  json::object reason;
  switch (ending.kind) {
  case Kind::completed: reason = events::reason("completed"); break;
  case Kind::max_tokens: reason = events::reason("max-tokens"); break;
  case Kind::aborted: reason = events::reason("aborted"); break;
  case Kind::refused: reason = json::object{{"kind", "error"}, {"step", step()}, {"failure", refusal_failure()}}; break;
  case Kind::error:
    reason = events::error_reason(step(), ending.message,
                                  ending.code ? std::optional<std::string_view>(*ending.code) : std::nullopt);
    break;
  }
  batch.push_back(events::turn_end(turn_, std::move(reason)));
  auto last = append(std::move(batch), true);
  written.insert(written.end(), std::make_move_iterator(last.begin()), std::make_move_iterator(last.end()));
  return written;
}

} // namespace acp::engine
