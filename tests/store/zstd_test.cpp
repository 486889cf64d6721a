// zstd-encoded logs (docs/store-format.md#encodings-and-zstd-framing): one checksummed frame per batch, the
// header alone in frame 1, torn final frames (partially recovered), and corruption inside complete frames.
#include "support.hpp"

#include "support/json_text.hpp"
#include "store/errors.hpp"
#include "store/event_builders.hpp"
#include "store/event_model.hpp"
#include "store/zstd_frames.hpp"

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <random>

using namespace acp::store;
using namespace store_test;
namespace json = boost::json;
using acp::support::to_json_text;

namespace {

std::string two_turn_zstd(const TempDir& dir) {
  auto store = open_store(dir, Encoding::zstd);
  auto w = store->create(make_header("z"));
  write_turn(w, "first prompt", 5000);
  write_turn(w, "second prompt", 6000);
  return w.path();
}

std::size_t event_count(const TempDir& dir) { return open_store(dir, std::nullopt)->read_log("z").events.size(); }

} // namespace

BOOST_AUTO_TEST_SUITE(zstd)

BOOST_AUTO_TEST_CASE(one_checksummed_frame_per_batch_header_alone_first) {
  TempDir dir;
  std::string path = two_turn_zstd(dir);
  BOOST_TEST(path.size() > 11u);
  BOOST_TEST(path.substr(path.size() - 11) == ".jsonl.zstd");
  std::string bytes = read_file(path);
  FrameScan scan = scan_frames(bytes);
  BOOST_TEST(scan.error.empty());
  BOOST_REQUIRE(scan.frames.size() == 7u);  // header + 3 batches per turn
  for (const auto& f : scan.frames) {
    BOOST_TEST(!f.torn);
    BOOST_TEST((static_cast<unsigned char>(bytes[f.offset + 4]) & 0x04) != 0);  // content checksum flag
  }
  std::string first;
  BOOST_TEST(decompress_frame(std::string_view(bytes).substr(0, scan.frames[0].size), first).empty());
  BOOST_TEST(first == R"({"type":"session","version":0,"id":"z","createdAt":1000,"cwd":"/work/project","delegationDepth":0})" "\n");
  // The plaintext is exactly what a raw log would hold: in a 45fc root the records as they are, in
  // a 0.1 root their 0.1.1 shapes, which read back as the same records.
  auto lines = split_lines(zstd_plaintext(bytes));
  BOOST_REQUIRE(lines.size() == 18u);
  auto store = open_store(dir, std::nullopt);
  auto log = store->read_log("z");
  BOOST_REQUIRE(log.events.size() == 17u);
  for (std::size_t i = 0; i < log.events.size(); ++i) {
    if (store->generation() == Generation::flat) {
      BOOST_TEST(to_json_text(log.events[i]) == lines[i + 1]);
    } else {
      json::object stored = json::parse(lines[i + 1]).as_object();
      normalise_event(stored);
      BOOST_TEST(to_json_text(stored) == to_json_text(log.events[i]));
    }
  }
}

