// Fuzz target `sse`: a provider's response body → SseParser → ChatStreamDecoder, as the OpenAI
// provider consumes a stream, plus the error-body and Retry-After parsing of a failed response.
// Byte 0 seeds how the body is split into reads. Property: the items do not depend on the split.
#include "fuzz_support.hpp"

#include "llm/openai/chat_stream.hpp"
#include "llm/openai/error_mapping.hpp"
#include "net/sse_parser.hpp"

#include <random>
#include <stdexcept>
#include <string>

namespace {

using namespace acp;

bool parse(std::string_view body, const std::vector<std::size_t>* pieces, std::vector<net::SseItem>& items, bool& partial) {
  net::SseParser parser;
  try {
    if (pieces) {
      for (std::size_t n : *pieces) {
        parser.feed(body.substr(0, n), items);
        body.remove_prefix(n);
      }
    } else {
      parser.feed(body, items);
    }
  } catch (const std::length_error&) {
    return false;
  }
  partial = parser.has_partial();
  return true;
}

bool same(const std::vector<net::SseItem>& a, const std::vector<net::SseItem>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].kind != b[i].kind || a[i].data != b[i].data || a[i].event != b[i].event) return false;
  return true;
}

void decode(const std::vector<net::SseItem>& items) {
  llm::ChatStreamDecoder decoder;
  std::vector<llm::Delta> deltas;
  for (const auto& item : items) {
    if (item.kind == net::SseItemKind::done) break;
    if (item.kind != net::SseItemKind::event) continue;
    try {
      decoder.on_data(item.data, deltas);
    } catch (const llm::ProviderError& e) {
      (void)e.code();
      break;  // the provider fails the turn at the first bad chunk
    }
  }
  for (const auto& d : deltas)
    if (d.text.empty()) dsh_fuzz::violated("an empty delta was emitted");
  (void)decoder.stop();
  (void)decoder.served_model();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);

  std::vector<net::SseItem> whole, split;
  bool whole_partial = false, split_partial = false;
  bool ok = parse(body, nullptr, whole, whole_partial);
  auto pieces = dsh_fuzz::piece_sizes(body.size(), data[0]);
  bool ok_split = parse(body, &pieces, split, split_partial);
  if (ok != ok_split) dsh_fuzz::violated("SseParser limits depend on how the body is split");
  if (ok && (!same(whole, split) || whole_partial != split_partial))
    dsh_fuzz::violated("SseParser output depends on how the body is split");
  if (ok) decode(whole);

  // The same bytes as one chunk, an error body and a Retry-After value.
  {
    llm::ChatStreamDecoder decoder;
    std::vector<llm::Delta> deltas;
    try {
      decoder.on_data(body, deltas);
    } catch (const llm::ProviderError&) {
    }
  }
  (void)llm::extract_error_message(body);
  int status = 400 + data[0] % 200;
  llm::ProviderError error = llm::map_http_error(status, "Reason", body);
  (void)llm::names_consecutive_messages(error.what());
  if (auto after = llm::parse_retry_after(body.substr(0, 64))) {
    std::mt19937_64 rng(data[0]);
    auto delay = llm::backoff_delay(int(data[0] % 8), 500, after, rng);
    if (delay.count() < 0) dsh_fuzz::violated("negative backoff delay");
  }
  return 0;
}
