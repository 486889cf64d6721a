// Fuzz target `protocol`: stdin bytes → LineFramer → parse_json → jsonrpc::classify → wire::decode of
// the params of every request type bound in handlers/bindings.cpp, as the connection does.
// Properties: framing is independent of how the stream is split into reads; a decoded value
// encodes and decodes again; classification never throws.
#include "fuzz_support.hpp"

#include "support/json_text.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/methods.hpp"
#include "protocol/types/extensions.hpp"
#include "protocol/types/initialize.hpp"
#include "protocol/types/session.hpp"
#include "protocol/wire.hpp"
#include "transport/line_framer.hpp"

#include <boost/json/serialize.hpp>

#include <functional>
#include <string>
#include <utility>

namespace {

using namespace acp;
namespace json = boost::json;

template <class T> void decode_one(const json::value& params) {
  T value;
  try {
    value = wire::decode<T>(params);
  } catch (const wire::DecodeError& e) {
    (void)e.pointer();  // the router's -32602 carries it
    return;
  }
  json::value again = wire::encode(value);
  try {
    (void)wire::decode<T>(again);
  } catch (const wire::DecodeError&) {
    dsh_fuzz::violated("a decoded request does not decode again after encoding");
  }
  (void)json::serialize(again);
}

// handlers/bindings.cpp: method → params type (session/resume shares LoadSessionRequest).
const std::pair<std::string_view, void (*)(const json::value&)> kBound[] = {
    {methods::dsh_session_reference_candidates, &decode_one<protocol::CandidatesRequest>},
    {methods::initialize, &decode_one<protocol::InitializeRequest>},
    {methods::authenticate, &decode_one<protocol::AuthenticateRequest>},
    {methods::session_cancel, &decode_one<protocol::CancelNotification>},
    {methods::session_close, &decode_one<protocol::SessionIdRequest>},
    {methods::session_delete, &decode_one<protocol::SessionIdRequest>},
    {methods::session_list, &decode_one<protocol::ListSessionsRequest>},
    {methods::session_load, &decode_one<protocol::LoadSessionRequest>},
    {methods::session_new, &decode_one<protocol::NewSessionRequest>},
    {methods::session_prompt, &decode_one<protocol::PromptRequest>},
    {methods::session_resume, &decode_one<protocol::ResumeSessionRequest>},
    {methods::session_set_config_option, &decode_one<protocol::SetSessionConfigOptionRequest>},
};

void handle_frame(std::string_view text) {
  boost::system::error_code ec;
  json::value frame = support::parse_json(text, ec);
  if (ec) {
    (void)jsonrpc::parse_error(ec.message()).to_json();
    return;
  }
  jsonrpc::Inbound inbound = jsonrpc::classify(frame);
  const json::value* params = nullptr;
  std::string_view method;
  if (auto* r = std::get_if<jsonrpc::Request>(&inbound)) {
    params = &r->params;
    method = r->method;
    (void)jsonrpc::serialize_response(r->id, json::object());
    (void)jsonrpc::id_to_string(r->id);
  } else if (auto* n = std::get_if<jsonrpc::Notification>(&inbound)) {
    params = &n->params;
    method = n->method;
  } else if (auto* rej = std::get_if<jsonrpc::Rejected>(&inbound)) {
    (void)jsonrpc::serialize_error(rej->id, rej->error);
    return;
  } else {
    return;
  }
  bool bound = false;
  for (const auto& [name, decode] : kBound) {
    if (name == method) {
      decode(*params);
      bound = true;
    }
  }
  // Unbound methods get -32601 from the router; still exercise every decoder on the params.
  if (!bound)
    for (const auto& entry : kBound) entry.second(*params);
}

std::vector<transport::FramerEvent> frame_all(std::string_view stream, std::size_t max, const std::vector<std::size_t>* pieces) {
  transport::LineFramer framer(max);
  std::vector<transport::FramerEvent> events;
  if (pieces) {
    for (std::size_t n : *pieces) {
      framer.feed(stream.substr(0, n), events);
      stream.remove_prefix(n);
    }
  } else {
    framer.feed(stream, events);
  }
  framer.finish(events);
  return events;
}

bool same(const std::vector<transport::FramerEvent>& a, const std::vector<transport::FramerEvent>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].index() != b[i].index()) return false;
    if (auto* f = std::get_if<transport::Frame>(&a[i])) {
      if (f->text != std::get<transport::Frame>(b[i]).text) return false;
    } else if (std::get<transport::Oversize>(a[i]).bytes != std::get<transport::Oversize>(b[i]).bytes) {
      return false;
    }
  }
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  // Byte 0 picks the frame limit (small, so oversize frames are reached), byte 1 the read split.
  std::size_t max = 1 + std::size_t(data[0]) * 16;
  std::uint32_t seed = data[1];
  std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);

  auto whole = frame_all(stream, max, nullptr);
  auto pieces = dsh_fuzz::piece_sizes(stream.size(), seed);
  auto split = frame_all(stream, max, &pieces);
  if (!same(whole, split)) dsh_fuzz::violated("LineFramer output depends on how the stream is split");

  for (const auto& event : whole) {
    if (auto* f = std::get_if<transport::Frame>(&event)) {
      if (f->text.size() > max) dsh_fuzz::violated("a frame longer than the limit was delivered");
      handle_frame(f->text);
    } else {
      auto bytes = std::get<transport::Oversize>(event).bytes;
      if (bytes <= max) dsh_fuzz::violated("an oversize report for a frame within the limit");
      (void)jsonrpc::oversize_frame(max).to_json();
    }
  }
  // A frame given whole (bigger than the framer limit above) still goes through the codec.
  if (stream.size() <= 65536) handle_frame(stream);
  return 0;
}