BOOST_AUTO_TEST_CASE(torn_final_frame_at_several_offsets) {
  TempDir origin;
  const std::string path = two_turn_zstd(origin);
  const std::string full = read_file(path);
  const FrameSpan last = scan_frames(full).frames.back();
  const std::string rel = path.substr(origin.path().size());
  for (std::size_t cut : {std::size_t(1), std::size_t(3), std::size_t(4), std::size_t(5), std::size_t(7),
                          last.size / 2, last.size - 5, last.size - 4, last.size - 1}) {
    BOOST_TEST_CONTEXT("cut " << cut << " of " << last.size) {
      TempDir dir;
      const std::string p = dir.path() + rel;
      const std::string torn = full.substr(0, last.offset + cut);
      write_file(p, torn);
      // While the final block is incomplete nothing of the batch is recoverable; once only the
      // checksum is missing, the whole batch (ending with turn/end) is recovered.
      const bool block_complete = cut >= last.size - 4;
      const std::size_t seen = event_count(dir);
      BOOST_TEST(seen == (block_complete ? 17u : 14u));
      BOOST_TEST(read_file(p) == torn);  // readers never modify
      {
        auto store = open_store(dir, std::nullopt);
        auto w = store->open("z");
        BOOST_TEST(w.turn_open() == false);
        BOOST_TEST(w.next_seq() == (block_complete ? 17 : 16));  // 14 + step/end + turn/end interrupted
      }
      std::string repaired = read_file(p);
      FrameScan rs = scan_frames(repaired);
      BOOST_TEST(rs.error.empty());
      BOOST_TEST(!rs.frames.back().torn);
      BOOST_TEST(repaired.substr(0, last.offset) == full.substr(0, last.offset));  // committed frames untouched
      auto log = open_store(dir, std::nullopt)->read_log("z");
      if (block_complete) {
        BOOST_TEST(zstd_plaintext(repaired) == zstd_plaintext(full));
      } else {
        BOOST_REQUIRE(log.events.size() == 16u);
        BOOST_TEST(to_json_text(log.events[15]) ==
                   R"({"type":"turn/end","seq":15,"time":6001,"data":{"turn":2,"reason":{"kind":"interrupted"}}})");
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(torn_multi_block_frame_is_partially_recovered) {
  TempDir dir;
  std::string path;
  {
    auto store = open_store(dir, Encoding::zstd);
    auto w = store->create(make_header("z"));
    std::vector<NewEvent> open{events::turn_start(1), events::step_start(1, 1)};
    for (auto& e : open) e.time = 10;
    w.append(std::move(open));
    // ~320 KB of poorly compressible text: several 128 KB zstd blocks in one frame.
    std::mt19937 rng(7);
    std::vector<NewEvent> big;
    for (int i = 0; i < 40; ++i) {
      std::string text(8000, ' ');
      for (auto& c : text) c = char('a' + rng() % 26);
      big.push_back(events::text_delta(1, 1, 0, text));
      big.back().time = 20 + i;
    }
    w.append(std::move(big));
    path = w.path();
  }
  std::string full = read_file(path);
  FrameSpan last = scan_frames(full).frames.back();
  write_file(path, full.substr(0, last.offset + last.size - 1000));
  auto reader = open_store(dir, std::nullopt);
  const std::size_t seen = reader->read_log("z").events.size();
  BOOST_TEST(seen > 2u + 10u);   // complete blocks of the torn frame were recovered
  BOOST_TEST(seen < 2u + 40u);   // but not the lines of its cut final block
  {
    auto store = open_store(dir, std::nullopt);
    auto w = store->open("z");
    BOOST_TEST(w.next_seq() == std::int64_t(seen + 2));  // recovered events re-appended + step/end + turn/end
  }
  auto log = open_store(dir, std::nullopt)->read_log("z");
  BOOST_REQUIRE(log.events.size() == seen + 2);
  const auto& step_end = log.events[seen];
  const auto& turn_end = log.events[seen + 1];
  BOOST_TEST(to_json_text(step_end) == R"({"type":"step/end","seq":)" + std::to_string(seen) + R"(,"time":)" +
                                           std::to_string(20 + seen - 3) + R"(,"data":{"turn":1,"step":1}})");
  BOOST_TEST(turn_end.at("data").at("reason").at("kind").as_string() == "interrupted");
  BOOST_TEST(scan_frames(read_file(path)).frames.back().torn == false);
}

BOOST_AUTO_TEST_CASE(frames_larger_than_the_read_window_stream_correctly) {
  TempDir dir;
  std::mt19937 rng(11);
  auto random_text = [&](std::size_t n) {
    std::string t(n, ' ');
    for (auto& c : t) c = char('a' + rng() % 26);
    return t;
  };
  std::vector<std::string> texts;
  {
    auto store = open_store(dir, Encoding::zstd);
    auto w = store->create(make_header("z"));
    for (int batch = 0; batch < 6; ++batch) {
      std::vector<NewEvent> events;
      // Batch 2 is one ~2.4 MB frame (compressed > 1 MB window); the others are small.
      const int count = batch == 2 ? 300 : 3;
      for (int i = 0; i < count; ++i) {
        texts.push_back(random_text(8000));
        events.push_back(events::text_delta(1, 1, 0, texts.back()));
      }
      w.append(std::move(events));
    }
  }
  BOOST_TEST(read_file(*open_store(dir, std::nullopt)->find_log("z")).size() > (1u << 20));
  auto store = open_store(dir, std::nullopt);
  std::size_t i = 0;
  store->read_events("z", [&](json::object&& e) {
    BOOST_REQUIRE(i < texts.size());
    BOOST_TEST(e.at("seq").as_int64() == std::int64_t(i));
    BOOST_TEST(std::string(e.at("data").at("chunk").at("text").as_string()) == texts[i]);
    ++i;
  });
  BOOST_TEST(i == texts.size());
}

BOOST_AUTO_TEST_CASE(checksum_error_in_a_complete_frame_is_corruption) {
  TempDir dir;
  const std::string path = two_turn_zstd(dir);
  std::string bytes = read_file(path);
  FrameScan scan = scan_frames(bytes);
  const FrameSpan f = scan.frames[3];                     // a middle frame (turn 1's last batch)
  bytes[f.offset + f.size - 2] ^= 0x5A;                   // inside its 4-byte content checksum
  write_file(path, bytes);
  auto store = open_store(dir, std::nullopt);
  try {
    store->read_log("z");
    BOOST_FAIL("expected StoreCorrupt");
  } catch (const StoreCorrupt& e) {
    BOOST_TEST(e.file() == path);
    BOOST_TEST(e.line() == 8);  // the first line of the damaged frame
    BOOST_TEST(e.reason().find("zstd frame at byte " + std::to_string(f.offset)) == 0u);
  }
  BOOST_CHECK_THROW(store->open("z"), StoreCorrupt);
  BOOST_TEST(read_file(path) == bytes);
}

BOOST_AUTO_TEST_CASE(damaged_payload_of_a_complete_frame_is_corruption) {
  TempDir dir;
  const std::string path = two_turn_zstd(dir);
  std::string bytes = read_file(path);
  const FrameSpan f = scan_frames(bytes).frames[1];
  bytes[f.offset + f.size / 2] ^= 0x01;
  write_file(path, bytes);
  auto store = open_store(dir, std::nullopt);
  BOOST_CHECK_THROW(store->read_log("z"), StoreCorrupt);
  BOOST_CHECK_THROW(store->open("z"), StoreCorrupt);
  BOOST_TEST(read_file(path) == bytes);
}

BOOST_AUTO_TEST_CASE(bad_magic_and_oversized_first_frame_are_corruption) {
  {
    TempDir dir;
    const std::string path = two_turn_zstd(dir);
    append_file(path, "garbage-bytes");
    BOOST_CHECK_THROW(open_store(dir, std::nullopt)->read_log("z"), StoreCorrupt);
  }
  {
    TempDir dir;
    const std::string header = R"({"type":"session","version":0,"id":"z","createdAt":1,"delegationDepth":0})";
    write_file(dir.path() + "/root/_no-cwd/z.jsonl.zstd",
               compress_frame(header + "\n" + R"({"type":"turn/start","seq":0,"time":1,"data":{"turn":1}})" + "\n"));
    try {
      open_store(dir, std::nullopt)->read_log("z");
      BOOST_FAIL("expected StoreCorrupt");
    } catch (const StoreCorrupt& e) {
      BOOST_TEST(e.line() == 1);
      BOOST_TEST(e.reason() == "the first zstd frame must hold exactly the header line");
    }
  }
}

// The output buffer is sized by a frame's declared content size; a frame that lies about it must
// yield exactly what it would without the declaration: an error naming the damage, not our buffer.
BOOST_AUTO_TEST_CASE(declared_content_size_never_changes_what_a_frame_yields) {
  std::string plain;
  for (int i = 0; plain.size() < 200; ++i) plain += "word" + std::to_string(i % 7) + ' ';
  plain.resize(200);
  plain.back() = '\n';
  const std::string frame = compress_frame(plain);
  const auto fhd = static_cast<unsigned char>(frame[4]);
  // Single segment, one-byte content size right after the descriptor, no dictionary id.
  BOOST_REQUIRE((fhd >> 6) == 0);
  BOOST_REQUIRE(((fhd >> 5) & 1) == 1);
  BOOST_REQUIRE((fhd & 3) == 0);
  BOOST_REQUIRE(static_cast<unsigned char>(frame[5]) == plain.size());
  std::string out = "kept|";
  BOOST_TEST(decompress_frame(frame, out).empty());
  BOOST_TEST(out == "kept|" + plain);
  for (int declared : {0, 1, 100, 199, 201, 255}) {
    BOOST_TEST_CONTEXT("declared " << declared) {
      std::string lying = frame;
      lying[5] = static_cast<char>(declared);
      std::string got = "kept|";
      const std::string err = decompress_frame(lying, got);
      BOOST_TEST(!err.empty());
      BOOST_TEST(err.find("Destination buffer") == std::string::npos, err);
      BOOST_TEST(got.rfind("kept|", 0) == 0u);
    }
  }
}

// A damaged frame reports the same error whatever this thread decoded before (the store fuzz
// target found "Data corruption detected" on one read and "Destination buffer is too small" on the
// next: libzstd's answer for an oversized block depended on buffers a reused context kept).
BOOST_AUTO_TEST_CASE(a_damaged_frames_error_does_not_depend_on_earlier_frames) {
  // Magic, no content size, a 16 KiB window, one last RLE block claiming 822,988 bytes.
  const std::string damaged("\x28\xb5\x2f\xfd\x00\x22\x63\x77\x64\x22", 10);
  std::string big;
  for (unsigned i = 0; big.size() < (4u << 20); ++i) big += "line " + std::to_string(i * 7919u % 100003u) + "\n";
  const std::string big_frame = compress_frame(big);
  std::vector<std::string> errors;
  for (int round = 0; round < 3; ++round) {
    if (round == 1) {
      std::string plain;
      BOOST_REQUIRE(decompress_frame(big_frame, plain).empty());
    }
    if (round == 2) {
      std::string plain;
      BOOST_REQUIRE(decompress_frame(compress_frame("x\n"), plain).empty());
    }
    std::string out;
    errors.push_back(decompress_frame(damaged, out));
    BOOST_TEST(!errors.back().empty());
    std::string partial;
    decompress_partial(damaged, partial);
    BOOST_TEST(partial.empty());
  }
  BOOST_TEST(errors[1] == errors[0]);
  BOOST_TEST(errors[2] == errors[0]);
}

BOOST_AUTO_TEST_CASE(frame_scanner_rejects_reserved_bits_and_block_types) {
  std::string frame = compress_frame("hello\n");
  std::string reserved = frame;
  reserved[4] = char(static_cast<unsigned char>(reserved[4]) | 0x08);
  BOOST_TEST(!scan_frames(reserved).error.empty());
  FrameScan ok = scan_frames(frame + frame);
  BOOST_TEST(ok.frames.size() == 2u);
  BOOST_TEST(ok.error.empty());
  FrameScan torn = scan_frames(frame + frame.substr(0, 6));
  BOOST_REQUIRE(torn.frames.size() == 2u);
  BOOST_TEST(torn.frames[1].torn);
  BOOST_TEST(scan_frames(frame + "\x28\xB5").frames.back().torn);  // a magic cut short is torn, not garbage
}

BOOST_AUTO_TEST_SUITE_END()
