// On-disk naming of the session store (docs/store-format.md#layout): the bucket a session lives in, the
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

/// The store generation of a root: the harness's 45fc layout (flat `cwd-<hash>/<id>.jsonl[.zstd]`)
/// or its 0.1.1 layout (`--<projectKey(cwd)>--/<id>/session.jsonl[.zstd]`, docs/store-format.md#project-layout-01).
enum class Generation { flat, project_dirs };

/// "45fc" / "0.1" (the --store-generation spelling).
std::string_view generation_name(Generation g);
/// Parses "45fc" / "0.1"; nullopt otherwise.
std::optional<Generation> parse_generation(std::string_view s);

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

/// projectKey(cwd) of the 0.1 layout (docs/store-format.md#projectkey): per UTF-16 unit, runs of '/', '\\', ':'
/// become one '-', [A-Za-z0-9._-] stay, anything else is "~XXXX"; leading '-' stripped, "" ->
/// "root", cut to 251 chars. Throws InvalidSessionId for "".
std::string project_key(std::string_view cwd);

/// The 0.1 project directory: "--<projectKey(cwd)>--", or "_no-cwd".
std::string project_dir_name(const std::optional<std::string>& cwd);

/// The directory a session's log lives in, relative to the root: the 45fc bucket, or the 0.1
/// project directory plus the session's own directory.
std::string session_dir(Generation g, const std::optional<std::string>& cwd, std::string_view id);

/// Whether a directory of the root holds sessions: "cwd-*" and "_no-cwd" (45fc); every directory
/// (0.1, docs/store-format.md#project-layout-01).
bool is_bucket_dir_name(Generation g, std::string_view name);

/// The bucket (45fc) or project directory (0.1) of a cwd.
std::string bucket_of(Generation g, const std::optional<std::string>& cwd);

/// The log's path relative to its bucket: "<encodeSegment(id)><suffix>" (45fc) or
/// "<encodeSegment(id)>/session<suffix>" (0.1). Throws IdTooLong / InvalidSessionId.
std::string log_entry_name(Generation g, std::string_view id, Encoding e);

/// The 0.1 log file name inside a session directory: "session.jsonl[.zstd]".
std::string v01_log_name(Encoding e);

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

/// The lock file of a 0.1 session, inside its session directory (0.1.1 reads only session.jsonl[.zstd]
/// there, docs/store-format.md#project-layout-01).
inline constexpr std::string_view kV01LockName = "dsh-acp.lock";

/// True when `name` is a log file name of either encoding (not a tmp or lock file).
bool is_log_file_name(std::string_view name, Encoding e);

/// Lexical normalisation of an absolute path: collapses "//", "." and "..", drops a trailing "/".
std::string normalize_cwd(std::string_view cwd);

} // namespace acp::store
