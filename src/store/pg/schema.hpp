// The dsh_acp schema of a PostgreSQL store: created and upgraded by `dsh-acp store migrate`
// (migrate()), checked by a serving process at start-up (check_schema()).
//
// Everything lives in the schema `dsh_acp`:
//   meta(key, value)          schema_version
//   sessions                  one row per session, primary key (owner, id): id, owner (a role), shared, generation (the shape
//                             of its lines: store::generation_name(), '45fc' or '0.1'), header_line
//                             (verbatim, no '\n'), the header fields (version, created_at ms, cwd, cwd_key = normalize_cwd(cwd),
//                             parent_session, seed_length, delegation_depth, origin, agent_preset),
//                             title, updated_at (ms), size_bytes (raw JSONL size, header included),
//                             event_count (the next seq), created_time/updated_time (timestamptz)
//   events                    (owner, session_id, seq) primary key, type, time (ms), line (verbatim, no '\n')
//   session_locks             (owner, id): a writer's lock row (below)
//   search                    (owner, session_id, seq, part) primary key, kind, text, tsv: the indexable
//                             texts of the events (docs/recall.md), written with the lines; sessions.indexed_count
//                             says up to which event a session's texts are there
// Listing order uses the index on (created_at DESC, id COLLATE "en-US-x-icu"): write ORDER BY
// created_at DESC, id COLLATE "en-US-x-icu" to use it.
//
// Ids are unique per owner, not across owners: a role learns nothing of ids it cannot see. An id
// names the role's own session, else a shared one of the first owner by name (kPickSession); a
// listing shows that one session per id.
//
// People: each person is a login role in the group role dsh_acp_user (NOLOGIN, created by migrate):
//   CREATE ROLE alice LOGIN IN ROLE dsh_acp_user;
// Row-level security (forced, also for the tables' owner; superusers bypass it): a role sees its own
// sessions and shared ones (and their events), and inserts/updates/deletes only its own sessions and
// inserts/deletes only events of its own. Events are never updated. The search texts follow the
// events' policies, not forced: dsh_acp.search_texts() reads them as the owner, for the GIN index
// (schema.cpp, version 5).
//
// A statement that inserts, updates or deletes sessions rows sends NOTIFY dsh_acp_sessions with an
// empty payload (kNotifyChannel); an update in a transaction that set dsh_acp.quiet to 'on'
// (kQuietCommit) does not. A writer of a session holds its session_locks row (made when missing)
// locked FOR UPDATE in a transaction it keeps open while it writes; row security lets no other role
// see, lock or wait for that row.
#pragma once

#include "store/errors.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace acp::store::pg {

class PgConnection;

constexpr int kSchemaVersion = 5;
inline constexpr std::string_view kSchemaName = "dsh_acp";
inline constexpr std::string_view kUserRole = "dsh_acp_user";
inline constexpr std::string_view kNotifyChannel = "dsh_acp_sessions";
/// Appended to a query of dsh_acp.sessions by id: the session the id names for this role.
inline constexpr std::string_view kPickSession = " ORDER BY owner <> current_user, owner LIMIT 1";
/// Makes the caller's transaction commit without waiting for the WAL flush.
inline constexpr std::string_view kAsyncCommit = "SELECT set_config('synchronous_commit', 'off', true)";
/// kAsyncCommit, and the transaction's updates of sessions rows unannounced (a later durable commit
/// of the writer announces them).
inline constexpr std::string_view kQuietCommit =
    "SELECT set_config('synchronous_commit', 'off', true), set_config('dsh_acp.quiet', 'on', true)";

/// The database cannot serve: base of the errors below. what() names the store (redacted URL).
class SchemaError : public StoreError {
public:
  using StoreError::StoreError;
};
/// No dsh_acp schema: "... run `dsh-acp store migrate URL`".
class SchemaMissing : public SchemaError {
public:
  using SchemaError::SchemaError;
};
/// An older schema version: same hint.
class SchemaOutdated : public SchemaError {
public:
  using SchemaError::SchemaError;
};
/// Written by a newer dsh-acp: "... (schema N, this one knows M)".
class SchemaTooNew : public SchemaError {
public:
  using SchemaError::SchemaError;
};
/// The role may not use the schema (not in dsh_acp_user), or may not create it (migrate).
class SchemaDenied : public SchemaError {
public:
  using SchemaError::SchemaError;
};

/// The database's encoding is not UTF8: its lines are JSON text in UTF-8, which another server
/// encoding would convert (LATIN1) or take unchecked (SQL_ASCII). what() names it and the remedy.
class SchemaEncoding : public SchemaError {
public:
  using SchemaError::SchemaError;
};

/// Creates or upgrades the schema to kSchemaVersion in one transaction (serialised against
/// concurrent migrations), creating the role dsh_acp_user if missing. Idempotent. Throws
/// SchemaTooNew for a newer schema, SchemaDenied when the role lacks the rights (it needs to create
/// schemas in the database and roles: the database owner with CREATEROLE, or a superuser),
/// SchemaEncoding for a database not in UTF8, PgError otherwise. `target`: an older version to stop at (tests of upgrades).
void migrate(PgConnection& c, int target = kSchemaVersion);

/// For a serving process: the schema exists at exactly kSchemaVersion and the role may use it.
/// Throws SchemaEncoding, SchemaMissing, SchemaOutdated, SchemaTooNew, SchemaDenied; PgError for
/// other failures.
void check_schema(PgConnection& c);

/// The schema version stored in the database; nullopt when there is no dsh_acp schema.
std::optional<int> schema_version(PgConnection& c);

} // namespace acp::store::pg
