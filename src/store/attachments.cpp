#include "store/attachments.hpp"

#include "store/errors.hpp"
#include "store/file_io.hpp"
#include "store/records.hpp"
#include "support/hex.hpp"
#include "support/image.hpp"
#include "support/sha256.hpp"
#include "support/text_class.hpp"
#include "support/utf8.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace acp::store {

namespace json = boost::json;

namespace {

std::string digest_hex(std::string_view bytes) {
  const auto d = support::Sha256().update(bytes).digest();
  return support::hex_encode(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
}

std::optional<std::string> read_file(const std::string& path, std::uint64_t limit) {
  UniqueFd fd = open_nofollow(path, O_RDONLY);
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) > limit)
    return std::nullopt;
  try {
    return pread_some(fd.get(), 0, static_cast<std::size_t>(st.st_size), path);
  } catch (const StoreError&) {
    return std::nullopt;
  }
}

} // namespace

std::string attachment_object_path(const std::string& harness_home, std::string_view hex) {
  return harness_home + "/attachments/v1/objects/" + std::string(hex.substr(0, 2)) + "/" + std::string(hex);
}

std::string_view attachment_hex(std::string_view id) {
  constexpr std::string_view kPrefix = "sha256:";
  if (id.size() != kPrefix.size() + 64 || id.substr(0, kPrefix.size()) != kPrefix) return {};
  id.remove_prefix(kPrefix.size());
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return {};
  return id;
}

json::object save_image(const std::string& home, std::string_view bytes, std::string_view media_type,
                        std::uint32_t width, std::uint32_t height, std::string_view name) {
  const std::string hex = digest_hex(bytes);
  const std::string root = home + "/attachments/v1";
  const std::string bucket = root + "/objects/" + hex.substr(0, 2);
  const std::string staging = root + "/tmp";
  const std::string target = bucket + "/" + hex;
  make_durable_dirs(bucket);
  make_durable_dirs(staging);
  const std::string temporary = staging + "/" + random_hex12();
  {
    UniqueFd fd = open_nofollow(temporary, O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (!fd) throw_errno("create", temporary, errno);
    try {
      write_all(fd.get(), bytes, temporary);
      fsync_fd(fd.get(), temporary);
    } catch (...) {
      ::unlink(temporary.c_str());
      throw;
    }
  }
  if (::link(temporary.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(temporary.c_str());
    if (err != EEXIST) throw_errno("link", target, err);
    // Content-addressed: an object already there is the same image, unless it is damaged.
    std::optional<std::string> existing = read_file(target, bytes.size());
    if (!existing || digest_hex(*existing) != hex) throw StoreError("attachment object failed its digest check: " + target);
  } else {
    ::unlink(temporary.c_str());
  }
  // The entry, and a bucket another process may just have created, durable before a log names it.
  fsync_dir(bucket);
  fsync_dir(root + "/objects");
  json::object ref;
  ref["attachmentId"] = "sha256:" + hex;
  ref["mediaType"] = media_type;
  ref["width"] = static_cast<std::int64_t>(width);
  ref["height"] = static_cast<std::int64_t>(height);
  ref["bytes"] = static_cast<std::int64_t>(bytes.size());
  if (!name.empty()) ref["name"] = name;
  return ref;
}

std::optional<std::string> read_image(const std::string& home, const json::object& attachment) {
  const std::string_view hex = attachment_hex(string_at(attachment, "attachmentId"));
  const json::value* bytes = attachment.if_contains("bytes");
  const json::value* width = attachment.if_contains("width");
  const json::value* height = attachment.if_contains("height");
  const auto size = bytes ? safe_int(*bytes) : std::nullopt;
  if (hex.empty() || !size || *size < 0 || !width || !height) return std::nullopt;
  std::optional<std::string> data = read_file(attachment_object_path(home, hex), static_cast<std::uint64_t>(*size));
  if (!data || data->size() != static_cast<std::uint64_t>(*size) || digest_hex(*data) != hex) return std::nullopt;
  const std::optional<support::ImageHeader> header = support::probe_image(*data);
  if (!header || header->media_type != string_at(attachment, "mediaType") || safe_int(*width) != header->width ||
      safe_int(*height) != header->height)
    return std::nullopt;
  return data;
}

bool image_present(const std::string& home, const json::object& attachment) {
  const std::string_view hex = attachment_hex(string_at(attachment, "attachmentId"));
  struct stat st {};
  return !hex.empty() && ::stat(attachment_object_path(home, hex).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string attachment_display_name(std::string_view value) {
  if (const std::size_t cut = value.find_last_of("/\\"); cut != std::string_view::npos) value.remove_prefix(cut + 1);
  // As the harness: controls out, then trimmed as JavaScript trims, then at most 255 UTF-16 units.
  // Beyond it: the invisible characters go too (C1, zero-width, bidirectional overrides and
  // isolates), which would let a file name shown on a card read as another.
  std::vector<char32_t> kept;
  for (std::size_t i = 0; i < value.size();) {
    const support::DecodedCodePoint d = support::decode_utf8(value, i);
    i += d.length;
    if (d.cp >= 0x20 && !support::is_invisible(d.cp)) kept.push_back(d.cp);
  }
  std::size_t first = 0, last = kept.size();
  while (first < last && support::is_js_whitespace(kept[first])) ++first;
  while (last > first && support::is_js_whitespace(kept[last - 1])) --last;
  std::string clean;
  std::size_t units = 0;
  for (std::size_t i = first; i < last; ++i) {
    units += kept[i] > 0xFFFF ? 2 : 1;
    if (units > 255) break;  // a character that does not fit whole is left out
    support::append_utf8(clean, kept[i]);
  }
  return clean;
}

} // namespace acp::store
