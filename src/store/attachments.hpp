// The harness's image attachment store (0.1.1, docs/store-format.md#images), which both store
// generations use for prompt images: an object per distinct image at
// `<harness home>/attachments/v1/objects/<hex[0:2]>/<hex>`, hex the SHA-256 of its bytes, published
// as the harness publishes it (an O_EXCL file in `v1/tmp/`, fsync, link(), directory fsyncs), so
// a crash never leaves a log naming an object that is not whole on disk. Objects are never
// rewritten: an existing one is verified and kept.
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace acp::store {

/// `<home>/attachments/v1/objects/<hex[0:2]>/<hex>`.
std::string attachment_object_path(const std::string& harness_home, std::string_view hex);

/// The 64 lowercase hex digits of an `attachmentId` "sha256:<hex>"; "" when it is not one.
std::string_view attachment_hex(std::string_view attachment_id);

/// Publishes `bytes` (already checked to be an image of `media_type`) and returns the block's
/// attachment reference in the store's key order: {attachmentId, mediaType, width, height, bytes[, name]}.
/// Throws StoreError when it cannot be written or an object of that digest holds other bytes.
boost::json::object save_image(const std::string& harness_home, std::string_view bytes, std::string_view media_type,
                               std::uint32_t width, std::uint32_t height, std::string_view name);

/// The object a reference names, verified as the harness verifies it (digest, size, type and
/// dimensions from the header); nullopt when it is missing, unreadable or does not match.
std::optional<std::string> read_image(const std::string& harness_home, const boost::json::object& attachment);

/// Whether the object a reference names exists (a stat, no reading).
bool image_present(const std::string& harness_home, const boost::json::object& attachment);

/// The display name recorded for a client's file name or URI, as the harness records it — the last
/// path segment (either separator), control characters removed, trimmed, at most 255 UTF-16 units —
/// but with the invisible characters removed too (support::is_invisible); "" = none.
std::string attachment_display_name(std::string_view value);

} // namespace acp::store
