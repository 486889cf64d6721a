// Golden-vector driver for the session-reference service (tests/data/vectors/README.md).
//
// Runs every case of the JSONL file named by DSH_REFERENCE_VECTORS (default: argv[1]) against the
// library, compares `ok`, `code` and `value` exactly (structural equality, and also the serialized
// text so key order counts), prints each failure with a diff hint and ends with the line
// `N passed, M failed, K skipped`. A vector is skipped exactly when its decoded `case` or `expect`
// holds an unpaired surrogate, which our UTF-8 strings cannot represent; that is decided from the
// JSON text of the line, never from its name. Exit status 1 on any failure.
#include "refs/candidates.hpp"
#include "refs/errors.hpp"
#include "refs/mentions.hpp"
#include "refs/projection.hpp"
#include "refs/service.hpp"
#include "refs/uri.hpp"

#include "support/json_text.hpp"

#include <boost/json.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

namespace json = boost::json;
using namespace acp;

namespace {

std::optional<std::string> optional_string(const json::object& o, std::string_view key) {
  if (auto* v = o.if_contains(key); v && v->is_string()) return std::string(v->get_string());
  return std::nullopt;
}

refs::Target make_target(const json::object& o) {
  return refs::Target{std::string(o.at("id").as_string()), optional_string(o, "cwd")};
}

store::SurfaceSnapshot make_snapshot(const json::object& o) {
  store::SurfaceSnapshot s;
  const auto& session = o.at("session").as_object();
  s.session.id = std::string(session.at("id").as_string());
  s.session.cwd = optional_string(session, "cwd");
  if (auto* seq = o.if_contains("capturedThroughSeq"); seq && !seq->is_null()) s.capturedThroughSeq = seq->to_number<std::int64_t>();
  for (const auto& e : o.at("events").as_array()) s.events.push_back(e.as_object());
  return s;
}

// The vectors' host double: `sources` maps ids to snapshots or {"error": message}; `sessions` is the listing.
class VectorSource : public refs::SessionSource {
public:
  VectorSource(const json::object* sources, const json::array* sessions) : sources_(sources), sessions_(sessions) {}

  refs::ProjectedSource read_projected(const std::string& id, std::int64_t, std::stop_token) override {
    const json::value* entry = sources_ ? sources_->if_contains(id) : nullptr;
    if (!entry) throw std::runtime_error("session \"" + id + "\" not found");
    const auto& o = entry->as_object();
    if (auto* err = o.if_contains("error")) throw std::runtime_error(std::string(err->as_string()));
    return refs::project_snapshot(make_snapshot(o));
  }

  std::vector<store::SessionListing> list_sessions() override {
    std::vector<store::SessionListing> out;
    if (!sessions_) return out;
    for (const auto& row : *sessions_) {
      const auto& r = row.as_object();
      const auto& h = r.at("header").as_object();
      store::SessionListing l;
      l.header.id = std::string(h.at("id").as_string());
      l.header.cwd = optional_string(h, "cwd");
      l.header.createdAt = h.at("createdAt").to_number<std::int64_t>();
      l.title = optional_string(r, "title");
      out.push_back(std::move(l));
    }
    return out;
  }

private:
  const json::object* sources_;
  const json::array* sessions_;
};

refs::Config config_of(const json::object& c) {
  if (auto* cfg = c.if_contains("config"); cfg && cfg->is_object())
    return refs::make_config(refs::ConfigInput::from_json(cfg->get_object()));
  return refs::make_config({});
}

json::value run_op(const json::object& c) {
  const std::string op(c.at("op").as_string());
  if (op == "encode") return json::value(refs::encode_uri(c.at("sessionId").as_string()));
  if (op == "decode") return json::value(refs::decode_uri(c.at("uri").as_string()));
  if (op == "format")
    return json::value(refs::format_mention({std::string(c.at("sessionId").as_string()), optional_string(c, "label")}));
  if (op == "parse") {
    refs::ParsedText parsed = refs::parse_text(c.at("text").as_string());
    json::array references;
    for (const auto& r : parsed.references) references.push_back(json::object{{"sessionId", r.session_id}, {"label", r.label}});
    return json::object{{"text", parsed.text}, {"references", std::move(references)}};
  }
  if (op == "prepare") {
    refs::Config config = config_of(c);
    auto source = std::make_shared<VectorSource>(&c.at("sources").as_object(), nullptr);
    refs::SessionReferenceService service(source, config);
    refs::PreparedMessage m =
        service.prepare_json(make_target(c.at("target").as_object()), c.at("content").as_array(), c.at("references").as_array());
    return m.to_json();
  }
  if (op == "listCandidates") {
    refs::Config config = config_of(c);
    auto* sessions = c.if_contains("sessions");
    auto source = std::make_shared<VectorSource>(nullptr, sessions ? &sessions->as_array() : nullptr);
    refs::SessionReferenceService service(source, config);
    std::string query = optional_string(c, "query").value_or("");
    std::optional<json::value> limit;
    if (auto* l = c.if_contains("limit")) limit = *l;
    json::array out;
    for (const auto& cand : service.list_candidates(make_target(c.at("target").as_object()), query, limit))
      out.push_back(cand.to_json());
    return out;
  }
  throw std::runtime_error("unknown op " + op);
}

// Whether the JSON text after the `name` member holds an escaped unpaired surrogate (the line's
// members are name, case, expect in that order, README "File format").
bool case_or_expect_has_unpaired_surrogate(std::string_view line) {
  std::size_t p = line.find("\"name\":\"");
  if (p == std::string_view::npos) return true;
  p += 8;
  while (p < line.size() && line[p] != '"') p += line[p] == '\\' ? 2 : 1;
  std::string replaced;
  return acp::support::replace_unpaired_surrogate_escapes(line.substr(p + 1), replaced);
}

std::string diff_hint(const std::string& expected, const std::string& actual) {
  std::size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) ++i;
  std::size_t from = i > 80 ? i - 80 : 0;
  return "first difference at byte " + std::to_string(i) + "\n    expected: …" + expected.substr(from, 200) +
         "\n    actual:   …" + actual.substr(from, 200);
}

} // namespace

