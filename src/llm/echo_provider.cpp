#include "echo_provider.hpp"

#include "llm/token_estimate.hpp"
#include "support/image.hpp"
#include "support/utf8.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parser.hpp>

#include <algorithm>
#include <optional>

namespace acp::llm {

namespace asio = boost::asio;

namespace {

constexpr std::size_t kPreviewChars = 48;
constexpr long long kMaxEchoSleepMs = 60000;

// Newlines shown as ⏎ so each request message stays on one line of the answer.
std::string one_line(std::string_view text, std::size_t max_chars, bool& cut) {
  std::string out;
  std::size_t chars = 0;
  cut = false;
  for (std::size_t i = 0; i < text.size();) {
    if (chars == max_chars) {
      cut = true;
      break;
    }
    std::size_t len = support::decode_utf8(text, i).length;
    if (text[i] == '\n') out += "\u23CE";
    else out.append(text.substr(i, len));
    i += len;
    ++chars;
  }
  return out;
}

struct Directives {
  std::chrono::milliseconds sleep{0};
  StopKind stop = StopKind::end_turn;
};

// The first "[[echo:stop=max_tokens]]" or "[[echo:stop=refusal]]" in the text, if any.
std::optional<StopKind> stop_directive(std::string_view text) {
  for (std::size_t at = text.find("[[echo:stop="); at != std::string_view::npos; at = text.find("[[echo:stop=", at + 1)) {
    std::string_view rest = text.substr(at + 12);
    if (rest.starts_with("max_tokens]]")) return StopKind::max_tokens;
    if (rest.starts_with("refusal]]")) return StopKind::refusal;
  }
  return std::nullopt;
}

Directives read_directives(const Request& request) {
  Directives d;
  const Message* last_user = nullptr;
  for (const auto& m : request.messages)
    if (m.role == Role::user) last_user = &m;
  if (!last_user) return d;
  d.sleep = echo_sleep(last_user->text);
  if (auto stop = stop_directive(last_user->text)) d.stop = *stop;
  return d;
}

} // namespace

std::chrono::milliseconds echo_sleep(std::string_view text) {
  // A plain scan, not std::regex: prompts may be tens of megabytes.
  for (std::size_t at = text.find("[["); at != std::string_view::npos; at = text.find("[[", at + 1)) {
    std::string_view rest = text.substr(at + 2);
    if (rest.starts_with("echo:sleep=")) rest.remove_prefix(11);
    else if (rest.starts_with("sleep:")) rest.remove_prefix(6);
    else continue;
    std::size_t digits = 0;
    long long ms = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') {
      // Clamped to a minute: a test directive must not pin a turn for hours (nor overflow).
      ms = std::min<long long>(ms * 10 + (rest[digits] - '0'), kMaxEchoSleepMs);
      ++digits;
    }
    if (digits > 0 && rest.substr(digits).starts_with("]]")) return std::chrono::milliseconds(ms);
  }
  return std::chrono::milliseconds(0);
}

namespace {

class EchoProvider final : public Provider {
public:
  EchoProvider(asio::any_io_executor ex, std::chrono::milliseconds delay, std::optional<std::int64_t> window)
      : executor_(std::move(ex)), delay_(delay), window_(window) {}

  std::string name() const override { return "echo"; }

