#include "support/text_class.hpp"

namespace acp::support {

bool is_js_whitespace(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000 || cp == 0xFEFF;
}

bool is_invisible(char32_t cp) {
  if (cp < 0x20) return !(cp >= 0x09 && cp <= 0x0D);
  if (cp >= 0x7F && cp <= 0x9F) return true;
  return (cp >= 0x200B && cp <= 0x200F) || cp == 0x2060 || cp == 0x061C || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF || cp == 0x180E;
}

} // namespace acp::support
