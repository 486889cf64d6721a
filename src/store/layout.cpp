#include "store/layout.hpp"

#include "store/errors.hpp"
#include "support/hex.hpp"
#include "support/sha256.hpp"
#include "support/utf8.hpp"


#include <cstdint>
#include <vector>

namespace acp::store {
namespace {

bool kept_unit(char16_t u) {
  return (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || u == '.' ||
         u == '_' || u == '-';
}

void append_escape(std::string& out, char16_t unit) {
  out.push_back('~');
  support::append_hex(out, unit, 4, support::HexCase::upper);
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
    // Malformed input reads as U+FFFD, as a lossy JavaScript decode would.
    const auto decoded = support::decode_utf8(id, i);
    const char32_t cp = decoded.cp;
    i += decoded.length;
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
  const support::Sha256::Digest digest = support::sha256(bytes);
  return support::hex_encode(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

std::string bucket_name(const std::optional<std::string>& cwd) {
  if (!cwd) return "_no-cwd";
  return "cwd-" + sha256_hex(*cwd).substr(0, 12);
}

std::string_view generation_name(Generation g) { return g == Generation::flat ? "45fc" : "0.1"; }

std::optional<Generation> parse_generation(std::string_view s) {
  if (s == "45fc") return Generation::flat;
  if (s == "0.1") return Generation::project_dirs;
  return std::nullopt;
}

std::string project_key(std::string_view cwd) {
  if (cwd.empty()) throw InvalidSessionId("cannot encode an empty project path");
  std::string out;
  out.reserve(cwd.size());
  bool in_run = false;
  auto unit = [&](char16_t u) {
    if (u == '/' || u == '\\' || u == ':') {
      if (!in_run) out.push_back('-');
      in_run = true;
      return;
    }
    in_run = false;
    if (kept_unit(u)) out.push_back(char(u));
    else append_escape(out, u);
  };
  for (std::size_t i = 0; i < cwd.size();) {
    const auto decoded = support::decode_utf8(cwd, i);
    i += decoded.length;
    if (decoded.cp >= 0x10000) {
      char32_t v = decoded.cp - 0x10000;
      unit(char16_t(0xD800 + (v >> 10)));
      unit(char16_t(0xDC00 + (v & 0x3FF)));
    } else {
      unit(char16_t(decoded.cp));
    }
  }
  std::size_t lead = out.find_first_not_of('-');
  out.erase(0, lead == std::string::npos ? out.size() : lead);
  if (out.empty()) out = "root";
  if (out.size() > 251) out.resize(251);
  return out;
}

std::string project_dir_name(const std::optional<std::string>& cwd) {
  if (!cwd) return "_no-cwd";
  return "--" + project_key(*cwd) + "--";
}

bool is_bucket_dir_name(Generation g, std::string_view name) {
  return g == Generation::project_dirs || name == "_no-cwd" || name.rfind("cwd-", 0) == 0;
}

std::string bucket_of(Generation g, const std::optional<std::string>& cwd) {
  return g == Generation::flat ? bucket_name(cwd) : project_dir_name(cwd);
}

std::string v01_log_name(Encoding e) { return "session" + std::string(log_suffix(e)); }

std::string log_entry_name(Generation g, std::string_view id, Encoding e) {
  if (g == Generation::flat) return log_file_name(id, e);
  std::string dir = encode_segment(id);
  // The session directory's name is all the 0.1 layout puts in a name of its own; the log and its
  // tmp file ("session.jsonl.zstd.<12hex>.tmp") are short.
  if (dir.size() > kNameMax)
    throw IdTooLong("session id is too long for a directory name (" + std::to_string(dir.size()) +
                    " bytes encoded, at most " + std::to_string(kNameMax) + ")");
  return dir + "/" + v01_log_name(e);
}

std::string session_dir(Generation g, const std::optional<std::string>& cwd, std::string_view id) {
  if (g == Generation::flat) return bucket_name(cwd);
  return project_dir_name(cwd) + "/" + encode_segment(id);
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
