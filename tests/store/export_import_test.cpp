// The file backend's export_lines / import_lines (`dsh-acp store copy`, issue 17): verbatim lines
// out and in, byte-identical round trips in both generations, zstd roots by their plaintext,
// resumed imports, and the batches a root refuses.
#include "support.hpp"

#include "store/errors.hpp"
#include "store/open_backend.hpp"
#include "store/session_writer.hpp"

#include <boost/test/unit_test.hpp>

using namespace acp::store;
using namespace store_test;

namespace {

std::unique_ptr<SessionStore> root_at(const std::string& root, Generation g, std::optional<Encoding> enc) {
  StoreOptions o;
  o.root = root;
  o.encoding = enc;
  o.generation = g;
  return std::make_unique<SessionStore>(o);
}

struct Exported {
  std::string header;
  std::vector<std::string> lines;
  Generation generation = Generation::flat;
  std::string text() const {
    std::string t = header + "\n";
    for (const auto& l : lines) t += l + "\n";
    return t;
  }
};

Exported export_all(Backend& b, const std::string& id, std::int64_t from_seq = 0) {
  Exported e;
  e.generation = b.export_lines(
      id, [&](std::string_view h) { e.header = std::string(h); },
      [&](std::string_view l) { e.lines.emplace_back(l); }, from_seq);
  return e;
}

// The plaintext of a log file of either encoding.
std::string plaintext(const std::string& path) {
  std::string bytes = read_file(path);
  return path.ends_with(".zstd") ? zstd_plaintext(bytes) : bytes;
}

// A session with three turns (two of them titled), written by the store itself.
std::string write_session(SessionStore& s, const std::string& id) {
  SessionWriter w = s.create(make_header(id));
  write_turn(w, "first", 5000);
  write_turn(w, "second", 6000);
  write_turn(w, "third", 7000);
  w.release();
  return id;
}

// Copies `id` from `from` into `to` in batches of `per_batch` lines, through fresh exports.
void copy_in_batches(Backend& from, Backend& to, const std::string& id, std::size_t per_batch) {
  Exported e = export_all(from, id);
  std::int64_t seq = 0;
  std::size_t i = 0;
  do {
    std::vector<std::string> batch;
    for (; i < e.lines.size() && batch.size() < per_batch; ++i) batch.push_back(e.lines[i]);
    to.import_lines(id, e.generation, e.header, seq, batch);
    for (const auto& l : batch) seq += line_seqs(l)->second;
  } while (i < e.lines.size());
}

} // namespace

BOOST_AUTO_TEST_SUITE(export_import)

BOOST_AUTO_TEST_CASE(raw_45fc_round_trip_is_byte_identical) {
  TempDir a, b, c;
  auto src = root_at(a / "root", Generation::flat, Encoding::none);
  write_session(*src, "s1");
  const std::string fixture = install_fixture(a, "packed-chunks");  // packed chunk rows stay rows
  auto src2 = root_at(a / "root", Generation::flat, Encoding::none);
  auto mid = root_at(b / "root", Generation::flat, Encoding::none);
  auto back = root_at(c / "root", Generation::flat, Encoding::none);
  for (const std::string id : {"s1", fixture.c_str()}) {
    copy_in_batches(*src2, *mid, id, 3);
    copy_in_batches(*mid, *back, id, 1000);
    const std::string original = read_file(*src2->find_log(id));
    BOOST_TEST(read_file(*mid->find_log(id)) == original);
    BOOST_TEST(read_file(*back->find_log(id)) == original);
    BOOST_TEST(*mid->find_log(id) == (b / "root") + src2->find_log(id)->substr((a / "root").size()));
  }
  // The copy is a session like any other: readable, listed with its title.
  BOOST_TEST(mid->read_log("s1").events.size() == src2->read_log("s1").events.size());
  auto rows = mid->list_sessions();
  BOOST_TEST(rows.size() == 2u);
}

