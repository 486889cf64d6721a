#include "store/backend.hpp"

#include "store/collation.hpp"
#include "store/errors.hpp"
#include "store/line_text.hpp"
#include "store/match_score.hpp"
#include "store/session_writer.hpp"
#include "support/json_text.hpp"

#include <algorithm>
#include <cmath>

namespace acp::store {

LogSnapshot Backend::read_log(const std::string& id) {
  LogSnapshot snap;
  StreamResult r = read_events(id, [&](boost::json::object&& e) { snap.events.push_back(std::move(e)); });
  snap.path = std::move(r.path);
  snap.header = std::move(r.header);
  return snap;
}

void Appender::write_plain(KnownLog& log, const std::string& lines, std::int64_t count, bool sync) {
  // Text no log may hold (invalid UTF-8, a stray control byte) is refused as write() refuses it,
  // naming the line and byte, before the parse below could only call it malformed.
  check_log_text(lines, log.path);
  std::vector<boost::json::object> records;
  records.reserve(static_cast<std::size_t>(count));
  for (std::size_t at = 0; at < lines.size();) {
    std::size_t nl = lines.find('\n', at);
    if (nl == std::string::npos) nl = lines.size();
    boost::system::error_code ec;
    boost::json::value v = support::parse_json(std::string_view(lines).substr(at, nl - at), ec);
    if (ec || !v.is_object()) throw StoreError("internal: a chunk batch line is not a JSON object");
    records.push_back(std::move(v.get_object()));
    at = nl + 1;
  }
  if (static_cast<std::int64_t>(records.size()) != count) throw StoreError("internal: a chunk batch miscounted");
  write(log, lines, records, sync);
}

SessionWriter Backend::open_or_create(const SessionHeader& header, const LockWait& wait) {
  if (exists(header.id)) return open(header.id, wait);
  return create(header, wait);
}

Generation Backend::export_lines(const std::string&, const std::function<void(std::string_view)>&,
                                 const std::function<void(std::string_view)>&, std::int64_t) {
  throw StoreError("store " + name() + " cannot export logs");
}

void Backend::import_lines(const std::string&, Generation, const std::string&, std::int64_t,
                           const std::vector<std::string>&) {
  throw StoreError("store " + name() + " cannot import logs");
}

void Backend::set_shared(const std::string&, bool) {
  throw SharingUnsupported("sharing needs a PostgreSQL store; " + name() + " is one person's files");
}

namespace {

// The plain scan's ranking: distinct terms matched count most, then how often they occur. An
// index ranks by its own weights; both return the session's best-matching event (match_score).
struct ScanBest {
  double score = 0;
  std::int64_t seq = 0;
  TextKind kind = TextKind::user;
  std::string text;
};


} // namespace

bool Backend::has_session_other_than(const std::string& id) {
  ListQuery query;
  query.limit = 2;
  for (const SessionListing& row : list_sessions(query))
    if (row.header.id != id) return true;
  return false;
}

std::vector<ContentHit> Backend::search_content(const ContentQuery& query, std::stop_token stop) {
  std::vector<ContentHit> hits;
  std::vector<std::string> terms = content_terms(query.words);
  if (terms.empty() || query.limit == 0) return hits;
  for (const SessionListing& listing : list_sessions()) {
    if (std::find(query.exclude.begin(), query.exclude.end(), listing.header.id) != query.exclude.end()) continue;
    ScanBest best;
    double total = 0;
    auto sink = [&](boost::json::object&& event) {
      if (stop.stop_requested()) throw ReadCancelled();
      for (IndexableText& t : indexable_texts(event)) {
        double s = match_score(lowercase_en_us(t.text), terms);
        total += s;
        if (s > best.score) {
          const boost::json::value* seq = event.if_contains("seq");
          best = {s, seq && seq->is_int64() ? seq->get_int64() : 0, t.kind, std::move(t.text)};
        }
      }
    };
    try {
      read_events(listing.header.id, sink, stop, EventLifetime::transient);
    } catch (const ReadCancelled&) {
      throw;
    } catch (const StoreError&) {
      continue;  // a log that cannot be read is not found by its words either
    }
    if (best.score == 0) continue;
    hits.push_back({listing.header.id, best.seq, best.kind, make_snippet(best.text, terms), best.score + total / 1000});
  }
  std::stable_sort(hits.begin(), hits.end(), [](const ContentHit& a, const ContentHit& b) { return a.score > b.score; });
  if (hits.size() > query.limit) hits.resize(query.limit);
  return hits;
}

IndexProgress Backend::index_content(const IndexProgressFn& progress, std::stop_token) {
  IndexProgress p;
  p.total = p.done = list_sessions().size();
  if (progress) progress(p);
  return p;
}

} // namespace acp::store