int main(int argc, char** argv) {
  std::string path;
  if (const char* env = std::getenv("DSH_REFERENCE_VECTORS"); env && *env) path = env;
  else if (argc > 1) path = argv[1];
  else {
    std::cerr << "usage: refs_vectors FILE (or set DSH_REFERENCE_VECTORS)\n";
    return 2;
  }
  std::ifstream in(path);
  if (!in) {
    std::cerr << "cannot open " << path << "\n";
    return 2;
  }
  int passed = 0, failed = 0, skipped = 0, message_mismatches = 0;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    boost::system::error_code ec;
    bool replaced = false;
    json::value v = acp::support::parse_json(line, ec, &replaced);
    if (ec || !v.is_object()) {
      std::cout << "FAIL line " << line_no << ": unparseable vector (" << ec.message() << ")\n";
      ++failed;
      continue;
    }
    const auto& vec = v.get_object();
    std::string name = vec.contains("name") ? std::string(vec.at("name").as_string()) : "line " + std::to_string(line_no);
    if (replaced && case_or_expect_has_unpaired_surrogate(line)) {
      ++skipped;
      continue;
    }
    const auto& expect = vec.at("expect").as_object();
    json::object actual;
    try {
      json::value value = run_op(vec.at("case").as_object());
      actual["ok"] = true;
      actual["value"] = std::move(value);
    } catch (const refs::SessionReferenceError& e) {
      actual["ok"] = false;
      actual["code"] = e.code_name();
      actual["message"] = e.what();
    } catch (const std::exception& e) {
      actual["ok"] = false;
      actual["code"] = "HARNESS_ERROR";
      actual["message"] = e.what();
    }
    std::string problem;
    if (actual.at("ok") != expect.at("ok")) {
      problem = "expected ok=" + json::serialize(expect.at("ok")) + ", got " + json::serialize(actual);
    } else if (expect.at("ok").as_bool()) {
      const json::value& want = expect.at("value");
      const json::value& got = actual.at("value");
      std::string want_text = acp::support::to_json_text(want);
      std::string got_text = acp::support::to_json_text(got);
      if (want != got || want_text != got_text) problem = diff_hint(want_text, got_text);
    } else if (actual.at("code") != expect.at("code")) {
      problem = "expected " + json::serialize(expect.at("code")) + ", got " + json::serialize(actual.at("code")) +
                ": " + std::string(actual.at("message").as_string());
    } else if (expect.contains("message") && actual.at("message") != expect.at("message")) {
      ++message_mismatches;  // messages are optional to compare (README); reported, not failed
      std::cout << "note " << name << ": message " << json::serialize(actual.at("message")) << " != expected "
                << json::serialize(expect.at("message")) << "\n";
    }
    if (problem.empty()) {
      ++passed;
    } else {
      ++failed;
      std::cout << "FAIL " << name << ": " << problem << "\n";
    }
  }
  if (message_mismatches) std::cout << message_mismatches << " message mismatches (not counted as failures)\n";
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  return failed == 0 ? 0 : 1;
}
