#include "store/store_set.hpp"

#include "store/collation.hpp"
#include "store/errors.hpp"
#include "support/log.hpp"

#include <algorithm>
#include <unordered_set>

namespace acp::store {

StoreSet::StoreSet(std::vector<std::unique_ptr<Backend>> roots) : roots_(std::move(roots)) {
  if (roots_.empty()) throw StoreError("no session store root");
}

Backend* StoreSet::holder(const std::string& id) {
  for (auto& r : roots_)
    if (r->exists(id)) return r.get();
  return nullptr;
}

Backend& StoreSet::holder_or_throw(const std::string& id) {
  if (Backend* s = holder(id)) return *s;
  throw SessionNotFound(id);
}

std::optional<std::string> StoreSet::find_log(const std::string& id) {
  for (auto& r : roots_)
    if (auto p = r->find_log(id)) return p;
  return std::nullopt;
}

LogSnapshot StoreSet::read_log(const std::string& id) { return holder_or_throw(id).read_log(id); }

StreamResult StoreSet::read_events(const std::string& id, const EventSink& sink, std::stop_token stop,
                                   EventLifetime lifetime) {
  return holder_or_throw(id).read_events(id, sink, std::move(stop), lifetime);
}

namespace {

// What a prompt in the session would meet: a read-only root, or a session of someone else's.
void mark_read_only(const Backend& root, std::vector<SessionListing>& rows) {
  const bool root_read_only = root.read_only();
  const std::optional<std::string> me = rows.empty() ? std::nullopt : root.person();
  for (auto& row : rows) row.read_only = root_read_only || (row.owner && me && *row.owner != *me);
}

} // namespace

bool StoreSet::has_session_other_than(const std::string& id) {
  for (auto& r : roots_)
    if (r->has_session_other_than(id)) return true;
  return false;
}

std::vector<SessionListing> StoreSet::list_sessions(const ListQuery& query) {
  if (roots_.size() == 1) {
    std::vector<SessionListing> rows = roots_.front()->list_sessions(query);
    mark_read_only(*roots_.front(), rows);
    return rows;
  }
  // Each root's page is already in order and at most `limit` long: merge them and cut.
  std::vector<SessionListing> rows;
  std::unordered_set<std::string> seen;
  for (auto& r : roots_) {
    std::vector<SessionListing> page = r->list_sessions(query);
    mark_read_only(*r, page);
    for (auto& row : page)
      if (seen.insert(row.header.id).second) rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const SessionListing& a, const SessionListing& b) {
    if (a.header.createdAt != b.header.createdAt) return a.header.createdAt > b.header.createdAt;
    return compare_ids_en_us(a.header.id, b.header.id) < 0;
  });
  if (rows.size() > query.limit) rows.resize(query.limit);
  return rows;
}

std::vector<ContentHit> StoreSet::search_content(const ContentQuery& query, std::stop_token stop) {
  if (roots_.size() == 1) return roots_.front()->search_content(query, stop);
  std::vector<ContentHit> hits;
  std::unordered_set<std::string> seen;
  for (auto& r : roots_) {
    std::vector<ContentHit> found;
    try {
      found = r->search_content(query, stop);
    } catch (const ReadCancelled&) {
      throw;
    } catch (const std::exception& e) {
      acp::log::warn("search of " + r->name() + " failed: " + e.what());
      continue;
    }
    const double best = found.empty() || found.front().score <= 0 ? 1 : found.front().score;
    for (auto& h : found) {
      if (!seen.insert(h.session_id).second) continue;
      // Another root serves this id (it is listed there first): its log is what a mention reads.
      if (holder(h.session_id) != r.get()) continue;
      h.score /= best;
      hits.push_back(std::move(h));
    }
  }
  std::stable_sort(hits.begin(), hits.end(), [](const ContentHit& a, const ContentHit& b) { return a.score > b.score; });
  if (hits.size() > query.limit) hits.resize(query.limit);
  return hits;
}

SessionWriter StoreSet::create(const SessionHeader& header) {
  for (std::size_t i = 1; i < roots_.size(); ++i)
    if (roots_[i]->exists(header.id)) throw SessionExists(header.id);
  return primary().create(header);
}

SessionWriter StoreSet::open_or_create(const SessionHeader& header, const LockWait& wait) {
  if (roots_.size() == 1) return roots_.front()->open_or_create(header, wait);
  if (Backend* s = holder(header.id)) return s->open(header.id, wait);
  return primary().create(header, wait);
}

void StoreSet::delete_session(const std::string& id, const LockWait& wait) {
  holder_or_throw(id).delete_session(id, wait);
}

void StoreSet::set_shared(const std::string& id, bool shared) { holder_or_throw(id).set_shared(id, shared); }

} // namespace acp::store
