#include "handlers/turn_recorder.hpp"

#include "store/event_builders.hpp"

#include <boost/json.hpp>

namespace acp::handlers {

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

json::object usage_object(const llm::Usage& u) {
  json::object o{{"inputTokens", u.input_tokens}, {"outputTokens", u.output_tokens},
                 {"cacheReadTokens", u.cached_input_tokens.value_or(0)}};
  if (u.reasoning_tokens) o["reasoningTokens"] = *u.reasoning_tokens;
  return o;
}

} // namespace

TurnRecorder::TurnRecorder(store::SessionWriter writer) : writer_(std::move(writer)) { turn_ = writer_.last_turn() + 1; }

std::optional<std::string> TurnRecorder::begin(std::vector<store::NewEvent> prefix, const std::string& user_text) {
  std::vector<store::NewEvent> batch = std::move(prefix);
  batch.push_back(events::turn_start(turn_));
  std::int64_t user_seq = writer_.next_seq() + static_cast<std::int64_t>(batch.size());
  batch.push_back(events::user_message(user_text));
  std::optional<std::string> title;
  if (turn_ == 1 && !writer_.title()) {
    title = events::fallback_title(user_text);
    batch.push_back(events::session_title(*title, user_seq));
  }
  batch.push_back(events::step_start(turn_, step_));
  if (request_header_) batch.push_back(std::move(*request_header_));
  request_header_.reset();
  writer_.append(std::move(batch));
  return title;
}

void TurnRecorder::delta(const llm::Delta& delta) {
  if (delta.text.empty()) return;
  if (pending_.empty()) pending_since_ = std::chrono::steady_clock::now();
  if (blocks_.empty() || blocks_.back().kind != delta.kind) {
    if (!blocks_.empty()) {
      auto index = static_cast<std::int64_t>(blocks_.size() - 1);
      pending_.push_back(chunk_event(turn_, step_, {{"type", "block-end"}, {"index", index},
                                                    {"block", {{"type", block_type(blocks_.back().kind)},
                                                               {"text", blocks_.back().text}}}}));
    }
    blocks_.push_back(Block{delta.kind, {}});
    pending_.push_back(chunk_event(turn_, step_, {{"type", "block-start"},
                                                  {"index", static_cast<std::int64_t>(blocks_.size() - 1)},
                                                  {"blockType", block_type(delta.kind)}}));
  }
  auto index = static_cast<std::int64_t>(blocks_.size() - 1);
  blocks_.back().text += delta.text;
  if (delta.kind == llm::DeltaKind::text) text_ += delta.text;
  pending_.push_back(delta.kind == llm::DeltaKind::text ? events::text_delta(turn_, step_, index, delta.text)
                                                        : events::reasoning_delta(turn_, step_, index, delta.text));
  if (std::chrono::steady_clock::now() - pending_since_ >= kChunkBatchAge) flush();
}

void TurnRecorder::flush() {
  if (pending_.empty()) return;
  std::int64_t first = writer_.next_seq();
  std::size_t n = pending_.size();
  writer_.append(std::move(pending_));
  pending_.clear();
  for (std::size_t i = 0; i < n; ++i) chunk_seqs_.push_back(first + static_cast<std::int64_t>(i));
}

void TurnRecorder::finish(const llm::Completion& completion, const std::optional<std::string>& failure,
                          const std::optional<std::string>& failure_code) {
  bool cancelled = completion.stop == llm::StopKind::cancelled;
  bool finished = !cancelled && !failure;
  if (finished) {
    if (!blocks_.empty()) {
      auto index = static_cast<std::int64_t>(blocks_.size() - 1);
      pending_.push_back(chunk_event(turn_, step_, {{"type", "block-end"}, {"index", index},
                                                    {"block", {{"type", block_type(blocks_.back().kind)},
                                                               {"text", blocks_.back().text}}}}));
    }
    if (completion.usage) pending_.push_back(chunk_event(turn_, step_, {{"type", "usage"}, {"usage", usage_object(*completion.usage)}}));
    const char* finish_kind = completion.stop == llm::StopKind::max_tokens ? "length"
                              : completion.stop == llm::StopKind::refusal  ? "content-filter"
                                                                           : "stop";
    pending_.push_back(chunk_event(turn_, step_, {{"type", "finish"}, {"reason", {{"kind", finish_kind}}}}));
  }
  flush();

  std::vector<store::NewEvent> batch;
  if (finished) {
    json::array content;
    for (const auto& b : blocks_) content.push_back(json::object{{"type", block_type(b.kind)}, {"text", b.text}});
    std::optional<json::object> usage;
    if (completion.usage) usage = usage_object(*completion.usage);
    batch.push_back(events::assistant_message(turn_, step_, std::move(content), completion.provider, completion.model,
                                              std::move(usage), chunk_seqs_));
  }
  batch.push_back(events::step_end(turn_, step_));
  json::object reason = failure      ? events::error_reason(step_, *failure, failure_code)
                        : cancelled  ? events::reason("aborted")
                        : completion.stop == llm::StopKind::max_tokens ? events::reason("max-tokens")
                                                                        : events::reason("completed");
  batch.push_back(events::turn_end(turn_, std::move(reason)));
  writer_.append(std::move(batch), /*sync=*/true);
}

} // namespace acp::handlers