  asio::awaitable<Completion> stream(const Request& request, DeltaSink sink) override {
    // Cancellation is reported as StopKind::cancelled, never as an exception from the next co_await.
    co_await asio::this_coro::throw_if_cancelled(false);
    Completion done;
    done.provider = "echo";
    done.model = request.model.empty() ? "echo" : request.model;
    if (window_) {
      std::int64_t tokens = estimate_request_tokens(request.messages);
      if (tokens > *window_)
        throw ProviderError("PROVIDER_BAD_REQUEST",
                            "This model's maximum context length is " + std::to_string(*window_) +
                                " tokens. However, your messages resulted in " + std::to_string(tokens) + " tokens.",
                            400);
    }
    Directives directives = read_directives(request);
    asio::steady_timer timer(executor_);
    auto pause = [&](std::chrono::milliseconds ms) -> asio::awaitable<bool> {
      timer.expires_after(ms);
      auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
      co_return !ec;
    };
    auto cancelled = [&]() -> asio::awaitable<bool> {
      auto state = co_await asio::this_coro::cancellation_state;
      co_return state.cancelled() != asio::cancellation_type::none;
    };

    if (directives.sleep.count() > 0 && !co_await pause(directives.sleep)) {
      done.stop = StopKind::cancelled;
      co_return done;
    }
    if (request.purpose == Purpose::answer) {
      if (auto calls = echo_tool_calls(request); !calls.empty()) {
        std::string names;
        for (const auto& c : calls) names += (names.empty() ? "" : ", ") + c.name;
        sink(Delta{DeltaKind::text, "echo: calling " + names});
        for (std::size_t k = 0; k < calls.size(); ++k) {
          // In two fragments, as servers stream them: id and name first, then the rest.
          const std::string& args = calls[k].arguments;
          std::size_t half = args.size() / 2;
          Delta first{DeltaKind::tool_call, args.substr(0, half), k, calls[k].id, calls[k].name};
          sink(first);
          sink(Delta{DeltaKind::tool_call, args.substr(half), k, calls[k].id, calls[k].name});
        }
        done.tool_calls = std::move(calls);
        co_return done;
      }
    }
    std::string answer = request.purpose == Purpose::summary ? echo_summary(request) : echo_answer(request);
    // The chunks of echo_chunks(), cut one at a time (an answer may have hundreds of thousands).
    for (std::size_t start = 0; start < answer.size();) {
      std::size_t space = answer.find(' ', start);
      std::size_t end = space == std::string::npos ? answer.size() : space + 1;
      // Back-pressure: no next word before the turn's log writes and its client have caught up.
      co_await sink.room();
      if (co_await cancelled()) {
        done.stop = StopKind::cancelled;
        co_return done;
      }
      if (start > 0 && delay_.count() > 0 && !co_await pause(delay_)) {
        done.stop = StopKind::cancelled;
        co_return done;
      }
      sink(Delta{DeltaKind::text, answer.substr(start, end - start)});
      start = end;
    }
    std::int64_t input_bytes = 0;
    for (const auto& m : request.messages) input_bytes += static_cast<std::int64_t>(message_bytes(m));
    // Echo has no tokenizer: bytes stand in for tokens so usage is still recorded.
    done.usage = Usage{input_bytes, static_cast<std::int64_t>(answer.size()), std::nullopt, std::nullopt, true};
    done.stop = directives.stop;
    co_return done;
  }

private:
  asio::any_io_executor executor_;
  std::chrono::milliseconds delay_;
  std::optional<std::int64_t> window_;
};

} // namespace

std::string echo_answer(const Request& request) {
  std::string out = "echo: received " + std::to_string(request.messages.size()) + " messages\n";
  const Message* last_user = nullptr;
  for (std::size_t i = 0; i < request.messages.size(); ++i) {
    const auto& m = request.messages[i];
    out += "[" + std::to_string(i + 1) + "] ";
    out += role_name(m.role);
    out += " " + std::to_string(m.text.size()) + " bytes";
    if (m.role != Role::system) {
      bool cut = false;
      out += ": " + one_line(m.text, kPreviewChars, cut);
      if (cut) out += "\u2026";
    }
    out += "\n";
    if (m.role == Role::user) last_user = &m;
  }
  // What arrived of each image the request carries (so a test sees the bytes reached the model).
  for (std::size_t i = 0; i < request.messages.size(); ++i)
    for (const auto& image : request.messages[i].images) {
      if (!image.data) continue;
      const std::optional<support::ImageHeader> header = support::probe_image(*image.data);
      out += "image in [" + std::to_string(i + 1) + "]: " + image.media_type + ", " +
             (header ? std::to_string(header->width) + "x" + std::to_string(header->height) : std::string("unreadable")) +
             ", " + std::to_string(image.data->size()) + " bytes\n";
    }
  bool cut = false;
  out += "last user message: " + (last_user ? one_line(last_user->text, std::string::npos, cut) : std::string());
  return out;
}

