// Several stores seen as one (issue 15): `--store` given more than once, a discovered harness
// root beside ours, a PostgreSQL database beside file roots. Sessions of every root are listed together, newest first; an id is served by
// the root that holds it; new sessions go to the first root. Roots may be of either generation and
// encoding: each Backend keeps its own layout, and every reader gets the normalised model.
#pragma once

#include "store/backend.hpp"
#include "store/session_writer.hpp"

#include <memory>
#include <vector>

namespace acp::store {

class StoreSet {
public:
  /// `roots` non-empty; the first takes new sessions.
  explicit StoreSet(std::vector<std::unique_ptr<Backend>> roots);

  Backend& primary() { return *roots_.front(); }
  const std::vector<std::unique_ptr<Backend>>& roots() const { return roots_; }

  /// The root holding `id` (the first, when several do), nullptr when none.
  Backend* holder(const std::string& id);
  std::optional<std::string> find_log(const std::string& id);
  bool exists(const std::string& id) { return holder(id) != nullptr; }

  LogSnapshot read_log(const std::string& id);
  StreamResult read_events(const std::string& id, const EventSink& sink, std::stop_token stop = {},
                           EventLifetime lifetime = EventLifetime::kept);
  /// Newest first over every root (ties by id in en-US collation); an id listed by two roots is
  /// shown once, from the first.
  std::vector<SessionListing> list_sessions(const ListQuery& query = {});
  /// Whether any root lists a session other than `id`.
  bool has_session_other_than(const std::string& id);

  /// A new session in the first root; SessionExists when any root holds the id.
  SessionWriter create(const SessionHeader& header);
  /// open() in the root holding the id, else create(header).
  SessionWriter open_or_create(const SessionHeader& header, const LockWait& wait = {});
  void delete_session(const std::string& id, const LockWait& wait = {});
  /// search_content() over every root: each root's scores are scaled by its best hit (scores are
  /// comparable within one store only), an id found in two roots counts once (the first root's,
  /// as in the listing), best first, at most `query.limit`. A root that cannot search (an
  /// unreachable database) is skipped and logged: the others still answer.
  std::vector<ContentHit> search_content(const ContentQuery& query, std::stop_token stop = {});
  /// set_shared() in the root holding the id; SessionNotFound when none does.
  void set_shared(const std::string& id, bool shared);

private:
  Backend& holder_or_throw(const std::string& id);
  std::vector<std::unique_ptr<Backend>> roots_;
};

} // namespace acp::store
