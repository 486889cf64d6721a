#include "handlers/replay.hpp"

#include "engine/conversation.hpp"
#include "handlers/card_text.hpp"
#include "handlers/compaction_card.hpp"
#include "handlers/message_id.hpp"
#include "handlers/reference_card.hpp"
#include "handlers/text_chunks.hpp"
#include "handlers/tool_card.hpp"
#include "store/attachments.hpp"
#include "store/records.hpp"
#include "support/image.hpp"
#include "support/json_number.hpp"

#include <boost/json.hpp>

#include <sys/stat.h>

#include <utility>

namespace acp::handlers {

namespace json = boost::json;
using namespace protocol;
using store::attachment_hex;
using store::object_at;
using store::string_at;

namespace {

std::int64_t num(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v ? support::json_integer(*v).value_or(0) : 0;
}

TextContent text_block(std::string text) { return TextContent{std::move(text), std::nullopt, std::nullopt}; }

SessionUpdate agent_text(std::string text, std::string id) {
  return AgentMessageChunk{text_block(std::move(text)), std::move(id), {}};
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// `[image <name> (<mediaType>, <N> bytes)]`: clients get no image bytes on replay (the attachment
// store is the harness's), so the text says what was there, and whether the attachment still is.
std::string image_placeholder(const json::object& block, const std::string& harness_home) {
  const json::object* attachment = object_at(block, "attachment");
  std::string out = "[image";
  std::string details;
  std::string_view hex;
  if (attachment) {
    if (std::string name = one_line(string_at(*attachment, "name")); !name.empty()) out += " " + name;
    details = one_line(string_at(*attachment, "mediaType"));
    const auto* bytes = attachment->if_contains("bytes");
    if (auto n = bytes ? store::safe_int(*bytes) : std::nullopt; n && *n >= 0)
      details += (details.empty() ? "" : ", ") + std::to_string(*n) + " bytes";
    hex = attachment_hex(string_at(*attachment, "attachmentId"));
  }
  if (!details.empty()) out += " (" + details + ")";
  // A stat on the replay's pool thread (session/load reads the log there, never on the connection's).
  if (!harness_home.empty() &&
      (hex.empty() ||
       !is_file(store::attachment_object_path(harness_home, hex))))
    out += " \u2014 attachment missing";
  return out + "]";
}

PlanEntryStatus plan_status(std::string_view s) {
  if (s == "in_progress" || s == "in-progress") return PlanEntryStatus::in_progress;
  if (s == "completed" || s == "done") return PlanEntryStatus::completed;
  return PlanEntryStatus::pending;
}

Plan todo_plan(const json::object& data) {
  Plan plan;
  if (const auto* todos = data.if_contains("todos"); todos && todos->is_array()) {
    for (const auto& t : todos->get_array()) {
      const auto* todo = t.if_object();
      if (!todo) continue;
      plan.entries.push_back(PlanEntry{std::string(string_at(*todo, "content")), PlanEntryPriority::medium,
                                       plan_status(string_at(*todo, "status"))});
    }
  }
  return plan;
}

} // namespace

const std::string& Replayer::block_id(std::string_view kind, std::int64_t turn, std::int64_t step, std::int64_t block) {
  std::string place = block_place(kind, turn, step, block);
  if (place != block_place_) {
    block_id_ = message_id(places_.session_id, place);
    block_place_ = std::move(place);
  }
  return block_id_;
}

std::string Replayer::seq_id(std::string_view kind, std::int64_t seq) const {
  return message_id(places_.session_id, std::string(kind) + "/" + std::to_string(seq));
}

std::string Replayer::display_text(const json::value& content) const {
  return engine::join_content(content, "\n",
                              [&](const json::object& block) { return image_placeholder(block, places_.harness_home); });
}

// A direct message as the user sent it: its text, and each image whose object is in the store (and
// verifies) as an image block where it stood; an image that is not there shows as its placeholder.
void Replayer::user_content(const json::value& content, std::string id, std::vector<SessionUpdate>& out) const {
  const json::array* blocks = content.if_array();
  if (!blocks) return;
  std::string text;
  bool first = true;
  auto flush = [&] {
    if (!text.empty()) out.push_back(UserMessageChunk{text_block(std::exchange(text, {})), id, {}});
  };
  for (const auto& b : *blocks) {
    const json::object* block = b.if_object();
    if (!block) continue;
    const std::string_view type = string_at(*block, "type");
    if (type != "text" && type != "image") continue;
    const json::object* attachment = type == "image" ? object_at(*block, "attachment") : nullptr;
    std::optional<std::string> bytes;
    if (attachment && !places_.harness_home.empty()) bytes = store::read_image(places_.harness_home, *attachment);
    if (bytes) {
      flush();
      out.push_back(UserMessageChunk{ImageContent{support::base64_encode(*bytes), std::string(string_at(*attachment, "mediaType")),
                                                  std::nullopt, std::nullopt, std::nullopt},
                                     id, {}});
      first = true;  // the text after an image starts a chunk of its own, without a separator
      continue;
    }
    if (!first) text += '\n';
    text += type == "text" ? std::string(string_at(*block, "text")) : image_placeholder(*block, places_.harness_home);
    first = false;
  }
  flush();
}

void Replayer::show_call(std::string id, std::string_view name, const json::value* arguments,
                         std::vector<SessionUpdate>& out) {
  if (id.empty() || !tool_calls_shown_.insert(id).second) return;
  json::value args = parse_arguments(arguments);
  if (changes_file(name)) pending_changes_.emplace(id, argument_diff(name, args, places_.cwd));
  out.push_back(tool_call_card(std::move(id), name, std::move(args), places_.cwd));
}

void Replayer::attach_terminal(std::string id, std::string terminal_id) {
  terminals_.insert_or_assign(std::move(id), std::move(terminal_id));
}

ToolCallUpdate Replayer::result_update(const json::object& data, std::string id) {
  ToolCallUpdate update;
  const auto* is_error = data.if_contains("isError");
  const std::optional<CommandEnd> end = result_command_end(data);
  // A command that exited non-zero fails its card, as the peers' do (the model still reads its
  // output as a result, not an error).
  const bool failed = (is_error && is_error->is_bool() && is_error->get_bool()) || (end && failed_end(*end));
  update.status = failed ? ToolCallStatus::failed : ToolCallStatus::completed;
  if (end) update._meta = json::object{{"dsh-acp/exitStatus", command_end_json(*end)}};
  std::vector<ToolCallContent> content;
  if (auto pending = pending_changes_.find(id); pending != pending_changes_.end()) {
    // A change shows as a diff only once it happened: the hunks the result records, else the
    // change the arguments asked for.
    if (!failed) {
      std::vector<ToolDiff> diffs = result_diffs(data, places_.cwd);
      if (diffs.empty() && pending->second) diffs.push_back(std::move(*pending->second));
      for (auto& diff : diffs) content.emplace_back(std::move(diff));
    }
    pending_changes_.erase(pending);
  }
  std::string text;
  if (const auto* result = data.if_contains("content")) text = display_text(*result);
  // What the tool returned, for clients that read it rather than the content: the text the model
  // read (cut to kMaxRawOutputBytes), whether it was an error, and a command's end.
  json::object raw;
  raw["output"] = bounded_text(text, kMaxRawOutputBytes);
  raw["isError"] = is_error && is_error->is_bool() && is_error->get_bool();
  if (end) raw["exitStatus"] = command_end_json(*end);
  update.rawOutput = std::move(raw);
  if (auto terminal = terminals_.find(id); terminal != terminals_.end()) {
    // The terminal shows the output; the line beside it how the command ended, or else why it failed.
    content.emplace_back(ToolTerminal{std::move(terminal->second)});
    terminals_.erase(terminal);
    const json::object* error = object_at(data, "error");
    std::string line = end ? command_end_text(*end, error && string_at(*error, "code") == "TOOL_ABORTED") : std::string();
    if (line.empty() && failed) line = std::move(text);
    if (!line.empty()) content.emplace_back(ToolContent{text_block(std::move(line))});
  } else if (!text.empty()) {
    content.emplace_back(ToolContent{text_block(std::move(text))});
  }
  if (!content.empty()) update.content = std::move(content);
  update.toolCallId = std::move(id);
  return update;
}

namespace {

// The member `key` of `o`, looked at first at position `hint`, where the writers put it: the same
// as o.if_contains(key) (an object's keys are unique), without comparing the keys before it.
const json::value* member(const json::object& o, std::size_t hint, std::string_view key) {
  if (hint < o.size()) {
    const json::key_value_pair& kv = o.begin()[hint];
    if (kv.key() == key) return &kv.value();
  }
  return o.if_contains(key);
}

std::string_view string_member(const json::object& o, std::size_t hint, std::string_view key) {
  const json::value* v = member(o, hint, key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

const json::object* object_member(const json::object& o, std::size_t hint, std::string_view key) {
  const json::value* v = member(o, hint, key);
  return v ? v->if_object() : nullptr;
}

std::int64_t num_member(const json::object& o, std::size_t hint, std::string_view key) {
  const json::value* v = member(o, hint, key);
  return v ? support::json_integer(*v).value_or(0) : 0;
}

} // namespace

std::size_t Replayer::plain_chunk(const json::object& event, std::string_view& text, std::string_view& message_id) {
  // The same decisions as on_chunk (on_event's assistant/chunk branch), in the same order. Positions as
  // written: {type, seq, time, data{turn, step, chunk{type, index, text}}}.
  if (string_member(event, 0, "type") != "assistant/chunk") return 0;
  const json::object* data = object_member(event, 3, "data");
  if (!data) return 0;
  const json::object* chunk = object_member(*data, 2, "chunk");
  if (!chunk) return 0;
  std::string_view kind = string_member(*chunk, 0, "type");
  const std::size_t index = kind == "text-delta" ? 1 : kind == "reasoning-delta" ? 2 : 0;
  if (index == 0) return 0;
  std::string_view t = string_member(*chunk, 2, "text");
  if (t.empty()) return 0;
  after_direct_message_ = false;
  const std::pair<std::int64_t, std::int64_t> step{num_member(*data, 0, "turn"), num_member(*data, 1, "step")};
  if (last_step_with_chunks_ != step) {
    steps_with_chunks_.insert(step);
    last_step_with_chunks_ = step;
  }
  text = t;
  message_id = block_id(index == 1 ? "text" : "reasoning", step.first, step.second, num_member(*chunk, 1, "index"));
  return index;
}

void Replayer::on_event(const json::object& event, std::vector<SessionUpdate>& out) {
  const bool after_direct_message = std::exchange(after_direct_message_, false);
  const bool after_tool_result = std::exchange(after_tool_result_, false);
  std::string_view type = string_at(event, "type");
  const json::object* data = object_at(event, "data");
  if (!data) return;

  if (type == "user/message" || type == "steering/message") {
    on_message(type, event, *data, after_direct_message, after_tool_result, out);
  } else if (type == "assistant/chunk") {
    on_chunk(*data, out);
  } else if (type == "assistant/message") {
    on_assistant_message(*data, out);
  } else if (type == "tool/call") {
    show_call(std::string(string_at(*data, "callId")), string_at(*data, "name"), data->if_contains("arguments"), out);
  } else if (type == "tool/result") {
    on_tool_result(event, *data, out);
  } else if (type == "compact/start" || type == "compact/summary") {
    compact_events_.insert(num(event, "seq"));
  } else if (type == "todo/write") {
    out.push_back(todo_plan(*data));
  } else if (type == "session/title") {
    SessionInfoUpdate info;
    info.title = std::string(string_at(*data, "title"));
    out.push_back(std::move(info));
  } else if (type == "turn/end") {
    on_turn_end(event, *data, out);
  }
}

void Replayer::on_message(std::string_view type, const json::object& event, const json::object& data,
                          bool after_direct_message, bool after_tool_result, std::vector<SessionUpdate>& out) {
  const json::object* source = object_at(data, "source");
  if (!source) return;
  if (type == "user/message" && is_reference_source(*source)) {
    // The 0.1.1 harness writes the recall right after its direct message: the card goes there.
    if (after_direct_message && string_at(*source, "form") == "recall") {
      out.push_back(reference_card(num(event, "seq"), *source));
      return;
    }
    // The recall tool logs its snapshots after the step's tool results.
    if (after_tool_result) {
      out.push_back(reference_card(num(event, "seq"), *source));
      after_tool_result_ = true;
      return;
    }
    // Its own storage: not the snapshot line's arena, which holds the whole snapshot text.
    pending_card_.emplace(num(event, "seq"), json::object(*source, json::storage_ptr()));
    return;
  }
  if (type == "user/message" && is_checkpoint_source(*source)) {
    out.push_back(compaction_card(event, compact_events_));
    return;
  }
  if (string_at(*source, "kind") != "user") return;  // injected context is never shown as user text
  if (const auto* content = data.if_contains("content")) user_content(*content, seq_id("user", num(event, "seq")), out);
  if (pending_card_) {
    out.push_back(reference_card(pending_card_->first, pending_card_->second));
    pending_card_.reset();
  }
  after_direct_message_ = true;
}

void Replayer::on_chunk(const json::object& data, std::vector<SessionUpdate>& out) {
  const json::object* chunk = object_at(data, "chunk");
  if (!chunk) return;
  std::string_view kind = string_at(*chunk, "type");
  std::string text(string_at(*chunk, "text"));
  if (text.empty()) return;
  const std::pair<std::int64_t, std::int64_t> step{num(data, "turn"), num(data, "step")};
  const std::int64_t block = num(*chunk, "index");
  if (kind == "text-delta") out.push_back(agent_text(std::move(text), block_id("text", step.first, step.second, block)));
  else if (kind == "reasoning-delta")
    out.push_back(AgentThoughtChunk{text_block(std::move(text)), block_id("reasoning", step.first, step.second, block), {}});
  else return;
  if (last_step_with_chunks_ != step) {
    steps_with_chunks_.insert(step);
    last_step_with_chunks_ = step;
  }
}

void Replayer::on_assistant_message(const json::object& data, std::vector<SessionUpdate>& out) {
  const std::int64_t turn = num(data, "turn"), step = num(data, "step");
  bool streamed = steps_with_chunks_.count({turn, step}) > 0;
  const auto* content = data.if_contains("content");
  if (!content || !content->is_array()) return;
  // A block's place is its position, the index its chunks carried when it streamed.
  std::int64_t position = -1;
  for (const auto& b : content->get_array()) {
    ++position;
    const auto* block = b.if_object();
    if (!block) continue;
    std::string_view kind = string_at(*block, "type");
    if (kind == "text" && !streamed && !string_at(*block, "text").empty()) {
      out.push_back(agent_text(std::string(string_at(*block, "text")), block_id("text", turn, step, position)));
    } else if (kind == "reasoning" && !streamed && !string_at(*block, "text").empty()) {
      out.push_back(AgentThoughtChunk{text_block(std::string(string_at(*block, "text"))),
                                      block_id("reasoning", turn, step, position), {}});
    } else if (kind == "image") {
      // Chunks never carry images: shown whether or not the step streamed.
      out.push_back(agent_text("\n" + image_placeholder(*block, places_.harness_home) + "\n",
                               block_id("image", turn, step, position)));
    } else if (kind == "tool-call") {
      show_call(std::string(string_at(*block, "id")), string_at(*block, "name"), block->if_contains("arguments"), out);
    }
  }
}

void Replayer::on_tool_result(const json::object& event, const json::object& data, std::vector<SessionUpdate>& out) {
  // A replacement (a prune's placeholder for old output) changes what the model is sent, not what
  // happened: the card keeps the output it showed.
  if (const auto* op = event.if_contains("surfaceOp"); op && op->is_object()) return;
  std::string id(string_at(data, "callId"));
  if (id.empty()) return;
  if (tool_calls_shown_.insert(id).second) {
    // A result whose call was never shown still needs its card to attach to.
    out.push_back(tool_call_card(id, {}, json::value(), places_.cwd));
  }
  out.push_back(result_update(data, std::move(id)));
  after_tool_result_ = true;
}

void Replayer::on_turn_end(const json::object& event, const json::object& data, std::vector<SessionUpdate>& out) {
  const json::object* reason = object_at(data, "reason");
  std::string_view kind = reason ? string_at(*reason, "kind") : std::string_view();
  if (kind == "error") {
    std::string message(string_at(*reason, "message"));
    if (message.empty()) {
      if (const json::object* failure = object_at(*reason, "failure")) message = std::string(string_at(*failure, "message"));
    }
    out.push_back(agent_text("\n\n[The turn failed" + (message.empty() ? std::string(".]") : ": " + message + "]"),
                             seq_id("note", num(event, "seq"))));
  } else if (kind == "interrupted") {
    out.push_back(agent_text("\n\n[The turn was interrupted before it finished.]", seq_id("note", num(event, "seq"))));
  }
  // Calls and steps never span turns (repair closes a turn's calls before its turn/end).
  steps_with_chunks_.clear();
  last_step_with_chunks_.reset();
  tool_calls_shown_.clear();
  pending_changes_.clear();
  terminals_.clear();
}

} // namespace acp::handlers