BOOST_AUTO_TEST_CASE(raw_0_1_round_trip_is_byte_identical) {
  TempDir a, b;
  auto src = root_at(a / "root", Generation::project_dirs, Encoding::none);
  write_session(*src, "v01");
  const std::string fixture = install_fixture(a, "multi-turn");  // 0.1.1 shapes
  auto dst = root_at(b / "root", Generation::project_dirs, Encoding::none);
  for (const std::string id : {"v01", fixture.c_str()}) {
    copy_in_batches(*src, *dst, id, 2);
    BOOST_TEST(read_file(*dst->find_log(id)) == read_file(*src->find_log(id)));
    BOOST_TEST((export_all(*dst, id).generation == Generation::project_dirs));
  }
}

BOOST_AUTO_TEST_CASE(zstd_roots_keep_the_plaintext) {
  TempDir a, b, c;
  auto raw = root_at(a / "root", Generation::flat, Encoding::none);
  write_session(*raw, "z");
  auto z = root_at(b / "root", Generation::flat, Encoding::zstd);
  copy_in_batches(*raw, *z, "z", 4);
  const std::string zpath = *z->find_log("z");
  BOOST_TEST(zpath.ends_with(".jsonl.zstd"));
  BOOST_TEST(plaintext(zpath) == read_file(*raw->find_log("z")));
  // zstd out again into a raw root: the same bytes as the original.
  auto raw2 = root_at(c / "root", Generation::flat, Encoding::none);
  copy_in_batches(*z, *raw2, "z", 1000);
  BOOST_TEST(read_file(*raw2->find_log("z")) == read_file(*raw->find_log("z")));
  BOOST_TEST(z->read_log("z").events.size() == raw->read_log("z").events.size());
}

BOOST_AUTO_TEST_CASE(export_from_a_seq_gives_the_tail) {
  TempDir a;
  auto s = root_at(a / "root", Generation::flat, Encoding::none);
  write_session(*s, "t");
  Exported all = export_all(*s, "t");
  Exported tail = export_all(*s, "t", 5);
  BOOST_TEST(tail.header == all.header);
  BOOST_TEST_REQUIRE(tail.lines.size() == all.lines.size() - 5);
  BOOST_TEST(tail.lines.front() == all.lines[5]);
  BOOST_TEST(export_all(*s, "t", 1000).lines.empty());
  BOOST_CHECK_THROW(export_all(*s, "nope"), SessionNotFound);
}

BOOST_AUTO_TEST_CASE(export_refuses_to_split_a_packed_row) {
  TempDir a;
  const std::string id = install_fixture(a, "packed-chunks");
  auto s = root_at(a / "root", Generation::flat, Encoding::none);
  Exported all = export_all(*s, id);
  std::int64_t seq = 0;
  std::optional<std::int64_t> inside;
  for (const auto& l : all.lines) {
    auto seqs = *line_seqs(l);
    if (seqs.second > 1) inside = seq + 1;
    seq += seqs.second;
  }
  BOOST_TEST_REQUIRE(inside.has_value());
  BOOST_CHECK_THROW(export_all(*s, id, *inside), StoreError);
}

