#include "engine/conversation.hpp"

#include "store/attachments.hpp"
#include "store/errors.hpp"
#include "store/records.hpp"
#include "support/json_text.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <functional>
#include <unordered_map>

namespace acp::engine {

namespace json = boost::json;
using store::object_at;
using store::string_at;

namespace {

constexpr std::string_view kNoOutput = "(no output)";

std::int64_t int_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v ? store::safe_int(*v).value_or(0) : 0;
}

std::string image_placeholder(const json::object& block) {
  std::vector<std::string> parts;
  if (const json::object* a = object_at(block, "attachment")) {
    std::string_view label = string_at(*a, "name");
    if (label.empty()) label = string_at(*a, "attachmentId");
    if (!label.empty()) parts.emplace_back(label);
    if (std::string_view type = string_at(*a, "mediaType"); !type.empty()) parts.emplace_back(type);
    if (const auto* bytes = a->if_contains("bytes"))
      if (auto n = store::safe_int(*bytes)) parts.push_back(std::to_string(*n) + " bytes");
  }
  std::string out = "[image";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : ": ") + parts[i];
  return out + " omitted]";
}

// The tool-call blocks of an assistant message's content.
std::vector<llm::ToolCall> tool_calls(const json::value& content) {
  std::vector<llm::ToolCall> calls;
  const auto* blocks = content.if_array();
  if (!blocks) return calls;
  for (const auto& b : *blocks) {
    const auto* block = b.if_object();
    if (!block || string_at(*block, "type") != "tool-call") continue;
    const auto* args = block->if_contains("arguments");
    calls.push_back({std::string(string_at(*block, "id")), std::string(string_at(*block, "name")),
                     args && args->is_string() ? std::string(args->get_string())
                     : args                    ? json::serialize(*args)
                                               : std::string()});
  }
  return calls;
}

// A user message's text as request_text() gives it, each image's placeholder place recorded so a
// model that takes images can be sent the image there instead.
void user_content(const json::value& content, llm::Message& m) {
  const auto* blocks = content.if_array();
  if (!blocks) return;
  for (const auto& b : *blocks) {
    const auto* block = b.if_object();
    if (!block) continue;
    std::string_view type = string_at(*block, "type");
    if (type == "text") {
      m.text += string_at(*block, "text");
    } else if (type == "image") {
      std::string placeholder = image_placeholder(*block);
      if (const json::object* a = object_at(*block, "attachment"))
        m.images.push_back({m.text.size(), placeholder.size(), json::serialize(*a), std::string(string_at(*a, "mediaType"))});
      m.text += placeholder;
    }
  }
}

bool is_reference_snapshot(const json::object& data) {
  const json::object* source = object_at(data, "source");
  return source && string_at(*source, "kind") == "session-reference";
}

} // namespace

std::string join_content(const json::value& content, std::string_view separator,
                         const std::function<std::string(const json::object&)>& image) {
  std::string text;
  const auto* blocks = content.if_array();
  if (!blocks) return text;
  bool first = true;
  for (const auto& b : *blocks) {
    const auto* block = b.if_object();
    if (!block) continue;
    std::string_view type = string_at(*block, "type");
    if (type != "text" && !(type == "image" && image)) continue;
    if (!first) text += separator;
    if (type == "text") text += string_at(*block, "text");
    else text += image(*block);
    first = false;
  }
  return text;
}

std::string content_text(const json::value& content) { return join_content(content, "\n"); }

std::string request_text(const json::value& content) { return join_content(content, "", image_placeholder); }

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
  const json::value* content = data ? data->if_contains("content") : nullptr;
  llm::Message& m = entry.message;
  if (type == "user/message" || type == "steering/message") {
    m.role = llm::Role::user;
    if (data && !open_turn_ && is_reference_snapshot(*data)) entry.turn = last_turn_ + 1;
    if (const json::object* source = data ? object_at(*data, "source") : nullptr) {
      std::string_view kind = string_at(*source, "kind");
      entry.direct = type == "user/message" && kind == "user";
      entry.checkpoint = type == "user/message" && kind == "plugin" && string_at(*source, "plugin") == "compact";
    }
    if (content) user_content(*content, m);
  } else if (type == "assistant/message") {
    m.role = llm::Role::assistant;
    if (content) {
      m.text = request_text(*content);
      m.tool_calls = tool_calls(*content);
    }
  } else if (type == "tool/result") {
    m.role = llm::Role::tool;
    m.tool_call_id = data ? string_at(*data, "callId") : std::string_view();
    if (content) m.text = request_text(*content);
    if (m.text.empty()) m.text = kNoOutput;
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

void load_images(std::vector<llm::Message>& messages, const std::string& harness_home) {
  // One read per distinct object: a long session shows the same picture in many requests' messages.
  std::unordered_map<std::string, std::shared_ptr<const std::string>> loaded;
  for (auto& m : messages)
    for (auto& image : m.images) {
      if (image.data) continue;
      auto [it, fresh] = loaded.try_emplace(image.attachment);
      if (fresh) {
        json::error_code ec;
        json::value ref = support::parse_json(image.attachment, ec);
        if (!ec && ref.is_object())
          if (std::optional<std::string> bytes = store::read_image(harness_home, ref.get_object()))
            it->second = std::make_shared<const std::string>(std::move(*bytes));
      }
      image.data = it->second;
    }
}

std::vector<llm::Message> Conversation::messages() const { return messages(0, surface_.size()); }

std::vector<llm::Message> Conversation::messages(std::size_t first, std::size_t last) const {
  last = std::min(last, surface_.size());
  auto left_out = [this](const Entry& e) { return e.turn && refused_turns_.count(e.turn); };
  // Each call's answer: the first result for its id (taken at most once).
  std::unordered_map<std::string_view, std::size_t> answer;
  for (std::size_t i = first; i < last; ++i) {
    const Entry& e = surface_[i];
    if (e.message.role == llm::Role::tool && !left_out(e)) answer.emplace(e.message.tool_call_id, i);
  }
  std::vector<llm::Message> out;
  for (std::size_t i = first; i < last; ++i) {
    const Entry& e = surface_[i];
    const llm::Message& m = e.message;
    // Tool messages go out right after their call, below.
    if (left_out(e) || m.role == llm::Role::tool || (m.text.empty() && m.tool_calls.empty())) continue;
    if (m.role == llm::Role::assistant && !out.empty() && out.back().role == llm::Role::assistant) {
      llm::Message& merged = out.back();
      if (!merged.text.empty() && !m.text.empty()) merged.text += "\n";
      merged.text += m.text;
      merged.tool_calls.insert(merged.tool_calls.end(), m.tool_calls.begin(), m.tool_calls.end());
    } else {
      out.push_back(m);
    }
    std::vector<std::size_t> answers;  // in surface order, as the harness sends them
    std::vector<std::string_view> unanswered;
    for (const auto& call : m.tool_calls) {
      auto it = answer.find(call.id);
      if (it != answer.end() && it->second > i) {
        answers.push_back(it->second);
        answer.erase(it);
      } else {
        unanswered.push_back(call.id);
      }
    }
    std::sort(answers.begin(), answers.end());
    for (std::size_t at : answers) out.push_back(surface_[at].message);
    for (std::string_view id : unanswered) out.push_back({llm::Role::tool, std::string(kNoToolResult), {}, std::string(id)});
  }
  return out;
}

} // namespace acp::engine
