#include "store/chunk_lines.hpp"

#include "store/errors.hpp"
#include "store/file_io.hpp"
#include "store/records.hpp"

#include <boost/json/serializer.hpp>

#include <charconv>

namespace acp::store {

namespace json = boost::json;

namespace {

// What a byte becomes inside a string literal: 0 itself, 'u' \u00xx, else the letter after '\'.
constexpr char escape_of(unsigned char c) {
  switch (c) {
  case '"': return '"';
  case '\\': return '\\';
  case '\b': return 'b';
  case '\t': return 't';
  case '\n': return 'n';
  case '\f': return 'f';
  case '\r': return 'r';
  default: return c < 0x20 ? 'u' : 0;
  }
}

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

} // namespace

void append_json_string_literal(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  std::size_t run = 0;  // start of the bytes not yet copied
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char e = escape_of(static_cast<unsigned char>(text[i]));
    if (!e) continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    const char esc[6] = {'\\', e, '0', '0', hex[(text[i] >> 4) & 0xf], hex[text[i] & 0xf]};
    out.append(esc, e == 'u' ? 6 : 2);
  }
  out.append(text.data() + run, text.size() - run);
  out += '"';
}

void append_delta_line(std::string& out, std::int64_t seq, std::int64_t time, std::int64_t turn, std::int64_t step,
                       std::string_view kind, std::int64_t index, std::string_view text) {
  out += R"({"type":"assistant/chunk","seq":)";
  append_int(out, seq);
  out += R"(,"time":)";
  append_int(out, time);
  out += R"(,"data":{"turn":)";
  append_int(out, turn);
  out += R"(,"step":)";
  append_int(out, step);
  out += R"(,"chunk":{"type":)";
  append_json_string_literal(out, kind);
  out += R"(,"index":)";
  append_int(out, index);
  out += R"(,"text":)";
  append_json_string_literal(out, text);
  out += "}}}";
}

void ChunkLines::add_delta(std::int64_t turn, std::int64_t step, std::string_view kind, std::int64_t index,
                           std::string_view text) {
  last_time_ = now_ms();
  append_delta_line(text_, next_seq_++, last_time_, turn, step, kind, index, text);
  text_ += '\n';
}

void ChunkLines::add_event(NewEvent event) {
  // Only these leave the log's state as observe_plain() assumes (nothing but count and time).
  if (event.type != "assistant/chunk" || event.surfaceOp || event.sourceEventSeqs || event.ignorable)
    throw InvalidBatch("a chunk batch takes plain assistant/chunk events only, not " + event.type);
  last_time_ = event.time.value_or(now_ms());
  const json::object record =
      event_record(event.type, next_seq_++, last_time_, std::move(event.data), std::nullopt, std::nullopt);
  json::serializer sr;
  sr.reset(&record);
  char buf[4096];
  while (!sr.done()) text_.append(sr.read(buf, sizeof buf));
  text_ += '\n';
}

} // namespace acp::store
