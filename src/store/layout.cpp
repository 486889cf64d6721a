#include "store/layout.hpp"

#include "store/errors.hpp"

#include <openssl/evp.h>

#include <cstdint>
#include <vector>

namespace acp::store {
namespace {

// Decodes one code point; on malformed input consumes one byte and yields U+FFFD, as a lossy
// JavaScript decode would.
char32_t next_code_point(std::string_view s, std::size_t& i) {
  auto b0 = static_cast<unsigned char>(s[i]);
  auto cont = [&](std::size_t k) -> int {
    if (i + k >= s.size()) return -1;
    auto b = static_cast<unsigned char>(s[i + k]);
    return (b & 0xC0) == 0x80 ? (b & 0x3F) : -1;
  };
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    int c1 = cont(1);
    if (c1 >= 0) {
      i += 2;
      return char32_t((b0 & 0x1F) << 6 | c1);
    }
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    int c1 = cont(1), c2 = c1 >= 0 ? cont(2) : -1;
    if (c2 >= 0) {
      char32_t cp = char32_t((b0 & 0x0F) << 12 | c1 << 6 | c2);
      if (cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) {
        i += 3;
        return cp;
      }
    }
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    int c1 = cont(1), c2 = c1 >= 0 ? cont(2) : -1, c3 = c2 >= 0 ? cont(3) : -1;
    if (c3 >= 0) {
      char32_t cp = char32_t((b0 & 0x07) << 18 | c1 << 12 | c2 << 6 | c3);
      if (cp >= 0x10000 && cp <= 0x10FFFF) {
        i += 4;
        return cp;
      }
    }
  }
  ++i;
  return 0xFFFD;
}

bool kept_unit(char16_t u) {
  return (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || u == '.' ||
         u == '_' || u == '-';
}

void append_escape(std::string& out, char16_t unit) {
  static constexpr char hex[] = "0123456789ABCDEF";
  out.push_back('~');
  for (int shift = 12; shift >= 0; shift -= 4) out.push_back(hex[(unit >> shift) & 0xF]);
}

} // namespace

std::string_view log_suffix(Encoding e) { return e == Encoding::zstd ? ".jsonl.zstd" : ".jsonl"; }

std::string_view encoding_name(Encoding e) { return e == Encoding::zstd ? "zstd" : "none"; }

std::string encode_segment(std::string_view id) {
  if (id.empty()) throw InvalidSessionId("cannot encode an empty path segment");
  if (id == ".") return "~002E";
  if (id == "..") return "~002E~002E";
  std::string out;
  out.reserve(id.size());
  for (std::size_t i = 0; i < id.size();) {
    char32_t cp = next_code_point(id, i);
    if (cp >= 0x10000) {
      char32_t v = cp - 0x10000;
      append_escape(out, char16_t(0xD800 + (v >> 10)));
      append_escape(out, char16_t(0xDC00 + (v & 0x3FF)));
    } else if (kept_unit(char16_t(cp))) {
      out.push_back(char(cp));
    } else {
      append_escape(out, char16_t(cp));
    }
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr) != 1)
    throw StoreError("sha256 failed");
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 0xF]);
  }
  return out;
}

std::string bucket_name(const std::optional<std::string>& cwd) {
  if (!cwd) return "_no-cwd";
  return "cwd-" + sha256_hex(*cwd).substr(0, 12);
}

std::string log_file_name(std::string_view id, Encoding e) {
  std::string name = encode_segment(id);
  name += log_suffix(e);
  if (name.size() + kTmpNameExtra > kNameMax)
    throw IdTooLong("session id is too long for a file name (" + std::to_string(name.size()) +
                    " bytes encoded, at most " + std::to_string(kNameMax - kTmpNameExtra) + ")");
  return name;
}

std::string lock_file_name(std::string_view id) { return encode_segment(id) + ".lock"; }

bool is_log_file_name(std::string_view name, Encoding e) {
  std::string_view suffix = log_suffix(e);
  return name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
}

std::string normalize_cwd(std::string_view cwd) {
  std::vector<std::string_view> parts;
  std::size_t i = 0;
  while (i <= cwd.size()) {
    std::size_t j = cwd.find('/', i);
    if (j == std::string_view::npos) j = cwd.size();
    std::string_view part = cwd.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = j + 1;
  }
  std::string out;
  for (auto p : parts) {
    out.push_back('/');
    out.append(p);
  }
  if (out.empty()) out = "/";
  return out;
}

} // namespace acp::store
