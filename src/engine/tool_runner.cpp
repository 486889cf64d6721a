#include "engine/tool_runner.hpp"

#include "support/log.hpp"

#include "engine/offload.hpp"
#include "support/await_ops.hpp"
#include "support/json_number.hpp"
#include "support/json_text.hpp"
#include "support/utf8.hpp"
#include "tools/command.hpp"
#include "tools/file_change.hpp"
#include "tools/output_cap.hpp"
#include "tools/search.hpp"
#include "tools/text_window.hpp"
#include "tools/tool_failure.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/object.hpp>

#include <set>

namespace acp::engine {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace asio::experimental::awaitable_operators;
using support::outcome_of;
using support::sleep_for;

namespace {

asio::awaitable<bool> as_value(asio::awaitable<void> op) {
  co_await std::move(op);
  co_return true;
}

// `op`'s result, or nullopt when it has not answered within `grace` (it is then cancelled); its
// failure is rethrown.
template <class T>
asio::awaitable<std::optional<T>> within(std::chrono::milliseconds grace, asio::awaitable<T> op) {
  auto race = outcome_of(std::move(op)) || sleep_for(grace);
  auto r = co_await std::move(race);
  if (r.index() == 1) co_return std::nullopt;
  auto& [error, value] = std::get<0>(r);
  if (error) std::rethrow_exception(error);
  co_return std::optional<T>(std::move(value));
}

} // namespace
using tools::ToolFailure;

namespace {

json::object parse_arguments(const std::string& text) {
  if (text.empty()) return {};
  boost::system::error_code ec;
  json::value v = support::parse_json(text, ec);
  if (ec) throw ToolFailure("the arguments are not valid JSON (" + ec.message() + ")");
  if (!v.is_object()) throw ToolFailure("the arguments must be a JSON object");
  return std::move(v.as_object());
}

const json::value* member(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && !v->is_null() ? v : nullptr;
}

std::string required_string(const json::object& o, std::string_view key) {
  const json::value* v = member(o, key);
  if (!v) throw ToolFailure("`" + std::string(key) + "` is required");
  if (!v->is_string()) throw ToolFailure("`" + std::string(key) + "` must be a string");
  return std::string(v->get_string());
}

std::optional<std::string> optional_string(const json::object& o, std::string_view key) {
  const json::value* v = member(o, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw ToolFailure("`" + std::string(key) + "` must be a string");
  return std::string(v->get_string());
}

std::optional<std::int64_t> optional_integer(const json::object& o, std::string_view key, std::int64_t min,
                                             std::int64_t max) {
  const json::value* v = member(o, key);
  if (!v) return std::nullopt;
  auto n = support::json_integer(*v, min, max);
  if (!n)
    throw ToolFailure("`" + std::string(key) + "` must be an integer from " + std::to_string(min) + " to " +
                      std::to_string(max));
  return n;
}

bool optional_bool(const json::object& o, std::string_view key) {
  const json::value* v = member(o, key);
  if (!v) return false;
  if (!v->is_bool()) throw ToolFailure("`" + std::string(key) + "` must be true or false");
  return v->get_bool();
}

std::string capped(std::string text, std::size_t max) {
  if (text.size() <= max) return text;
  tools::OutputCap cap(max);
  cap.append(text);
  return cap.text();
}

// Blocking file work on the pool; its result or its ToolFailure comes back here.
template <class F> asio::awaitable<std::invoke_result_t<F&>> on_pool(const asio::any_io_executor& pool, F& work) {
  auto result = co_await offload(pool, work);
  co_return std::move(*result);
}

// write and edit name a file: a directory (`.`, `src/`) is refused here, never sent to the editor.
void refuse_directory(const tools::ResolvedPath& target, const std::string& asked) {
  if (target.directory) throw ToolFailure("\"" + asked + "\" is a directory; write and edit need a file path");
}

} // namespace

json::array checked_todos(const json::object& args) {
  const json::value* todos = member(args, "todos");
  if (!todos || !todos->is_array()) throw ToolFailure("invalid todos: `todos` must be an array");
  json::array out;
  std::set<std::string, std::less<>> seen;
  for (const auto& t : todos->get_array()) {
    const json::object* todo = t.if_object();
    if (!todo) throw ToolFailure("invalid todo: each todo must be an object with `content` and `status`");
    const json::value* content = todo->if_contains("content");
    if (!content || !content->is_string() || content->get_string().empty())
      throw ToolFailure("invalid todo: `content` must be a non-empty string");
    const json::value* status = todo->if_contains("status");
    std::string_view s = status && status->is_string() ? std::string_view(status->get_string()) : std::string_view();
    if (s != "pending" && s != "in_progress" && s != "completed")
      throw ToolFailure("invalid todo: `status` must be pending, in_progress or completed");
    if (!seen.emplace(content->get_string()).second)
      throw ToolFailure("invalid todos: duplicate content \"" + std::string(content->get_string()) + "\"");
    out.push_back(json::object{{"content", content->get_string()}, {"status", s}});
  }
  return out;
}

std::string todo_summary(const json::array& todos) {
  int pending = 0, in_progress = 0, completed = 0;
  for (const auto& t : todos) {
    std::string_view s = t.at("status").as_string();
    (s == "pending" ? pending : s == "in_progress" ? in_progress : completed)++;
  }
  return "Updated todo list: " + std::to_string(pending) + " pending, " + std::to_string(in_progress) + " in progress, " +
         std::to_string(completed) + " completed.";
}

void make_text_valid(ToolOutcome& out) {
  support::replace_invalid_utf8(out.text);
  if (!out.edit) return;
  support::replace_invalid_utf8(out.edit->path);
  if (out.edit->old_text) support::replace_invalid_utf8(*out.edit->old_text);
  support::replace_invalid_utf8(out.edit->new_text);
}

ToolRunner::ToolRunner(tools::Roots roots, std::shared_ptr<Editor> editor, asio::any_io_executor blocking,
                       ToolLimits limits, std::vector<std::string> hidden_env)
    : roots_(std::move(roots)), editor_(std::move(editor)),
      blocking_(std::move(blocking)), limits_(limits), hidden_env_(std::move(hidden_env)) {}

asio::awaitable<ToolOutcome> ToolRunner::run(std::string name, std::string arguments,
                                             std::function<void(const std::string&)> on_terminal) {
  ToolOutcome out;
  std::string failure;
  bool cancelled = false;
  try {
    json::object args = parse_arguments(arguments);
    if (name == "read") out = co_await read(args);
    else if (name == "write") out = co_await write(args);
    else if (name == "edit") out = co_await edit(args);
    else if (name == "bash") out = co_await bash(args, on_terminal);
    else if (name == "glob" || name == "grep") out = co_await search(name, args);
    else if (name == "todo_write") {
      out.todos = checked_todos(args);
      out.text = todo_summary(*out.todos);
    } else {
      failure = "there is no tool named \"" + name + "\"";
    }
  } catch (const ToolFailure& e) {
    failure = e.what();
  } catch (const EditorCallError& e) {
    cancelled = e.cancelled();
    failure = cancelled ? "cancelled" : std::string("the editor refused: ") + e.what();
  }
  if (!failure.empty()) {
    out = ToolOutcome{};
    out.is_error = true;
    out.cancelled = cancelled;
    out.text = "Error: " + failure;
  }
  make_text_valid(out);
  out.text = capped(std::move(out.text), limits_.max_result_bytes);
  co_return out;
}

asio::awaitable<std::optional<std::string>> ToolRunner::editor_text(const std::string& path, bool on_disk) {
  // The editor's view of the file (unsaved changes included); nullopt when it has no such file. A
  // file that is on disk and still cannot be read is the editor's failure, never "no such file":
  // write would report an overwrite as a creation, edit would send the model to write.
  try {
    auto reading = editor_->read_text_file(path);
    co_return co_await std::move(reading);
  } catch (const EditorCallError& e) {
    if (e.cancelled()) throw;
    if (on_disk) throw ToolFailure("the editor could not read \"" + roots_.display(path) + "\": " + e.what());
    co_return std::nullopt;
  }
}

asio::awaitable<ToolOutcome> ToolRunner::read(const json::object& args) {
  std::string path = required_string(args, "file_path");
  tools::ReadRequest request;
  request.offset = optional_integer(args, "offset", 1, support::kMaxSafeInteger).value_or(1);
  request.limit = std::min<std::int64_t>(optional_integer(args, "limit", 1, support::kMaxSafeInteger).value_or(2000), 2000);
  ToolOutcome out;
  if (editor_ && editor_->reads_files()) {
    // Checked beneath the roots before the editor is asked; the editor then opens it by name.
    auto resolve = [&] { return roots_.resolve(path); };
    tools::ResolvedPath target = co_await on_pool(blocking_, resolve);
    if (target.directory) throw ToolFailure("\"" + path + "\" is a directory; use glob to list files");
    std::optional<std::string> text = co_await editor_text(target.path, target.exists);
    if (!text) throw ToolFailure("\"" + roots_.display(target.path) + "\" could not be read (the editor has no such file)");
    tools::TextWindow window(request);
    window.feed(*text);
    out.text = window.finish(target.path);
  } else {
    auto work = [&] { return tools::read_file_window(roots_, path, request); };
    out.text = co_await on_pool(blocking_, work);
  }
  co_return out;
}

asio::awaitable<ToolOutcome> ToolRunner::write(const json::object& args) {
  std::string path = required_string(args, "file_path");
  std::string content = required_string(args, "content");
  ToolOutcome out;
  if (editor_ && editor_->writes_files()) {
    auto resolve = [&] { return roots_.resolve(path); };
    tools::ResolvedPath target = co_await on_pool(blocking_, resolve);
    refuse_directory(target, path);  // before the editor hears of it
    std::optional<std::string> before;
    if (target.exists && editor_->reads_files()) before = co_await editor_text(target.path, true);
    else if (target.exists) {
      auto work = [&] { return tools::read_text_file(roots_, path); };
      before = co_await on_pool(blocking_, work);
    }
    auto writing = editor_->write_text_file(target.path, content);
    co_await std::move(writing);
    out.edit = FileEdit{target.path, std::move(before), content};
  } else {
    auto work = [&] { return tools::write_local(roots_, path, content); };
    tools::FileChange change = co_await on_pool(blocking_, work);
    out.edit = FileEdit{change.path, std::move(change.before), std::move(change.after)};
  }
  out.text = std::string(out.edit->old_text ? "Updated " : "Created ") + roots_.display(out.edit->path) + " (" +
             std::to_string(out.edit->new_text.size()) + " bytes).";
  co_return out;
}

asio::awaitable<ToolOutcome> ToolRunner::edit(const json::object& args) {
  std::string path = required_string(args, "file_path");
  tools::EditRequest request{required_string(args, "old_string"), required_string(args, "new_string"),
                             optional_bool(args, "replace_all")};
  ToolOutcome out;
  std::size_t replaced = 0;
  if (editor_ && editor_->writes_files()) {
    auto resolve = [&] { return roots_.resolve(path); };
    tools::ResolvedPath target = co_await on_pool(blocking_, resolve);
    std::string display = roots_.display(target.path);
    refuse_directory(target, path);  // before the editor hears of it
    std::optional<std::string> before;
    if (editor_->reads_files()) before = co_await editor_text(target.path, target.exists);
    else if (target.exists) {
      auto work = [&] { return tools::read_text_file(roots_, path); };
      before = co_await on_pool(blocking_, work);
    }
    if (!before) throw ToolFailure("\"" + display + "\" does not exist; use write to create it");
    std::string after = tools::apply_edit(*before, request, display, &replaced);
    auto writing = editor_->write_text_file(target.path, after);
    co_await std::move(writing);
    out.edit = FileEdit{target.path, std::move(before), std::move(after)};
  } else {
    auto work = [&] { return tools::edit_local(roots_, path, request); };
    tools::FileChange change = co_await on_pool(blocking_, work);
    replaced = change.replacements;
    out.edit = FileEdit{change.path, std::move(change.before), std::move(change.after)};
  }
  out.text = "Edited " + roots_.display(out.edit->path) + ": " + std::to_string(replaced) + " replacement" +
             (replaced == 1 ? "" : "s") + ".";
  co_return out;
}

asio::awaitable<ToolOutcome> ToolRunner::bash(const json::object& args,
                                              const std::function<void(const std::string&)>& on_terminal) {
  std::string command = required_string(args, "command");
  std::chrono::milliseconds timeout =
      std::chrono::milliseconds(optional_integer(args, "timeoutMs", 1, limits_.max_timeout.count())
                                    .value_or(limits_.default_timeout.count()));
  std::string workdir = roots_.cwd();
  if (auto dir = optional_string(args, "workdir")) {
    auto resolve = [&] { return roots_.resolve(*dir); };
    tools::ResolvedPath target = co_await on_pool(blocking_, resolve);
    if (!target.exists) throw ToolFailure("workdir \"" + *dir + "\" does not exist");
    workdir = target.path;
  }
  if (editor_ && editor_->runs_commands()) {
    auto running = bash_in_terminal(command, workdir, timeout, on_terminal);
    co_return co_await std::move(running);
  }
  // Confined to the session's roots in every mode: consent decides whether it runs, not where it writes.
  tools::CommandRequest request{command, workdir, timeout, limits_.max_result_bytes, hidden_env_, roots_.dirs()};
  tools::CommandOutcome result = co_await tools::run_command(std::move(request));
  ToolOutcome out;
  out.text = tools::describe_outcome(result, timeout);
  out.command_exit = CommandExit{result.exit_code, std::nullopt, std::nullopt};
  if (result.signal) out.command_exit->signal = tools::signal_name(*result.signal);
  if (result.timed_out) out.command_exit->timed_out = timeout;
  out.cancelled = result.cancelled;
  out.is_error = result.cancelled || result.timed_out;
  co_return out;
}

asio::awaitable<ToolOutcome> ToolRunner::bash_in_terminal(const std::string& command_in, const std::string& workdir_in,
                                                          std::chrono::milliseconds timeout,
                                                          const std::function<void(const std::string&)>& on_terminal_in) {
  const std::string command = command_in;
  const std::string workdir = workdir_in;
  const std::function<void(const std::string&)> on_terminal = on_terminal_in;
  ToolOutcome out;
  auto creating = editor_->create_terminal(command, workdir, limits_.max_result_bytes);
  const std::string id = co_await std::move(creating);
  out.terminal_id = id;
  if (on_terminal) on_terminal(id);
  bool timed_out = false, cancelled = false;
  std::exception_ptr failure;
  try {
    auto r = co_await (outcome_of(editor_->wait_for_terminal_exit(id)) || sleep_for(timeout));
    timed_out = r.index() == 1;
    if (!timed_out && std::get<0>(r).first) std::rethrow_exception(std::get<0>(r).first);
  } catch (const EditorCallError& e) {
    cancelled = e.cancelled();
    if (!cancelled) failure = std::current_exception();
  } catch (const boost::system::system_error&) {
    cancelled = true;
  }
  // What follows must happen even when the turn was cancelled: the command must not run on.
  co_await asio::this_coro::reset_cancellation_state();
  co_await asio::this_coro::throw_if_cancelled(false);
  std::string text;
  CommandExit exit;
  if (timed_out) exit.timed_out = timeout;
  try {
    if (timed_out || cancelled) {
      auto killing = within(limits_.cleanup_grace, as_value(editor_->kill_terminal(id)));
      co_await std::move(killing);
    }
    auto reading = within(limits_.cleanup_grace, editor_->terminal_output(id));
    std::optional<TerminalOutput> read = co_await std::move(reading);
    TerminalOutput output = read ? std::move(*read) : TerminalOutput{};
    text = std::move(output.output);
    if (output.exit) {
      // Kept after a kill too: the card says how the command ended, the model's note why.
      exit.exit_code = output.exit->exit_code;
      exit.signal = output.exit->signal;
      if (!timed_out && !cancelled) {
        if (exit.exit_code && *exit.exit_code != 0) text += (text.empty() || text.back() == '\n' ? "" : "\n") + std::string("[exit code: ") + std::to_string(*exit.exit_code) + "]";
        else if (exit.signal) text += (text.empty() || text.back() == '\n' ? "" : "\n") + std::string("[killed by signal ") + *exit.signal + "]";
      }
    }
  } catch (const EditorCallError&) {
  }
  out.command_exit = std::move(exit);
  try {
    auto releasing = within(limits_.cleanup_grace, as_value(editor_->release_terminal(id)));
    const std::optional<bool> released = co_await std::move(releasing);
    if (!released) acp::log::warn("terminal " + id + ": the client did not answer terminal/release");
  } catch (const EditorCallError&) {
  }
  if (failure) std::rethrow_exception(failure);
  if (timed_out) {
    out.is_error = true;  // the command did not finish: its card fails
    text += (text.empty() || text.back() == '\n' ? "" : "\n") + tools::timeout_note(timeout);
  }
  if (cancelled) {
    out.cancelled = true;
    out.is_error = true;
    text += (text.empty() || text.back() == '\n' ? "" : "\n") + std::string("[cancelled: the command was killed]");
  }
  out.text = text.empty() ? "(no output)" : text;
  co_return out;
}

asio::awaitable<ToolOutcome> ToolRunner::search(const std::string& name, const json::object& args) {
  std::string pattern = required_string(args, "pattern");
  std::optional<std::string> path = optional_string(args, "path");
  std::optional<std::string> include = name == "grep" ? optional_string(args, "include") : std::nullopt;
  auto work = [&] {
    std::optional<std::string_view> p = path ? std::optional<std::string_view>(*path) : std::nullopt;
    if (name == "glob") return tools::glob_files(roots_, pattern, p);
    std::optional<std::string_view> inc = include ? std::optional<std::string_view>(*include) : std::nullopt;
    return tools::grep_files(roots_, pattern, p, inc);
  };
  ToolOutcome out;
  out.text = co_await on_pool(blocking_, work);
  co_return out;
}

} // namespace acp::engine
