#include "store/pg/url.hpp"

#include <algorithm>
#include <cctype>

namespace acp::store::pg {
namespace {

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

std::size_t scheme_length(std::string_view s) {
  for (std::string_view scheme : {"postgresql://", "postgres://"})
    if (starts_with_nocase(s, scheme)) return scheme.size();
  return 0;
}

constexpr std::string_view kMask = "***";

/// Calls `f(begin, end)` for each password span in `s`, in order.
template <class F>
void for_each_password(std::string_view s, F&& f) {
  if (std::size_t start = scheme_length(s)) {
    // Userinfo: up to the last '@' before the query; the password follows the first ':'. URI
    // syntax wants '/', '?' and '@' in a password percent-encoded; '/' and '@' raw are masked too.
    std::size_t limit = std::min(s.find('?', start), s.size());
    std::size_t at = s.substr(0, limit).rfind('@');
    if (at != std::string_view::npos && at >= start) {
      std::size_t colon = s.find(':', start);
      if (colon < at) f(colon + 1, at);
      start = at + 1;
    }
    // Query parameters: password=... up to the next '&'.
    std::size_t q = s.find('?', start);
    while (q != std::string_view::npos && q < s.size()) {
      std::size_t param = q + 1, end = s.find('&', param);
      if (end == std::string_view::npos) end = s.size();
      if (starts_with_nocase(s.substr(param, end - param), "password=")) f(param + 9, end);
      q = end;
    }
    return;
  }
  // A key=value conninfo string: password = value, the value bare or single-quoted.
  std::size_t pos = 0;
  while ((pos = s.find("password", pos)) != std::string_view::npos) {
    bool word_start = pos == 0 || std::isspace(static_cast<unsigned char>(s[pos - 1]));
    std::size_t i = pos + 8;
    while (i < s.size() && s[i] == ' ') ++i;
    if (!word_start || i >= s.size() || s[i] != '=') {
      pos += 8;
      continue;
    }
    ++i;
    while (i < s.size() && s[i] == ' ') ++i;
    std::size_t end = i;
    if (end < s.size() && s[end] == '\'') {
      for (++end; end < s.size() && s[end] != '\''; ++end)
        if (s[end] == '\\') ++end;
      end = std::min(end + 1, s.size());
    } else {
      while (end < s.size() && !std::isspace(static_cast<unsigned char>(s[end]))) ++end;
    }
    f(i, end);
    pos = end;
  }
}

} // namespace

bool is_postgres_url(std::string_view s) { return scheme_length(s) != 0; }

std::string redact_url(std::string_view url) {
  std::string out;
  std::size_t copied = 0;
  for_each_password(url, [&](std::size_t begin, std::size_t end) {
    out.append(url.substr(copied, begin - copied)).append(kMask);
    copied = end;
  });
  out.append(url.substr(copied));
  return out;
}

bool url_has_password(std::string_view url) {
  bool found = false;
  for_each_password(url, [&](std::size_t, std::size_t) { found = true; });
  return found;
}

std::string scrub_passwords(std::string_view text, std::string_view url) {
  std::string out(text);
  for_each_password(url, [&](std::size_t begin, std::size_t end) {
    std::string_view pw = url.substr(begin, end - begin);
    if (pw.empty()) return;
    for (std::size_t at = out.find(pw); at != std::string::npos; at = out.find(pw, at + kMask.size()))
      out.replace(at, pw.size(), kMask);
  });
  return out;
}

} // namespace acp::store::pg
