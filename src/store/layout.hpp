// On-disk naming of the session store (harness-compat §1.1): the bucket a session lives in, the
// file name its id maps to, and the encoding suffix. Pure functions: no I/O, so the naming rules
// can be tested byte-for-byte and reused by anyone that needs a path without opening the store.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace acp::store {

/// Physical encoding of every log under one root.
enum class Encoding { zstd, none };

/// ".jsonl.zstd" or ".jsonl".
std::string_view log_suffix(Encoding e);

/// "zstd" / "none" (the --store-compression spelling).
std::string_view encoding_name(Encoding e);

/// encodeSegment(): per UTF-16 code unit, keep [A-Za-z0-9._-], else "~XXXX" (uppercase hex);
/// "." and ".." are fully escaped. Invalid UTF-8 bytes count as U+FFFD (ids reach us through
/// parse_json, which already replaced unpaired surrogates). Throws InvalidSessionId for "".
std::string encode_segment(std::string_view id);

/// Lowercase hex SHA-256 of the bytes.
std::string sha256_hex(std::string_view bytes);

/// "cwd-<first 12 hex of sha256(cwd)>" or "_no-cwd".
std::string bucket_name(const std::optional<std::string>& cwd);

/// NAME_MAX of the file systems we support.
inline constexpr std::size_t kNameMax = 255;

/// Bytes a temporary creation file adds to the final name: ".<12hex>.tmp".
inline constexpr std::size_t kTmpNameExtra = 17;

/// encode_segment(id) + suffix. Throws IdTooLong when the final name, or the temporary name used
/// to create it atomically, would exceed NAME_MAX, so the failure is a clear -32602 up front
/// instead of an ENAMETOOLONG half-way through a prompt.
std::string log_file_name(std::string_view id, Encoding e);

/// Name of the per-session lock file in the bucket: never ends in ".jsonl" / ".jsonl.zstd", so
/// harness discovery ignores it.
std::string lock_file_name(std::string_view id);

/// True when `name` is a log file name of either encoding (not a tmp or lock file).
bool is_log_file_name(std::string_view name, Encoding e);

/// Lexical normalisation of an absolute path: collapses "//", "." and "..", drops a trailing "/".
std::string normalize_cwd(std::string_view cwd);

} // namespace acp::store
