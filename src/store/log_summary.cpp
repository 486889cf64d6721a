#include "store/log_summary.hpp"

#include "store/errors.hpp"
#include "store/file_io.hpp"
#include "store/line_text.hpp"
#include "store/log_source.hpp"
#include "store/records.hpp"

#include <fcntl.h>

#include <cstring>

namespace acp::store {

namespace json = boost::json;

namespace {

// Time of the last event a storage line stands for (packed rows: the last member's time).
std::optional<std::int64_t> line_time(std::string_view text) {
  boost::system::error_code ec;
  json::value v = parse_stored_line(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.get_object();
  if (auto t = o.if_contains("time")) return safe_int(*t);
  auto t0 = o.if_contains("time0");
  auto d = object_at(o, "data");
  if (!t0 || !d) return std::nullopt;
  auto t = safe_int(*t0);
  auto dt = d->if_contains("dt");
  if (!t || !dt || !dt->is_array()) return t;
  for (const auto& x : dt->get_array())
    if (auto xi = safe_int(x)) *t += *xi;
  return t;
}

} // namespace

LogSummary summarize_log(const std::string& path, Encoding enc) {
  LogSummary s;
  UniqueFd fd = open_nofollow(path, O_RDONLY);
  if (!fd) {
    if (errno == ENOENT || errno == ELOOP) return s;
    throw_errno("open", path, errno);
  }
  std::string last;
  try {
    read_log_lines(fd.get(), path, enc, [&](const PlainLine& l) {
      if (l.number == 1) {
        boost::system::error_code ec;
        json::value v = parse_stored_line(l.text, ec);
        if (!ec) s.header = parse_header(v);
        if (s.header && s.header->version != kSessionFormatVersion) s.header.reset();
        if (!s.header) throw StoreCorrupt(path, 1, "invalid session header");
        return;
      }
      // memmem, not string_view::find: find() runs memchr for the needle's first byte, a quote,
      // which JSON lines hold every few bytes (11% of a 60 MB session/load's CPU went here).
      static constexpr std::string_view kTitle = "\"session/title\"";
      if (::memmem(l.text.data(), l.text.size(), kTitle.data(), kTitle.size()) != nullptr) {
        boost::system::error_code ec;
        json::value v = parse_stored_line(l.text, ec);
        if (!ec && v.is_object() && string_at(v.get_object(), "type") == "session/title") {
          if (auto d = object_at(v.get_object(), "data")) s.title = std::string(string_at(*d, "title"));
        }
      }
      last.assign(l.text);
    });
  } catch (const StoreCorrupt&) {
    // Listing follows the harness's list(): a readable header is enough to be listed.
  }
  if (s.header) {
    s.updatedAt = s.header->createdAt;
    if (!last.empty())
      if (auto t = line_time(last)) s.updatedAt = *t;
  }
  return s;
}

} // namespace acp::store
