#include "support/json_text.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace acp::support {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads the code unit of a "\uXXXX" escape starting at text[i] (the backslash); -1 if not one.
long escape_unit(std::string_view text, std::size_t i) {
  if (i + 6 > text.size() || text[i] != '\\' || text[i + 1] != 'u') return -1;
  long unit = 0;
  for (std::size_t k = 2; k < 6; ++k) {
    int h = hex_value(text[i + k]);
    if (h < 0) return -1;
    unit = unit * 16 + h;
  }
  return unit;
}

} // namespace

bool replace_unpaired_surrogate_escapes(std::string_view text, std::string& out) {
  // Fast path: no surrogate escape can be present without "\u" followed by d/D.
  bool maybe = false;
  for (std::size_t p = text.find("\\u"); p != std::string_view::npos; p = text.find("\\u", p + 2)) {
    if (p + 2 < text.size() && (text[p + 2] == 'd' || text[p + 2] == 'D')) {
      maybe = true;
      break;
    }
  }
  if (!maybe) return false;

  bool replaced = false;
  std::string result;
  result.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size();) {
    char c = text[i];
    if (!in_string) {
      if (c == '"') in_string = true;
      result.push_back(c);
      ++i;
      continue;
    }
    if (c == '"') {
      in_string = false;
      result.push_back(c);
      ++i;
      continue;
    }
    if (c != '\\') {
      result.push_back(c);
      ++i;
      continue;
    }
    long unit = escape_unit(text, i);
    if (unit < 0xD800 || unit > 0xDFFF) {
      // Any other escape (including malformed ones, left for the parser to reject) is copied whole.
      std::size_t len = unit >= 0 ? 6 : std::min<std::size_t>(2, text.size() - i);
      result.append(text.substr(i, len));
      i += len;
      continue;
    }
    if (unit <= 0xDBFF) {
      long next = escape_unit(text, i + 6);
      if (next >= 0xDC00 && next <= 0xDFFF) {
        result.append(text.substr(i, 12));
        i += 12;
        continue;
      }
    }
    result.append("\\ufffd");
    replaced = true;
    i += 6;
  }
  if (replaced) out = std::move(result);
  return replaced;
}

boost::json::value parse_json(std::string_view text, boost::system::error_code& ec, bool* replaced_surrogates,
                              boost::json::storage_ptr storage) {
  std::string repaired;
  bool replaced = replace_unpaired_surrogate_escapes(text, repaired);
  if (replaced_surrogates) *replaced_surrogates = replaced;
  // Clients may nest _meta deeply; 32 levels (the default) is too few to call malformed.
  boost::json::parse_options options;
  options.max_depth = 1024;
  return boost::json::parse(replaced ? std::string_view(repaired) : text, ec, std::move(storage), options);
}

std::string to_json_text(const boost::json::value& v) { return boost::json::serialize(v); }

} // namespace acp::support
