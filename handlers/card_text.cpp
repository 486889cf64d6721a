#include "handlers/card_text.hpp"

#include "handlers/text_chunks.hpp"

namespace acp::handlers {

std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      out.push_back(' ');  // U+0080–U+009F, two bytes in UTF-8
      ++i;
    } else {
      out.push_back(c < 0x20 || c == 0x7F ? ' ' : text[i]);
    }
  }
  return out;
}

std::string title_part(std::string_view text, std::size_t max_bytes) {
  std::size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return {};
  text.remove_prefix(start);
  std::string_view line = text.substr(0, text.find_first_of("\r\n"));
  bool cut = line.size() < text.size() && text.find_first_not_of(" \t\r\n", line.size()) != std::string_view::npos;
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  std::string_view piece = first_utf8_piece(line, max_bytes);
  cut = cut || piece.size() < line.size();
  return one_line(piece) + (cut ? "\u2026" : "");
}

} // namespace acp::handlers
