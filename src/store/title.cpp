#include "store/title.hpp"

#include "support/text_class.hpp"
#include "support/utf8.hpp"

#include <vector>

namespace acp::store {

namespace {

constexpr std::size_t kTitleWords = 5;
constexpr std::size_t kTitleBytes = 40;

using support::is_invisible;  // never part of a title
using support::is_js_whitespace;

struct Cursor {
  std::string_view s;
  std::size_t i = 0;
  bool done() const { return i >= s.size(); }
  char32_t peek() const { return support::decode_utf8(s, i).cp; }
  char32_t next() {
    auto d = support::decode_utf8(s, i);
    i += d.length;
    return d.cp;
  }
};

// Skips a control string (OSC, DCS, SOS, PM, APC) up to and including BEL or ST (ESC \ or U+009C).
void skip_control_string(Cursor& c) {
  while (!c.done()) {
    char32_t x = c.next();
    if (x == 0x07 || x == 0x9C) return;
    if (x == 0x1B && !c.done() && c.peek() == U'\\') {
      c.next();
      return;
    }
  }
}

// Skips CSI parameters, intermediates and the final byte.
void skip_csi(Cursor& c) {
  while (!c.done()) {
    char32_t x = c.peek();
    if (x >= 0x20 && x <= 0x3F) {
      c.next();
      continue;
    }
    if (x >= 0x40 && x <= 0x7E) c.next();
    return;
  }
}

// The next visible character: escape sequences and invisible characters are skipped, whitespace is
// kept; 0 at the end. Read on demand, so a title never looks further into a large prompt than it needs.
char32_t next_visible(Cursor& c) {
  while (!c.done()) {
    char32_t x = c.next();
    if (x == 0x1B) {
      if (c.done()) break;
      char32_t k = c.peek();
      if (k == U'[') {
        c.next();
        skip_csi(c);
      } else if (k == U']' || k == U'P' || k == U'X' || k == U'^' || k == U'_') {
        c.next();
        skip_control_string(c);
      } else {
        while (!c.done() && c.peek() >= 0x20 && c.peek() <= 0x2F) c.next();
        if (!c.done() && c.peek() >= 0x30 && c.peek() <= 0x7E) c.next();
      }
      continue;
    }
    if (x == 0x9B) {
      skip_csi(c);
      continue;
    }
    if (x == 0x9D || x == 0x90 || x == 0x98 || x == 0x9E || x == 0x9F) {
      skip_control_string(c);
      continue;
    }
    if (is_invisible(x) || x == 0) continue;  // NUL is a C0 control: invisible, and our end marker
    return x;
  }
  return 0;
}


std::string shape(std::string_view text, std::size_t max_words) {
  Cursor c{text};
  std::string out;
  std::size_t words = 0;
  char32_t x = next_visible(c);
  // Once past kTitleBytes nothing later can change the cut below: stop reading there.
  while (x != 0 && words < max_words && out.size() <= kTitleBytes) {
    while (x != 0 && is_js_whitespace(x)) x = next_visible(c);
    if (x == 0) break;
    if (!out.empty()) out.push_back(' ');
    while (x != 0 && !is_js_whitespace(x) && out.size() <= kTitleBytes) {
      support::append_utf8(out, x);
      x = next_visible(c);
    }
    ++words;
  }
  // At most kTitleBytes, cut on a code-point boundary (no ellipsis).
  if (out.size() > kTitleBytes) {
    out.resize(support::utf8_floor(out, kTitleBytes));
  }
  return out;
}

} // namespace

std::string make_fallback_title(std::string_view text) { return shape(text, kTitleWords); }

std::string listed_title(std::string_view stored) { return shape(stored, static_cast<std::size_t>(-1)); }

} // namespace acp::store