BOOST_AUTO_TEST_CASE(an_import_is_resumed_from_the_count_even_inside_a_turn) {
  TempDir a, b;
  auto src = root_at(a / "root", Generation::flat, Encoding::zstd);
  write_session(*src, "r");
  Exported e = export_all(*src, "r");
  // The first batch ends inside the second turn: nothing may close it.
  const std::vector<std::string> first(e.lines.begin(), e.lines.begin() + 12);
  const std::vector<std::string> rest(e.lines.begin() + 12, e.lines.end());
  {
    auto dst = root_at(b / "root", Generation::flat, Encoding::zstd);
    dst->import_lines("r", e.generation, e.header, 0, first);
    BOOST_CHECK_THROW(dst->import_lines("r", e.generation, e.header, 0, first), SessionExists);
  }
  // Another process (a fresh store) continues: the wrong count is refused, the right one taken.
  auto dst = root_at(b / "root", Generation::flat, Encoding::zstd);
  BOOST_CHECK_THROW(dst->import_lines("r", e.generation, e.header, 11, rest), InvalidBatch);
  BOOST_CHECK_THROW(dst->import_lines("r", e.generation, e.header, 13, rest), InvalidBatch);
  dst->import_lines("r", e.generation, e.header, 12, rest);
  BOOST_TEST(plaintext(*dst->find_log("r")) == plaintext(*src->find_log("r")));
  // A writer opening it now finds it whole (no turn left open, nothing repaired).
  SessionWriter w = dst->open("r");
  BOOST_TEST(w.next_seq() == std::int64_t(e.lines.size()));
  BOOST_TEST(!w.turn_open());
}

BOOST_AUTO_TEST_CASE(a_torn_tail_left_by_a_killed_copy_is_cut) {
  TempDir a, b;
  auto src = root_at(a / "root", Generation::flat, Encoding::none);
  write_session(*src, "k");
  Exported e = export_all(*src, "k");
  auto dst = root_at(b / "root", Generation::flat, Encoding::none);
  dst->import_lines("k", e.generation, e.header, 0, {e.lines.begin(), e.lines.begin() + 4});
  append_file(*dst->find_log("k"), e.lines[4].substr(0, 10));  // half a line: the kill
  auto again = root_at(b / "root", Generation::flat, Encoding::none);
  again->import_lines("k", e.generation, e.header, 4, {e.lines.begin() + 4, e.lines.end()});
  BOOST_TEST(read_file(*again->find_log("k")) == read_file(*src->find_log("k")));
}

BOOST_AUTO_TEST_CASE(a_root_refuses_lines_of_the_other_generation) {
  TempDir a, b;
  auto v01 = root_at(a / "root", Generation::project_dirs, Encoding::none);
  write_session(*v01, "g");
  auto flat = root_at(b / "root", Generation::flat, Encoding::none);
  write_session(*flat, "other");  // a root that holds 45fc logs stays 45fc
  Exported e = export_all(*v01, "g");
  BOOST_TEST((e.generation == Generation::project_dirs));
  try {
    flat->import_lines("g", e.generation, e.header, 0, e.lines);
    BOOST_FAIL("a 45fc root took 0.1 lines");
  } catch (const StoreError& err) {
    BOOST_TEST(std::string(err.what()).find("cannot copy a 0.1 session into a 45fc root") != std::string::npos);
  }
  Exported f = export_all(*flat, "other");
  BOOST_CHECK_EXCEPTION(v01->import_lines("other", f.generation, f.header, 0, f.lines), StoreError,
                        [](const StoreError& err) {
                          return std::string(err.what()).find("cannot copy a 45fc session into a 0.1 root") !=
                                 std::string::npos;
                        });
  BOOST_TEST(!flat->exists("g"));
  BOOST_TEST(!v01->exists("other"));
}

