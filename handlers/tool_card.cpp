#include "handlers/tool_card.hpp"

#include "handlers/card_text.hpp"
#include "store/records.hpp"
#include "support/json_text.hpp"

#include <boost/json.hpp>

#include <filesystem>
#include <limits>

namespace acp::handlers {

namespace json = boost::json;
using protocol::ToolKind;
using store::string_at;

namespace {

// The harness's tools (its 0.1.1 catalog) and the argument that names what they work on.
struct HarnessTool {
  std::string_view name;
  ToolKind kind;
  std::string_view verb;     ///< the title's first word(s)
  std::string_view subject;  ///< the argument the title names ("" = none)
  bool file = false;         ///< the subject is a file: the card's location
};

constexpr HarnessTool kTools[] = {
    {"read", ToolKind::read, "Read", "file_path", true},
    {"read_image", ToolKind::read, "Read image", "file_path", true},
    {"write", ToolKind::edit, "Write", "file_path", true},
    {"edit", ToolKind::edit, "Edit", "file_path", true},
    {"bash", ToolKind::execute, "Run", "command"},
    {"glob", ToolKind::search, "Find", "pattern"},
    {"grep", ToolKind::search, "Search for", "pattern"},
    {"todo_write", ToolKind::other, "Update plan", ""},
    {"ask_user", ToolKind::other, "Ask:", "question"},
};

const HarnessTool* harness_tool(std::string_view name) {
  for (const auto& tool : kTools)
    if (tool.name == name) return &tool;
  return nullptr;
}

// ACP wants absolute paths; the harness resolves a relative file_path against the session's cwd.
std::string resolve(std::string_view path, std::string_view cwd) {
  if (path.empty() || path.front() == '/' || cwd.empty()) return std::string(path);
  return (std::filesystem::path(cwd) / std::filesystem::path(path)).lexically_normal().string();
}

std::optional<std::uint32_t> line_at(const json::object& args, std::string_view key) {
  const auto* v = args.if_contains(key);
  auto n = v ? store::safe_int(*v) : std::nullopt;
  if (!n || *n < 1 || *n > std::numeric_limits<std::uint32_t>::max()) return std::nullopt;
  return static_cast<std::uint32_t>(*n);
}

std::string title(const HarnessTool& tool, const json::object& args) {
  if (tool.subject.empty()) return std::string(tool.verb);
  std::string subject = title_part(string_at(args, tool.subject));
  if (subject.empty()) return std::string(tool.name);
  // A command reads as code; a read names the lines it asks for ("Read a.cpp:1-120").
  if (tool.kind == ToolKind::execute) return std::string(tool.verb) + " `" + subject + "`";
  std::string out = std::string(tool.verb) + " " + subject;
  if (tool.name == "read") {
    const auto offset = line_at(args, "offset");
    const auto limit = line_at(args, "limit");
    if (offset || limit) {
      const std::uint64_t first = offset.value_or(1);
      out += ":" + std::to_string(first) + "-";
      if (limit) out += std::to_string(first + *limit - 1);
    }
  }
  if (tool.kind == ToolKind::search) {
    if (std::string where = title_part(string_at(args, "path")); !where.empty()) out += " in " + where;
    if (std::string include = title_part(string_at(args, "include")); !include.empty()) out += " (" + include + ")";
  }
  return out;
}

} // namespace

json::value parse_arguments(const json::value* args) {
  if (!args) return nullptr;
  if (!args->is_string()) return *args;
  boost::system::error_code ec;
  json::value parsed = support::parse_json(args->get_string(), ec);
  if (ec) return *args;  // models sometimes stream invalid JSON: show it as the string it is
  return parsed;
}

protocol::ToolCall tool_call_card(std::string id, std::string_view name, json::value arguments, std::string_view cwd) {
  protocol::ToolCall call;
  call.toolCallId = std::move(id);
  call.kind = ToolKind::other;
  call.status = protocol::ToolCallStatus::in_progress;
  call.title = name.empty() ? std::string("tool") : title_part(name);
  const json::object* args = arguments.if_object();
  const HarnessTool* tool = harness_tool(name);
  if (tool) call.kind = tool->kind;
  if (tool && args) {
    call.title = title(*tool, *args);
    std::string path = tool->file ? resolve(string_at(*args, tool->subject), cwd) : std::string();
    // Only an absolute path is a location (ACP); the offset a read starts at is its line.
    if (!path.empty() && path.front() == '/')
      call.locations = std::vector<protocol::ToolCallLocation>{
          {std::move(path), tool->name == "read" ? line_at(*args, "offset") : std::nullopt}};
  }
  // The change a write or edit asks for shows from the first update on (the permission question
  // and the running card alike); the result replaces it with the change made, or with its error.
  if (auto diff = argument_diff(name, arguments, cwd))
    call.content = std::vector<protocol::ToolCallContent>{std::move(*diff)};
  if (!arguments.is_null()) call.rawInput = std::move(arguments);
  return call;
}

bool changes_file(std::string_view name) { return name == "write" || name == "edit"; }

std::optional<protocol::ToolDiff> argument_diff(std::string_view name, const json::value& arguments,
                                                std::string_view cwd) {
  const json::object* args = arguments.if_object();
  if (!args || !changes_file(name) || string_at(*args, "file_path").empty()) return std::nullopt;
  protocol::ToolDiff diff;
  diff.path = resolve(string_at(*args, "file_path"), cwd);
  if (name == "edit") {
    diff.oldText = std::string(string_at(*args, "old_string"));
    diff.newText = std::string(string_at(*args, "new_string"));
  } else {
    diff.newText = std::string(string_at(*args, "content"));
  }
  return diff;
}

std::vector<protocol::ToolDiff> result_diffs(const json::object& data, std::string_view cwd) {
  std::vector<protocol::ToolDiff> diffs;
  const json::object* meta = store::object_at(data, "meta");
  const auto* list = meta ? meta->if_contains("diffs") : nullptr;
  if (!list || !list->is_array()) return diffs;
  for (const auto& d : list->get_array()) {
    const auto* diff = d.if_object();
    const auto* new_text = diff ? diff->if_contains("newText") : nullptr;
    const auto* old_text = diff ? diff->if_contains("oldText") : nullptr;
    if (!new_text || !new_text->is_string() || string_at(*diff, "path").empty() ||
        (old_text && !old_text->is_string() && !old_text->is_null()))
      continue;
    protocol::ToolDiff out;
    out.path = resolve(string_at(*diff, "path"), cwd);
    if (old_text && old_text->is_string()) out.oldText = std::string(old_text->get_string());
    out.newText = std::string(new_text->get_string());
    diffs.push_back(std::move(out));
  }
  return diffs;
}

std::optional<CommandEnd> result_command_end(const json::object& data) {
  const json::object* meta = store::object_at(data, "meta");
  const json::object* status = meta ? store::object_at(*meta, "exitStatus") : nullptr;
  if (!status) return std::nullopt;
  CommandEnd end;
  const json::value* code = status->if_contains("exitCode");
  const json::value* signal = status->if_contains("signal");
  if (code && !code->is_null() && !(end.exit_code = store::safe_int(*code))) return std::nullopt;
  if (signal && !signal->is_null()) {
    if (!signal->is_string()) return std::nullopt;
    end.signal = std::string(signal->get_string());
  }
  const json::value* timeout = meta->if_contains("timedOutMs");
  if (auto ms = timeout ? store::safe_int(*timeout) : std::nullopt; ms && *ms > 0) end.timed_out_ms = *ms;
  return end;
}

bool failed_end(const CommandEnd& end) {
  return (end.exit_code && *end.exit_code != 0) || end.signal || end.timed_out_ms;
}

std::string command_end_text(const CommandEnd& end, bool cancelled) {
  if (cancelled) return "Cancelled: the command was killed.";
  if (end.timed_out_ms) {
    const std::int64_t ms = *end.timed_out_ms;
    const std::string after = ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
    return "Timed out after " + after + ": the command was killed.";
  }
  if (end.exit_code) return "Exited with code " + std::to_string(*end.exit_code) + ".";
  if (end.signal) return "Killed by signal " + title_part(*end.signal) + ".";
  return {};
}

json::object command_end_json(const CommandEnd& end) {
  json::object out;
  out["exitCode"] = end.exit_code ? json::value(*end.exit_code) : json::value(nullptr);
  out["signal"] = end.signal ? json::value(*end.signal) : json::value(nullptr);
  if (end.timed_out_ms) out["timedOutMs"] = *end.timed_out_ms;
  return out;
}

} // namespace acp::handlers
