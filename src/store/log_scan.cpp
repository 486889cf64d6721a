#include "store/log_scan.hpp"

#include "support/json_text.hpp"
#include "store/chunk_rows.hpp"
#include "store/errors.hpp"
#include "store/event_model.hpp"
#include "store/line_text.hpp"
#include "store/log_source.hpp"
#include "store/records.hpp"

#include <boost/json/monotonic_resource.hpp>

#include <algorithm>
#include <optional>

namespace acp::store {

namespace json = boost::json;

namespace {

// A line buffer at least this big is freed once its line is parsed (see PlainLine::storage).
constexpr std::size_t kReleaseLineBytes = 1u << 20;
// A line's arena starts at twice its text (the tree of a small line is a few times its size) up to
// this; a bigger line's strings get blocks of their own, so a huge message is not held twice.
constexpr std::size_t kArenaFirstBlock = 64u << 10;

// Reason a preserved event makes the whole log unreadable (formats the harness rejects on load).
std::string legacy_reason(const json::object& e) {
  auto type = string_member(e, 0, "type");
  if (type == "request/header-delta") return "legacy request/header-delta event is not supported";
  if (type == "mode/set") return "legacy mode/set event is not supported";
  if (type == "request/header") {
    if (auto d = object_at(e, "data"); d && string_at(*d, "reason") == "fallback")
      return "legacy request/header reason \"fallback\" is not supported";
  }
  return {};
}

} // namespace

void LineWalker::line(const PlainLine& l) {
  if (l.number == 1) return header(l);
  // The decoded events, moved-from or not, still hold their line's arena: let it go as soon as
  // the line is handled, not when the next line has been parsed beside it.
  struct Release {
    LineWalker& w;
    ~Release() {
      w.kept_.clear();
      w.transient_.clear();
    }
  } release{*this};
  const bool transient = lifetime_ == EventLifetime::transient;
  boost::system::error_code ec;
  // For a transient sink each line's events live in an arena of their own: the parse allocates
  // a few blocks instead of one node per member, and the event's death frees them at once
  // (allocating and freeing nodes were a quarter of a session/load's instructions). The arena is
  // reference counted: whatever keeps an event, or a copy of part of one, keeps that line's arena
  // alive, never a dangling one. Sinks that keep events get exact-size nodes instead.
  json::storage_ptr storage;
  if (transient)
    storage = json::make_shared_resource<json::monotonic_resource>(
        std::min<std::size_t>(l.text.size() * 2 + 512, kArenaFirstBlock));
  bool replaced = false;
  std::optional<json::value> v = parse_stored_line(l.text, ec, &replaced, nullptr, std::move(storage));
  if (replaced) note_replaced_text(path_, l.number);
  if (l.storage && l.storage->capacity() >= kReleaseLineBytes) std::string().swap(*l.storage);
  std::string bad;
  bool decoded_ok = false;
  LineDecode decoded = LineDecode::malformed;
  if (!ec) decoded = transient ? transient_.decode(std::move(*v)) : decode_storage_line(std::move(*v), kept_);
  v.reset();  // moved-from, but still holding the arena
  const std::size_t count = transient ? transient_.size() : kept_.size();
  auto event = [&](std::size_t k) -> json::object& { return transient ? transient_.event(k) : kept_[k]; };
  if (ec) {
    bad = "unparsable line (" + ec.message() + ")";
  } else if (decoded == LineDecode::malformed) {
    bad = "unparsable line (malformed record)";
  } else {
    decoded_ok = true;
    if (!suspended_) {
      const json::value* seq = member_at(event(0), 1, "seq");
      auto seq_i = seq ? safe_int(*seq) : std::nullopt;
      if (!seq_i || *seq_i != out_.state.count())
        bad = "event seq " + (seq ? support::to_json_text(*seq) : std::string("(missing)")) +
              " is not contiguous; expected " + std::to_string(out_.state.count());
    }
  }
  // A packed row holds chunks only.
  bool has_turn_end = false;
  if (decoded_ok && decoded != LineDecode::row)
    for (std::size_t k = 0; k < count; ++k) has_turn_end |= string_member(event(k), 0, "type") == "turn/end";

  if (!bad.empty()) {
    if (l.strict) throw StoreCorrupt(path_, l.number, bad);
    if (!suspended_) {
      suspended_ = true;
      bad_line_ = l.number;
      bad_reason_ = bad;
    }
  }
  if (suspended_) {
    // A turn/end after damage proves the damage is inside finished history.
    if (has_turn_end) throw StoreCorrupt(path_, bad_line_, bad_reason_);
    return;
  }
  for (std::size_t k = 0; k < count; ++k) {
    json::object& e = event(k);
    if (auto why = legacy_reason(e); !why.empty()) throw StoreCorrupt(path_, l.number, why);
    // Repair writes recovered records back as they were, in their generation's shape.
    if (l.torn_frame) out_.recovered.push_back(e);
    if (normalise_event(e)) note_unknown_event_type(string_at(e, "type"), path_);
    out_.state.observe(e);
    if (sink_) sink_(std::move(e));
  }
  committed_end_ = l.file_end;
}

void LineWalker::header(const PlainLine& l) {
  boost::system::error_code ec;
  bool replaced = false;
  json::value v = parse_stored_line(l.text, ec, &replaced);
  if (replaced) note_replaced_text(path_, l.number);
  std::optional<SessionHeader> h;
  if (!ec) h = parse_header(v);
  if (!h) throw StoreCorrupt(path_, 1, "invalid session header");
  if (has_retired_header_keys(v.as_object()))
    throw StoreCorrupt(path_, 1, "session header uses retired policy baseline fields (sandboxMode/approvalPolicy)");
  if (h->version != kSessionFormatVersion)
    throw StoreCorrupt(path_, 1,
                       "unsupported session format version " + support::to_json_text(v.as_object().at("version")));
  out_.header = std::move(*h);
  committed_end_ = l.file_end;
}

ScanResult scan_log(int fd, const std::string& path, Encoding enc, const EventSink& sink, std::stop_token stop,
                    EventLifetime lifetime) {
  ScanResult out;
  LineWalker walker(path, sink, out, lifetime);
  SourceTail tail = read_log_lines(fd, path, enc, [&](const PlainLine& l) {
    if (stop.stop_requested()) throw ReadCancelled();
    walker.line(l);
  });
  // zstd: the header frame itself torn means the log was never published whole.
  if (tail.lines == 0 || (enc == Encoding::zstd && tail.complete_bytes == 0))
    throw StoreCorrupt(path, 1, "empty or header-less session log");
  out.file_size = tail.file_size;
  if (enc == Encoding::zstd) {
    out.committed_bytes = tail.complete_bytes;
    out.torn = tail.torn;
  } else {
    out.committed_bytes = walker.committed_end();
    out.torn = out.committed_bytes < out.file_size;
  }
  return out;
}

} // namespace acp::store
