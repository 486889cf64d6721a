#include "store/line_text.hpp"

#include "store/errors.hpp"
#include "support/json_text.hpp"
#include "support/log.hpp"
#include "support/utf8.hpp"

#include <algorithm>
#include <mutex>
#include <set>

namespace acp::store {

boost::json::value parse_stored_line(std::string_view text, boost::system::error_code& ec, bool* replaced,
                                     std::string* repaired, boost::json::storage_ptr storage) {
  if (replaced) *replaced = false;
  boost::json::value v = support::parse_json(text, ec, nullptr, storage);
  // The parser checks the UTF-8 itself: only a line it refused is looked at again.
  if (!ec || support::valid_utf8(text)) return v;
  std::string fixed = support::valid_utf8_text(text);
  ec.clear();
  v = support::parse_json(fixed, ec, nullptr, std::move(storage));
  if (ec) return v;
  if (replaced) *replaced = true;
  if (repaired) *repaired = std::move(fixed);
  return v;
}

void check_log_text(std::string_view lines, const std::string& where, std::int64_t first_line) {
  const std::size_t bad = support::first_invalid_utf8(lines);
  if (bad == lines.size()) return;
  const auto line = first_line + std::count(lines.begin(), lines.begin() + std::ptrdiff_t(bad), '\n');
  throw InvalidLogText(where + ": line " + std::to_string(line) + " of the batch is not valid UTF-8 (byte " +
                       std::to_string(bad) + "); nothing of the batch was written");
}

void note_replaced_text(const std::string& where, std::int64_t line) {
  static std::mutex mu;
  static std::set<std::string, std::less<>> seen;
  {
    std::lock_guard g(mu);
    if (seen.size() >= 1024 || !seen.emplace(where).second) return;  // bounded: many bad logs cannot grow it
  }
  log::warn("session log " + where + ": line " + std::to_string(line) +
            " is not valid UTF-8 (an older dsh-acp wrote raw bytes): it is read with U+FFFD in place of the bad "
            "bytes, here and in any later line; `dsh-acp store verify` lists them");
}

} // namespace acp::store