BOOST_AUTO_TEST_CASE(bad_batches_are_refused_whole) {
  TempDir a, b;
  auto src = root_at(a / "root", Generation::flat, Encoding::none);
  write_session(*src, "b");
  Exported e = export_all(*src, "b");
  auto dst = root_at(b / "root", Generation::flat, Encoding::none);
  auto with = [&](std::size_t at, std::string line) {
    std::vector<std::string> lines(e.lines.begin(), e.lines.begin() + 6);
    lines[at] = std::move(line);
    return lines;
  };
  // A seq gap, a line that is not JSON, a record without a seq, a line break inside a line.
  BOOST_CHECK_THROW(dst->import_lines("b", e.generation, e.header, 0, with(3, e.lines[4])), InvalidBatch);
  BOOST_CHECK_THROW(dst->import_lines("b", e.generation, e.header, 0, with(2, "{\"type\":")), InvalidBatch);
  BOOST_CHECK_THROW(dst->import_lines("b", e.generation, e.header, 0, with(2, R"({"type":"x","time":1})")),
                    InvalidBatch);
  BOOST_CHECK_THROW(dst->import_lines("b", e.generation, e.header, 0, with(2, e.lines[2] + "\n" + e.lines[3])),
                    InvalidBatch);
  // A header that is not one, or names another session.
  BOOST_CHECK_THROW(dst->import_lines("b", e.generation, R"({"type":"session"})", 0, {}), InvalidBatch);
  BOOST_CHECK_THROW(dst->import_lines("c", e.generation, e.header, 0, {}), InvalidBatch);
  BOOST_TEST(!dst->exists("b"));
  BOOST_TEST(!dst->exists("c"));
  // Continuing a session that is not there.
  BOOST_CHECK_THROW(dst->import_lines("b", e.generation, e.header, 3, {e.lines[3]}), SessionNotFound);
  // After the refusals the good batch goes in, and a bad continuation leaves it as it was.
  dst->import_lines("b", e.generation, e.header, 0, {e.lines.begin(), e.lines.begin() + 6});
  const std::string before = read_file(*dst->find_log("b"));
  BOOST_CHECK_THROW(dst->import_lines("b", e.generation, e.header, 6, {e.lines[6], e.lines[8]}), InvalidBatch);
  BOOST_TEST(read_file(*dst->find_log("b")) == before);
}

// The words of store/import_check.cpp, which every backend refuses an import with (the PostgreSQL
// suite compares the two backends' refusals).
BOOST_AUTO_TEST_CASE(a_refused_import_names_the_session_the_line_and_why) {
  TempDir a, b;
  auto src = root_at(a / "root", Generation::flat, Encoding::none);
  write_session(*src, "b");
  Exported e = export_all(*src, "b");
  auto dst = root_at(b / "root", Generation::flat, Encoding::none);
  auto refusal = [&](const std::string& id, const std::string& header, std::int64_t first_seq,
                     const std::vector<std::string>& lines) {
    try {
      dst->import_lines(id, e.generation, header, first_seq, lines);
    } catch (const InvalidBatch& err) {
      return std::string(err.what());
    }
    return std::string("taken");
  };
  std::vector<std::string> gap(e.lines.begin(), e.lines.begin() + 3);
  gap.push_back(e.lines[4]);
  BOOST_TEST(refusal("b", e.header, 0, gap) ==
             R"(session "b": imported lines, line 4: event seq 4 is not contiguous; expected 3)");
  BOOST_TEST(refusal("b", e.header, 0, {e.lines[0] + "\n" + e.lines[1]}) ==
             R"(session "b": imported lines, line 1: holds a line break)");
  BOOST_TEST(refusal("c", e.header, 0, {}) == R"(session "c": the imported header line names session "b")");
  BOOST_TEST(refusal("b", e.header, -2, {}) == R"(session "b": the imported lines start at seq -2, which is negative)");
  dst->import_lines("b", e.generation, e.header, 0, {e.lines.begin(), e.lines.begin() + 3});
  BOOST_TEST(refusal("b", e.header, 2, {e.lines[2]}) ==
             R"(session "b" holds 3 events; the imported lines start at seq 2)");
}

BOOST_AUTO_TEST_CASE(a_header_only_session_is_copied) {
  TempDir a, b;
  auto src = root_at(a / "root", Generation::flat, Encoding::zstd);
  {
    SessionWriter w = src->create(make_header("empty"));
    w.append({}, true);  // publishes the header alone
  }
  BOOST_TEST_REQUIRE(src->exists("empty"));
  auto dst = root_at(b / "root", Generation::flat, Encoding::zstd);
  copy_in_batches(*src, *dst, "empty", 10);
  BOOST_TEST(plaintext(*dst->find_log("empty")) == plaintext(*src->find_log("empty")));
}

BOOST_AUTO_TEST_SUITE_END()
