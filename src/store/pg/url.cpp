#include "store/pg/url.hpp"

#include "store/pg/libpq_loader.hpp"
#include "support/ascii.hpp"

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <vector>

namespace acp::store::pg {
namespace {

std::size_t scheme_length(std::string_view s) {
  for (std::string_view scheme : {"postgresql://", "postgres://"})
    if (support::starts_with_ascii_nocase(s, scheme)) return scheme.size();
  return 0;
}

constexpr std::string_view kMask = "***";

/// libpq keywords whose values are secrets. `passfile` names a file and is one of the libpq ways.
bool secret_keyword(std::string_view keyword) { return keyword == "password" || keyword == "sslpassword"; }

/// As libpq's recognized_connection_string(): a dbname that libpq may take as a connection string.
bool connection_string(std::string_view s) { return scheme_length(s) != 0 || s.find('=') != std::string_view::npos; }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = support::ascii_lower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/// `s` with %XX sequences decoded (a malformed one kept as written), as libpq decodes URI parts.
std::string percent_decoded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int hi = hex_digit(s[i + 1]), lo = hex_digit(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += char(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

struct OptionsFree {
  void operator()(PQconninfoOption* o) const { libpq_if_loadable()->PQconninfoFree(o); }  // parsed: loaded
};
using Options = std::unique_ptr<PQconninfoOption, OptionsFree>;

/// libpq's reading of `conninfo` (a URL or key=value string): only what it sets itself, no
/// defaults from the environment. Null when libpq cannot parse it, or cannot be loaded: then the
/// text walk below is all there is (and opening the store fails with the loader's error).
Options parse(std::string_view conninfo) {
  const Libpq* pq = libpq_if_loadable();
  if (!pq) return nullptr;
  char* error = nullptr;
  Options o(pq->PQconninfoParse(std::string(conninfo).c_str(), &error));
  pq->PQfreemem(error);  // its text may quote the secret: never shown from here
  return o;
}

/// The secret values libpq reads in `conninfo` (nested dbname connection strings too); nullopt
/// when it cannot parse it. `depth` bounds the nesting.
std::optional<std::vector<std::string>> parsed_secrets(std::string_view conninfo, int depth = 0) {
  Options options = parse(conninfo);
  if (!options) return std::nullopt;
  std::vector<std::string> out;
  for (const PQconninfoOption* o = options.get(); o->keyword; ++o) {
    if (!o->val) continue;
    if (secret_keyword(o->keyword)) out.emplace_back(o->val);
    if (std::string_view(o->keyword) == "dbname" && connection_string(o->val)) {
      auto nested = depth < 4 ? parsed_secrets(o->val, depth + 1) : std::nullopt;
      // A nested string libpq cannot read, or nested too deep: its whole text is taken as secret.
      if (nested) out.insert(out.end(), nested->begin(), nested->end());
      else out.emplace_back(o->val);
    }
  }
  return out;
}

/// Calls `f(begin, end)` for each span of `s`'s text that holds a secret, in order.
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
    // Query parameters up to the next '&': a secret keyword however it is encoded, and a dbname
    // that is a connection string carrying one.
    std::size_t q = s.find('?', start);
    while (q != std::string_view::npos && q < s.size()) {
      std::size_t param = q + 1, end = s.find('&', param);
      if (end == std::string_view::npos) end = s.size();
      std::string_view kv = s.substr(param, end - param);
      std::size_t eq = kv.find('=');
      if (eq != std::string_view::npos) {
        const std::string key = support::ascii_lower(percent_decoded(kv.substr(0, eq)));
        const std::string value = percent_decoded(kv.substr(eq + 1));
        if (secret_keyword(key) || (key == "dbname" && connection_string(value) && url_has_password(value)))
          f(param + eq + 1, end);
      }
      q = end;
    }
    return;
  }
  // A key=value conninfo string: a secret keyword = value, the value bare or single-quoted.
  for (std::string_view keyword : {"password", "sslpassword"}) {
    std::size_t pos = 0;
    while ((pos = s.find(keyword, pos)) != std::string_view::npos) {
      bool word_start = pos == 0 || std::isspace(static_cast<unsigned char>(s[pos - 1]));
      std::size_t i = pos + keyword.size();
      while (i < s.size() && s[i] == ' ') ++i;
      if (!word_start || i >= s.size() || s[i] != '=') {
        pos += keyword.size();
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
}

std::string masked_text(std::string_view url) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  for_each_password(url, [&](std::size_t begin, std::size_t end) { spans.emplace_back(begin, end); });
  std::sort(spans.begin(), spans.end());
  std::string out;
  std::size_t copied = 0;
  for (auto [begin, end] : spans) {
    if (begin < copied) continue;
    out.append(url.substr(copied, begin - copied)).append(kMask);
    copied = end;
  }
  out.append(url.substr(copied));
  return out;
}

} // namespace

bool is_postgres_url(std::string_view s) { return scheme_length(s) != 0; }

bool url_has_password(std::string_view url) {
  // What libpq reads, and what the text shows (a URL libpq reads otherwise, or cannot read).
  auto secrets = parsed_secrets(url);
  if (secrets && !secrets->empty()) return true;
  bool found = false;
  for_each_password(url, [&](std::size_t, std::size_t) { found = true; });
  return found;
}

std::string redact_url(std::string_view url) {
  std::string out = masked_text(url);
  // libpq's reading of the result is the judge: a secret it still finds leaves nothing but the scheme.
  auto left = parsed_secrets(out);
  const bool clean = left ? std::all_of(left->begin(), left->end(), [](const std::string& v) { return v == kMask; })
                          : !parsed_secrets(url);  // unreadable before too: the text walk is all there is
  if (clean) return out;
  const std::size_t scheme = scheme_length(url);
  return scheme ? std::string(url.substr(0, scheme)).append(kMask) : std::string(kMask);
}

std::string scrub_passwords(std::string_view text, std::string_view url) {
  std::vector<std::string> secrets;
  for_each_password(url, [&](std::size_t begin, std::size_t end) { secrets.emplace_back(url.substr(begin, end - begin)); });
  if (auto parsed = parsed_secrets(url)) secrets.insert(secrets.end(), parsed->begin(), parsed->end());
  // Longest first: a secret inside another is masked with it.
  std::sort(secrets.begin(), secrets.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  std::string out(text);
  for (const std::string& pw : secrets) {
    if (pw.empty() || pw == kMask) continue;
    for (std::size_t at = out.find(pw); at != std::string::npos; at = out.find(pw, at + kMask.size()))
      out.replace(at, pw.size(), kMask);
  }
  return out;
}

} // namespace acp::store::pg
