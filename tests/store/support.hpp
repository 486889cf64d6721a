// Helpers shared by the store tests: private temporary directories, whole-file I/O, store
// construction, fixture paths, and log-building shortcuts.
#pragma once

#include "../common/temp_dir.hpp"
#include "store/session_store.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace store_test {

using TempDir = acp::test::TempDir;

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes, unsigned mode = 0600);
void append_file(const std::string& path, const std::string& bytes);
std::vector<std::string> split_lines(const std::string& text);  // '\n'-terminated lines, without '\n'
unsigned file_mode(const std::string& path);                      // st_mode & 0777 (lstat)
bool path_exists(const std::string& path);

std::string fixture_path(const std::string& name);  // tests/data/fixtures/harness/<name>.session.jsonl

/// The layout a new root takes in these tests: DSH_ACP_STORE_GENERATION ("45fc" / "0.1") like the
/// server, else 45fc. A root that already holds logs keeps its layout (e.g. after install_fixture).
acp::store::Generation default_generation();

/// A store over `<dir>/root` with its index in `<dir>/cache`; a new root takes default_generation().
std::unique_ptr<acp::store::SessionStore> open_store(const TempDir& dir, std::optional<acp::store::Encoding> enc,
                                                     std::chrono::milliseconds lock_timeout = std::chrono::milliseconds(2000));
/// The same with the layout a new root takes named: for the tests of a fact of one layout.
std::unique_ptr<acp::store::SessionStore> open_store(const TempDir& dir, std::optional<acp::store::Encoding> enc,
                                                     acp::store::Generation new_root,
                                                     std::chrono::milliseconds lock_timeout = std::chrono::milliseconds(2000));

/// The layout the logs under `root` are in, nullopt when it holds none.
std::optional<acp::store::Generation> held_generation(const std::string& root);

/// The lock file guarding the existing log of `id`: `<id>.lock` beside a 45fc log, `dsh-acp.lock`
/// in a 0.1 session directory.
std::string lock_file_of(acp::store::SessionStore& store, const std::string& id);

acp::store::SessionHeader make_header(const std::string& id, std::optional<std::string> cwd = "/work/project",
                                      std::int64_t created_at = 1000);

/// Appends one complete prompt turn (turn/start, user/message, [title], step/start, 2 chunks,
/// assistant/message, step/end, turn/end completed) with fixed times starting at `time`.
void write_turn(acp::store::SessionWriter& w, const std::string& text, std::int64_t time = 5000);

/// Copies a fixture into a raw store under `dir` at the path its header dictates; returns the id. As
/// the 45fc harness wrote it, unless the root already holds 0.1 logs: then in the 0.1 layout and in
/// 0.1.1's shapes (what a 0.1.1 harness would have written).
std::string install_fixture(const TempDir& dir, const std::string& name);

/// Decompresses a whole zstd log into plaintext (test oracle via libzstd's simple API).
std::string zstd_plaintext(const std::string& file_bytes);

} // namespace store_test
