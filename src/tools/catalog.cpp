#include "tools/catalog.hpp"

#include <boost/json/parse.hpp>

namespace acp::tools {

namespace json = boost::json;

namespace {

// Raw JSON parse: the schemas are literals of ours, never foreign text; json::parse throws, so a
// typo in one fails the first test that lists the tools.
json::object schema(std::string_view text) { return json::parse(text).as_object(); }

std::vector<ToolSpec> make_tools() {
  std::vector<ToolSpec> tools;
  tools.push_back({"read",
                   "Read a UTF-8 text file. Lines come back numbered (`N: text`), 2000 at most per call; use "
                   "offset and limit to page through a longer file.",
                   schema(R"({"type":"object","properties":{
                     "file_path":{"type":"string","description":"Path of the file, relative to the working directory or absolute."},
                     "offset":{"type":"number","description":"1-based first line to return. Defaults to 1."},
                     "limit":{"type":"number","description":"Maximum number of lines to return. Defaults to 2000."}},
                     "required":["file_path"]})"),
                   ToolKind::read, false, false});
  tools.push_back({"write",
                   "Create a UTF-8 text file or replace its whole content. Missing directories are created. "
                   "Prefer edit for changing part of an existing file.",
                   schema(R"({"type":"object","properties":{
                     "file_path":{"type":"string","description":"Path of the file to write."},
                     "content":{"type":"string","description":"The file's full new content."}},
                     "required":["file_path","content"]})"),
                   ToolKind::edit, true, false});
  tools.push_back({"edit",
                   "Replace literal text in an existing file. old_string must occur exactly once unless "
                   "replace_all is true; include enough surrounding lines to make it unique.",
                   schema(R"({"type":"object","properties":{
                     "file_path":{"type":"string","description":"Path of the file to edit."},
                     "old_string":{"type":"string","description":"The exact text to replace."},
                     "new_string":{"type":"string","description":"The replacement text; empty deletes the match."},
                     "replace_all":{"type":"boolean","description":"Replace every occurrence. Defaults to false."}},
                     "required":["file_path","old_string","new_string"]})"),
                   ToolKind::edit, true, false});
  tools.push_back({"bash",
                   "Run a command with `bash -c` in the working directory (or workdir) and return its output and "
                   "exit code. Each call is a fresh shell. Long output keeps its head and tail. Times out after "
                   "120 seconds unless timeoutMs says otherwise (10 minutes at most).",
                   schema(R"({"type":"object","properties":{
                     "command":{"type":"string","description":"The command to run."},
                     "description":{"type":"string","description":"What the command does, in 5-10 words (shown to the user)."},
                     "timeoutMs":{"type":"number","description":"Timeout in milliseconds (default 120000, at most 600000)."},
                     "workdir":{"type":"string","description":"Directory to run in; defaults to the working directory."}},
                     "required":["command","description"]})"),
                   ToolKind::execute, false, true});
  tools.push_back({"glob",
                   "Find files whose paths match a glob pattern (`**/*.cpp`, `src/*.{h,cpp}`); a pattern without "
                   "'/' matches file names at any depth. Newest first, 100 at most. Honours .gitignore.",
                   schema(R"({"type":"object","properties":{
                     "pattern":{"type":"string","description":"Glob pattern to match file paths against."},
                     "path":{"type":"string","description":"Directory to search; defaults to the working directory."}},
                     "required":["pattern"]})"),
                   ToolKind::search, false, false});
  tools.push_back({"grep",
                   "Search file contents with a regular expression (Perl syntax). Matching lines come back with "
                   "their numbers, grouped by file; 250 at most. Honours .gitignore.",
                   schema(R"({"type":"object","properties":{
                     "pattern":{"type":"string","description":"Regular expression to search for."},
                     "path":{"type":"string","description":"File or directory to search; defaults to the working directory."},
                     "include":{"type":"string","description":"One glob selecting the files to search (e.g. \"*.cpp\")."}},
                     "required":["pattern"]})"),
                   ToolKind::search, false, false});
  tools.push_back({"todo_write",
                   "Record the task list for the current work, shown to the user as a plan. Send the whole list "
                   "every time: it replaces the previous one. Statuses: pending, in_progress, completed.",
                   schema(R"({"type":"object","properties":{
                     "todos":{"type":"array","description":"The complete task list.","items":{
                       "type":"object","additionalProperties":false,"properties":{
                         "content":{"type":"string","description":"The task, one short imperative line."},
                         "status":{"type":"string","enum":["pending","in_progress","completed"]}},
                       "required":["content","status"]}}},
                     "required":["todos"]})"),
                   ToolKind::think, false, false});
  return tools;
}

} // namespace

const std::vector<ToolSpec>& builtin_tools() {
  static const std::vector<ToolSpec> tools = make_tools();
  return tools;
}

const ToolSpec* find_builtin(std::string_view name) {
  for (const auto& t : builtin_tools())
    if (t.name == name) return &t;
  return nullptr;
}

json::array request_tools(const std::vector<const ToolSpec*>& tools) {
  json::array out;
  for (const ToolSpec* t : tools) {
    json::object function;
    function["name"] = t->name;
    function["description"] = t->description;
    function["parameters"] = t->parameters;
    out.push_back(json::object{{"type", "function"}, {"function", std::move(function)}});
  }
  return out;
}

std::string_view kind_name(ToolKind kind) {
  switch (kind) {
    case ToolKind::read: return "read";
    case ToolKind::edit: return "edit";
    case ToolKind::execute: return "execute";
    case ToolKind::search: return "search";
    case ToolKind::think: return "think";
    case ToolKind::other: break;
  }
  return "other";
}

} // namespace acp::tools
