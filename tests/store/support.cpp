#include "support.hpp"

#include "support/json_text.hpp"
#include "store/event_builders.hpp"
#include "store/event_model.hpp"
#include "store/layout.hpp"

#include <boost/json.hpp>

#include <zstd.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace store_test {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace acp::store;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes, unsigned mode) {
  fs::create_directories(fs::path(path).parent_path());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  ::chmod(path.c_str(), mode);
}

void append_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << bytes;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (std::size_t nl; (nl = text.find('\n', pos)) != std::string::npos; pos = nl + 1) out.push_back(text.substr(pos, nl - pos));
  return out;
}

unsigned file_mode(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) throw std::runtime_error("lstat " + path);
  return st.st_mode & 0777;
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string fixture_path(const std::string& name) {
  return std::string(DSH_TEST_DATA) + "/fixtures/harness/" + name + ".session.jsonl";
}

Generation default_generation() {
  const char* env = std::getenv("DSH_ACP_STORE_GENERATION");
  return env && *env ? parse_generation(env).value_or(Generation::flat) : Generation::flat;
}

std::unique_ptr<SessionStore> open_store(const TempDir& dir, std::optional<Encoding> enc,
                                         std::chrono::milliseconds lock_timeout) {
  return open_store(dir, enc, default_generation(), lock_timeout);
}

std::unique_ptr<SessionStore> open_store(const TempDir& dir, std::optional<Encoding> enc, Generation new_root,
                                         std::chrono::milliseconds lock_timeout) {
  StoreOptions o;
  o.root = dir / "root";
  o.encoding = enc;
  o.default_generation = new_root;
  o.cache_dir = dir / "cache";
  o.lock_timeout = lock_timeout;
  return std::make_unique<SessionStore>(o);
}

std::optional<Generation> held_generation(const std::string& root) {
  std::error_code ec;
  std::optional<Generation> held;
  for (auto& b : fs::directory_iterator(root, ec)) {
    if (!b.is_directory()) continue;
    for (auto& e : fs::directory_iterator(b.path(), ec)) {
      if (e.is_directory() && (path_exists(e.path().string() + "/session.jsonl") ||
                               path_exists(e.path().string() + "/session.jsonl.zstd")))
        return Generation::project_dirs;
      const std::string n = e.path().filename().string();
      if (e.is_regular_file() && (n.ends_with(".jsonl") || n.ends_with(".jsonl.zstd"))) held = Generation::flat;
    }
  }
  return held;
}

std::string lock_file_of(SessionStore& store, const std::string& id) {
  const std::string log = *store.find_log(id);
  const std::string dir = log.substr(0, log.rfind('/'));
  return dir + "/" + (store.generation() == Generation::project_dirs ? std::string(kV01LockName) : lock_file_name(id));
}

SessionHeader make_header(const std::string& id, std::optional<std::string> cwd, std::int64_t created_at) {
  SessionHeader h;
  h.id = id;
  h.cwd = std::move(cwd);
  h.createdAt = created_at;
  return h;
}

void write_turn(SessionWriter& w, const std::string& text, std::int64_t time) {
  const std::int64_t turn = w.last_turn() + 1;
  std::vector<NewEvent> first{events::turn_start(turn), events::user_message(text)};
  const std::int64_t user_seq = w.next_seq() + 1;
  if (!w.title()) first.push_back(events::session_title(events::fallback_title(text), user_seq));
  first.push_back(events::step_start(turn, 1));
  for (auto& e : first) e.time = time;
  w.append(std::move(first));
  std::vector<NewEvent> chunks{events::text_delta(turn, 1, 0, "Hello"), events::text_delta(turn, 1, 0, " there")};
  for (auto& e : chunks) e.time = time + 1;
  const std::int64_t c0 = w.next_seq();
  w.append(std::move(chunks));
  json::object block;
  block["type"] = "text";
  block["text"] = "Hello there";
  std::vector<NewEvent> last{
      events::assistant_message(turn, 1, json::array{block}, "echo", "echo-1", std::nullopt, json::array{c0, c0 + 1}),
      events::step_end(turn, 1), events::turn_end(turn, events::reason("completed"))};
  for (auto& e : last) e.time = time + 2;
  w.append(std::move(last), true);
}

std::string install_fixture(const TempDir& dir, const std::string& name) {
  std::string text = read_file(fixture_path(name));
  std::string first = text.substr(0, text.find('\n'));
  json::value v = json::parse(first);
  const auto& o = v.as_object();
  std::string id(o.at("id").as_string());
  std::optional<std::string> cwd;
  if (auto c = o.if_contains("cwd")) cwd = std::string(c->as_string());
  if (held_generation(dir / "root") != Generation::project_dirs) {
    // As the 45fc harness wrote it (a root without logs then is a 45fc root).
    write_file(dir.path() + "/root/" + bucket_name(cwd) + "/" + encode_segment(id) + ".jsonl", text);
    return id;
  }
  // A 0.1 root: the log another (0.1.1) harness would have written, in its layout and shapes.
  std::string out = first + "\n", compaction_id;
  for (const auto& line : split_lines(text.substr(first.size() + 1))) {
    json::object e = json::parse(line).as_object();
    assign_v01_ids(e, compaction_id);
    auto shaped = to_v01_record(e);
    out += acp::support::to_json_text(shaped ? json::value(std::move(*shaped)) : json::value(std::move(e))) + "\n";
  }
  write_file(dir.path() + "/root/" + session_dir(Generation::project_dirs, cwd, id) + "/" + v01_log_name(Encoding::none), out);
  return id;
}

std::string zstd_plaintext(const std::string& bytes) {
  std::string out;
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
  std::string buf(1 << 16, '\0');
  while (in.pos < in.size) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    std::size_t r = ZSTD_decompressStream(d, &o, &in);
    if (ZSTD_isError(r)) {
      ZSTD_freeDCtx(d);
      throw std::runtime_error(ZSTD_getErrorName(r));
    }
    out.append(buf.data(), o.pos);
  }
  ZSTD_freeDCtx(d);
  return out;
}

} // namespace store_test
