#include "engine/conversation.hpp"

#include "store/errors.hpp"
#include "store/records.hpp"

#include <boost/json.hpp>

#include <algorithm>

namespace acp::engine {

namespace json = boost::json;
using store::object_at;
using store::string_at;

namespace {

std::string assistant_text(const json::value& content) {
  std::string text;
  const auto* blocks = content.if_array();
  if (!blocks) return text;
  for (const auto& b : *blocks) {
    const auto* block = b.if_object();
    if (!block) continue;
    std::string_view type = string_at(*block, "type");
    std::string piece;
    if (type == "text") piece = std::string(string_at(*block, "text"));
    else if (type == "tool-call") {
      const auto* args = block->if_contains("arguments");
      std::string arguments = args && args->is_string() ? std::string(args->get_string())
                              : args                    ? json::serialize(*args)
                                                        : std::string();
      piece = "[tool " + std::string(string_at(*block, "name")) + "] " + arguments;
    }
    if (piece.empty()) continue;
    if (!text.empty()) text += "\n";
    text += piece;
  }
  return text;
}

std::int64_t int_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_int64() ? v->get_int64() : 0;
}

bool is_reference_snapshot(const json::object& data) {
  const json::object* source = object_at(data, "source");
  return source && string_at(*source, "kind") == "session-reference";
}

} // namespace

std::string content_text(const json::value& content) {
  std::string text;
  const auto* blocks = content.if_array();
  if (!blocks) return text;
  bool first = true;
  for (const auto& b : *blocks) {
    const auto* block = b.if_object();
    if (!block || string_at(*block, "type") != "text") continue;
    if (!first) text += "\n";
    text += string_at(*block, "text");
    first = false;
  }
  return text;
}

void Conversation::observe(const json::object& event) {
  const std::int64_t seq = next_seq_++;
  std::string_view type = string_at(event, "type");
  const json::object* data = object_at(event, "data");
  if (type == "turn/start") {
    open_turn_ = data ? int_at(*data, "turn") : 0;
    last_turn_ = std::max(last_turn_, open_turn_);
    return;
  }
  if (type == "turn/end") {
    const json::object* reason = data ? object_at(*data, "reason") : nullptr;
    if (reason && string_at(*reason, "kind") == "error") {
      // Either shape of the original's error reason: {message, code} or {failure: {message, code}}.
      const json::object* failure = object_at(*reason, "failure");
      std::string_view code = failure ? string_at(*failure, "code") : string_at(*reason, "code");
      if (code == "CONTENT_FILTER") refused_turns_.insert(data ? int_at(*data, "turn") : open_turn_);
    }
    open_turn_ = 0;
    return;
  }
  Entry entry;
  entry.seq = seq;
  entry.turn = open_turn_;
  if (type == "user/message" || type == "steering/message") {
    entry.role = llm::Role::user;
    if (data && !open_turn_ && is_reference_snapshot(*data)) entry.turn = last_turn_ + 1;
    if (const json::object* source = data ? object_at(*data, "source") : nullptr) {
      std::string_view kind = string_at(*source, "kind");
      entry.direct = type == "user/message" && kind == "user";
      entry.checkpoint = type == "user/message" && kind == "plugin" && string_at(*source, "plugin") == "compact";
    }
    if (const auto* content = data ? data->if_contains("content") : nullptr) entry.text = content_text(*content);
  } else if (type == "assistant/message") {
    entry.role = llm::Role::assistant;
    if (const auto* content = data ? data->if_contains("content") : nullptr) entry.text = assistant_text(*content);
  } else if (type == "tool/result") {
    entry.role = llm::Role::assistant;
    if (const auto* content = data ? data->if_contains("content") : nullptr)
      entry.text = "[result] " + content_text(*content);
  } else {
    return;  // not a surface event
  }
  const json::value* op = event.if_contains("surfaceOp");
  const json::object* replace = op ? op->if_object() : nullptr;
  if (!replace) {
    surface_.push_back(std::move(entry));
    return;
  }
  // Compaction (or a tool/result rewrite): the range [start, end] of the surface becomes this event.
  auto at = [&](std::string_view key) {
    std::int64_t want = int_at(*replace, key);
    auto it = std::find_if(surface_.begin(), surface_.end(), [want](const Entry& e) { return e.seq == want; });
    if (it == surface_.end())
      throw store::FoldError("session event seq " + std::to_string(seq) + " replace " + std::string(key) + " " +
                             std::to_string(want) + " is not on the surface");
    return it;
  };
  auto first = at("start");
  auto last = at("end");
  if (first > last)
    throw store::FoldError("session event seq " + std::to_string(seq) + " replace start comes after end on the surface");
  auto pos = surface_.erase(first, last + 1);
  surface_.insert(pos, std::move(entry));
}

std::vector<llm::Message> Conversation::messages() const { return messages(0, surface_.size()); }

std::vector<llm::Message> Conversation::messages(std::size_t first, std::size_t last) const {
  std::vector<llm::Message> out;
  for (std::size_t i = first; i < last && i < surface_.size(); ++i) {
    const Entry& e = surface_[i];
    if (e.text.empty() || (e.turn && refused_turns_.count(e.turn))) continue;
    if (e.role == llm::Role::assistant && !out.empty() && out.back().role == llm::Role::assistant) {
      out.back().text += "\n" + e.text;
      continue;
    }
    out.push_back({e.role, e.text});
  }
  return out;
}

} // namespace acp::engine