std::string echo_summary(const Request& request) {
  // The summarised messages: everything between the system prompt and the final instruction.
  std::size_t first = !request.messages.empty() && request.messages.front().role == Role::system ? 1 : 0;
  std::size_t end = request.messages.size() > first ? request.messages.size() - 1 : first;
  std::size_t count = end - first;
  std::size_t bytes = 0;
  for (std::size_t i = first; i < end; ++i) bytes += request.messages[i].text.size();
  std::string out = "## Goal\n- echo summary of " + std::to_string(count) + " messages, " + std::to_string(bytes) + " bytes\n";
  if (end < request.messages.size()) {
    const std::string& instruction = request.messages[end].text;
    constexpr std::string_view kFocus = "\nFocus: ";
    if (auto at = instruction.find(kFocus); at != std::string::npos) {
      bool cut = false;
      out += "## Focus\n- " + one_line(std::string_view(instruction).substr(at + kFocus.size()), std::string::npos, cut) + "\n";
    }
  }
  out += "## Messages";
  constexpr std::size_t kEnds = 3;
  for (std::size_t i = first; i < end; ++i) {
    std::size_t n = i - first;
    if (count > 2 * kEnds && n == kEnds) {
      out += "\n- \u2026 " + std::to_string(count - 2 * kEnds) + " more";
      i = end - kEnds - 1;
      continue;
    }
    const auto& m = request.messages[i];
    bool cut = false;
    out += "\n- [" + std::to_string(n + 1) + "] ";
    out += role_name(m.role);
    out += " " + std::to_string(m.text.size()) + " bytes: " + one_line(m.text, kPreviewChars, cut);
    if (cut) out += "\u2026";
  }
  return out;
}

std::vector<ToolCall> echo_tool_calls(const Request& request) {
  std::vector<ToolCall> calls;
  if (request.tools.empty()) return calls;
  std::size_t last_user = request.messages.size();
  std::size_t assistants = 0;
  for (std::size_t i = 0; i < request.messages.size(); ++i) {
    if (request.messages[i].role == Role::user) last_user = i;
    if (request.messages[i].role == Role::assistant) ++assistants;
  }
  if (last_user == request.messages.size()) return calls;
  for (std::size_t i = last_user + 1; i < request.messages.size(); ++i)
    if (request.messages[i].role == Role::tool) return calls;  // the calls were made: answer now
  std::string_view text = request.messages[last_user].text;
  constexpr std::string_view kOpen = "[[echo:tool=";
  for (std::size_t at = text.find(kOpen); at != std::string_view::npos; at = text.find(kOpen, at + 1)) {
    std::string_view rest = text.substr(at + kOpen.size());
    std::size_t name_end = rest.find_first_of(" ]");
    if (name_end == 0 || name_end == std::string_view::npos) continue;
    ToolCall call;
    call.name = std::string(rest.substr(0, name_end));
    rest.remove_prefix(name_end);
    std::size_t args_start = rest.find_first_not_of(' ');
    if (args_start == std::string_view::npos) continue;
    rest.remove_prefix(args_start);
    std::size_t args_len = 0;
    if (!rest.starts_with("]]")) {
      // One JSON value, wherever its strings put "]]"; else everything up to the first "]]".
      // Raw JSON parse: only the value's extent is taken here; the tool runner parses the text.
      boost::json::parser parser;
      boost::system::error_code ec;
      std::size_t used = parser.write_some(rest.data(), rest.size(), ec);
      if (!ec) args_len = used;
      else args_len = rest.find("]]");
      if (args_len == std::string_view::npos) continue;
    }
    std::string_view args = rest.substr(0, args_len);
    while (!args.empty() && args.back() == ' ') args.remove_suffix(1);
    std::string_view after = rest.substr(args_len);
    after.remove_prefix(std::min(after.size(), after.find_first_not_of(' ')));
    if (!after.starts_with("]]")) continue;
    call.arguments = args.empty() ? "{}" : std::string(args);
    call.id = "echo_" + std::to_string(assistants) + "_" + std::to_string(calls.size());
    calls.push_back(std::move(call));
  }
  return calls;
}

std::vector<std::string> echo_chunks(const std::string& answer) {
  std::vector<std::string> chunks;
  std::size_t start = 0;
  for (std::size_t i = 0; i < answer.size(); ++i) {
    if (answer[i] == ' ') {
      chunks.push_back(answer.substr(start, i + 1 - start));
      start = i + 1;
    }
  }
  if (start < answer.size()) chunks.push_back(answer.substr(start));
  return chunks;
}

std::unique_ptr<Provider> make_echo_provider(asio::any_io_executor executor, std::chrono::milliseconds delay,
                                             std::optional<std::int64_t> context_window) {
  return std::make_unique<EchoProvider>(std::move(executor), delay, context_window);
}

} // namespace acp::llm
