#include "store/pg/schema.hpp"

#include "store/pg/connection.hpp"

#include <array>
#include <charconv>

namespace acp::store::pg {
namespace {

// Version 1. Each later version appends one script that upgrades from the one before; a script
// never changes once released.
constexpr std::string_view kVersion1 = R"sql(
-- Roles belong to the cluster: another database's migration may have created it, or be doing so.
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dsh_acp_user') THEN
    CREATE ROLE dsh_acp_user NOLOGIN;
  END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $$;

CREATE TABLE dsh_acp.sessions (
  id               text PRIMARY KEY,
  owner            name NOT NULL DEFAULT current_user,
  shared           boolean NOT NULL DEFAULT false,
  generation       text NOT NULL CHECK (generation IN ('45fc', '0.1')),
  header_line      text NOT NULL,
  version          bigint,
  created_at       bigint NOT NULL,
  cwd              text,
  cwd_key          text,
  parent_session   text,
  seed_length      bigint,
  delegation_depth bigint,
  origin           text,
  agent_preset     text,
  title            text,
  updated_at       bigint NOT NULL,
  size_bytes       bigint NOT NULL DEFAULT 0,
  event_count      bigint NOT NULL DEFAULT 0,
  created_time     timestamptz NOT NULL DEFAULT now(),
  updated_time     timestamptz NOT NULL DEFAULT now()
);
-- session/list: newest first, ties by id in en-US collation (keyset cursor), with or without a cwd.
CREATE INDEX sessions_listing ON dsh_acp.sessions (created_at DESC, id COLLATE "en-US-x-icu");
CREATE INDEX sessions_cwd ON dsh_acp.sessions (cwd_key, created_at DESC, id COLLATE "en-US-x-icu");

CREATE TABLE dsh_acp.events (
  session_id text NOT NULL REFERENCES dsh_acp.sessions (id) ON DELETE CASCADE,
  seq        bigint NOT NULL,
  type       text NOT NULL,
  time       bigint NOT NULL,
  line       text NOT NULL,
  PRIMARY KEY (session_id, seq)
);

-- People: a role sees its own sessions and shared ones, writes only its own. FORCE: the tables'
-- owner too (superusers and BYPASSRLS roles are never subject to it).
ALTER TABLE dsh_acp.sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE dsh_acp.sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY sessions_select ON dsh_acp.sessions FOR SELECT USING (owner = current_user OR shared);
CREATE POLICY sessions_insert ON dsh_acp.sessions FOR INSERT WITH CHECK (owner = current_user);
CREATE POLICY sessions_update ON dsh_acp.sessions FOR UPDATE
  USING (owner = current_user) WITH CHECK (owner = current_user);
CREATE POLICY sessions_delete ON dsh_acp.sessions FOR DELETE USING (owner = current_user);

-- Events follow their session (the subqueries see sessions through its own policies). No UPDATE
-- policy: event lines never change.
ALTER TABLE dsh_acp.events ENABLE ROW LEVEL SECURITY;
ALTER TABLE dsh_acp.events FORCE ROW LEVEL SECURITY;
CREATE POLICY events_select ON dsh_acp.events FOR SELECT
  USING (EXISTS (SELECT FROM dsh_acp.sessions s WHERE s.id = session_id));
CREATE POLICY events_insert ON dsh_acp.events FOR INSERT
  WITH CHECK (EXISTS (SELECT FROM dsh_acp.sessions s WHERE s.id = session_id AND s.owner = current_user));
CREATE POLICY events_delete ON dsh_acp.events FOR DELETE
  USING (EXISTS (SELECT FROM dsh_acp.sessions s WHERE s.id = session_id AND s.owner = current_user));

GRANT USAGE ON SCHEMA dsh_acp TO dsh_acp_user;
GRANT SELECT ON dsh_acp.meta TO dsh_acp_user;
GRANT SELECT, INSERT, UPDATE, DELETE ON dsh_acp.sessions, dsh_acp.events TO dsh_acp_user;

-- Servers LISTEN on dsh_acp_sessions to keep their listings current; the payload is the id.
CREATE FUNCTION dsh_acp.sessions_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('dsh_acp_sessions', OLD.id);
  ELSE
    PERFORM pg_notify('dsh_acp_sessions', NEW.id);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER sessions_notify AFTER INSERT OR UPDATE OR DELETE ON dsh_acp.sessions
  FOR EACH ROW EXECUTE FUNCTION dsh_acp.sessions_notify();

CREATE FUNCTION dsh_acp.sessions_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.updated_time := now();
  RETURN NEW;
END $$;
CREATE TRIGGER sessions_touch BEFORE UPDATE ON dsh_acp.sessions
  FOR EACH ROW EXECUTE FUNCTION dsh_acp.sessions_touch();

-- The advisory lock serialising the writers of a session: pg_try_advisory_lock(session_lock_key(id)).
CREATE FUNCTION dsh_acp.session_lock_key(id text) RETURNS bigint
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN hashtextextended('dsh-acp:' || id, 0);
)sql";

// Version 2: a change notifies without the session's id (any role may LISTEN, and ids of sessions
// it cannot see must not reach it), once per statement rather than per row: listeners relist.
constexpr std::string_view kVersion2 = R"sql(
DROP TRIGGER sessions_notify ON dsh_acp.sessions;
CREATE OR REPLACE FUNCTION dsh_acp.sessions_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('dsh_acp_sessions', '');
  RETURN NULL;
END $$;
CREATE TRIGGER sessions_notify AFTER INSERT OR UPDATE OR DELETE ON dsh_acp.sessions
  FOR EACH STATEMENT EXECUTE FUNCTION dsh_acp.sessions_notify();
)sql";

// Version 3, for the write path's cost per line:
// - An update whose transaction set dsh_acp.quiet is not announced. A turn's streaming batches after
//   its first set it: the first announces the turn, the turn's durable commit (or a writer released
//   without one) announces the rest, so a turn costs listeners two wake-ups, not one per batch. New,
//   deleted, shared and unshared sessions are always announced.
// - No foreign key from events to sessions: it checked each inserted line with a query that locked
//   the session's row. dsh-acp's batches lock that row once, in the statement that inserts the lines
//   (a concurrent delete waits for it, or the batch inserts nothing); a role subject to row security
//   can add lines only to a session of its own (events_insert). Triggers keep what the key kept: a
//   session's events go with it (BEFORE DELETE, while the row still satisfies the events_delete
//   policy, and on TRUNCATE), and a session's id never changes.
constexpr std::string_view kVersion3 = R"sql(
DO $$
DECLARE
  fk name;
BEGIN
  FOR fk IN SELECT conname FROM pg_constraint WHERE conrelid = 'dsh_acp.events'::regclass AND contype = 'f' LOOP
    EXECUTE format('ALTER TABLE dsh_acp.events DROP CONSTRAINT %I', fk);
  END LOOP;
END $$;
CREATE FUNCTION dsh_acp.sessions_delete_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM dsh_acp.events WHERE session_id = OLD.id;
  RETURN OLD;
END $$;
CREATE TRIGGER sessions_delete_events BEFORE DELETE ON dsh_acp.sessions
  FOR EACH ROW EXECUTE FUNCTION dsh_acp.sessions_delete_events();
CREATE FUNCTION dsh_acp.sessions_truncate_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE dsh_acp.events;
  RETURN NULL;
END $$;
CREATE TRIGGER sessions_truncate_events BEFORE TRUNCATE ON dsh_acp.sessions
  FOR EACH STATEMENT EXECUTE FUNCTION dsh_acp.sessions_truncate_events();
CREATE FUNCTION dsh_acp.sessions_keep_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the id of session % does not change', OLD.id USING ERRCODE = 'foreign_key_violation';
END $$;
CREATE TRIGGER sessions_keep_id BEFORE UPDATE OF id ON dsh_acp.sessions
  FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM OLD.id) EXECUTE FUNCTION dsh_acp.sessions_keep_id();
CREATE OR REPLACE FUNCTION dsh_acp.sessions_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND current_setting('dsh_acp.quiet', true) = 'on' THEN
    RETURN NULL;
  END IF;
  PERFORM pg_notify('dsh_acp_sessions', '');
  RETURN NULL;
END $$;
)sql";

// Version 4, so that one person cannot block another's writes or learn which sessions they keep:
// - A session is keyed by (owner, id), and its events by (owner, session_id, seq): a role that
//   inserts an id another role holds, unshared, gets no unique violation (no existence probe, through
//   dsh-acp or psql). dsh-acp looks an id up as the role's own session first, else a shared one
//   (by owner name), and lists one session per id.
// - The advisory lock (any role could take any key, and read the held keys in pg_locks) gives way to
//   a row of session_locks, locked FOR UPDATE in a transaction the writer keeps open: row security
//   lets only the owner's role see, lock or wait for it.
// - A line's owner is stored with it: a role under row security inserts lines only into a session of
//   its own (looked up by the primary key), and deletes only its own lines.
// Row security is lifted while the rows are rewritten (the migrating role may own the tables without
// being a superuser) and forced again in the same transaction.
constexpr std::string_view kVersion4 = R"sql(
ALTER TABLE dsh_acp.sessions NO FORCE ROW LEVEL SECURITY;
ALTER TABLE dsh_acp.events NO FORCE ROW LEVEL SECURITY;
DO $$
DECLARE
  pk record;
BEGIN
  FOR pk IN SELECT conrelid::regclass AS rel, conname FROM pg_constraint
            WHERE conrelid IN ('dsh_acp.sessions'::regclass, 'dsh_acp.events'::regclass) AND contype = 'p' LOOP
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', pk.rel, pk.conname);
  END LOOP;
END $$;
ALTER TABLE dsh_acp.events ADD COLUMN owner name;
UPDATE dsh_acp.events e SET owner = s.owner FROM dsh_acp.sessions s WHERE s.id = e.session_id;
-- Lines of no session (left by hand: dsh-acp's own paths never leave any) could be read by no one.
DELETE FROM dsh_acp.events WHERE owner IS NULL;
ALTER TABLE dsh_acp.events ALTER COLUMN owner SET DEFAULT current_user, ALTER COLUMN owner SET NOT NULL;
ALTER TABLE dsh_acp.events ADD PRIMARY KEY (owner, session_id, seq);
ALTER TABLE dsh_acp.sessions ADD PRIMARY KEY (owner, id);
CREATE INDEX sessions_id ON dsh_acp.sessions (id);

DROP POLICY events_select ON dsh_acp.events;
DROP POLICY events_insert ON dsh_acp.events;
DROP POLICY events_delete ON dsh_acp.events;
CREATE POLICY events_select ON dsh_acp.events FOR SELECT
  USING (owner = current_user OR EXISTS (SELECT FROM dsh_acp.sessions s
                                         WHERE s.owner = events.owner AND s.id = events.session_id AND s.shared));
CREATE POLICY events_insert ON dsh_acp.events FOR INSERT
  WITH CHECK (owner = current_user AND EXISTS (SELECT FROM dsh_acp.sessions s
                                               WHERE s.owner = current_user AND s.id = events.session_id));
CREATE POLICY events_delete ON dsh_acp.events FOR DELETE USING (owner = current_user);
ALTER TABLE dsh_acp.sessions FORCE ROW LEVEL SECURITY;
ALTER TABLE dsh_acp.events FORCE ROW LEVEL SECURITY;

CREATE OR REPLACE FUNCTION dsh_acp.sessions_delete_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM dsh_acp.events WHERE owner = OLD.owner AND session_id = OLD.id;
  RETURN OLD;
END $$;
CREATE OR REPLACE FUNCTION dsh_acp.sessions_keep_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the id and owner of session % do not change', OLD.id USING ERRCODE = 'foreign_key_violation';
END $$;
DROP TRIGGER sessions_keep_id ON dsh_acp.sessions;
CREATE TRIGGER sessions_keep_id BEFORE UPDATE OF id, owner ON dsh_acp.sessions
  FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM OLD.id OR NEW.owner IS DISTINCT FROM OLD.owner)
  EXECUTE FUNCTION dsh_acp.sessions_keep_id();

-- A writer's lock: its row, made when first needed, locked FOR UPDATE for as long as the writer
-- writes. Servers of older versions (the advisory lock) must not write beside it: the key's
-- function goes, and their writes fail.
CREATE TABLE dsh_acp.session_locks (
  owner name NOT NULL DEFAULT current_user,
  id    text NOT NULL,
  PRIMARY KEY (owner, id)
);
ALTER TABLE dsh_acp.session_locks ENABLE ROW LEVEL SECURITY;
ALTER TABLE dsh_acp.session_locks FORCE ROW LEVEL SECURITY;
CREATE POLICY session_locks_own ON dsh_acp.session_locks USING (owner = current_user) WITH CHECK (owner = current_user);
GRANT SELECT, INSERT, UPDATE, DELETE ON dsh_acp.session_locks TO dsh_acp_user;
DROP FUNCTION dsh_acp.session_lock_key(text);
)sql";

// Version 5, recall by content (docs/recall.md): dsh_acp.search holds the indexable texts of each
// event (store::indexable_texts: one row per text, `part` its place among the event's texts), cut
// as the file stores' index cuts them, with their words as a tsvector. The words come from the
// writer (store::content_words, lexemes taken verbatim by array_to_tsvector) rather than from a
// text search configuration: a question's terms (store::content_terms) are cut and lower-cased by
// the same code, whatever the database's locale, and a path or a host name is split into its words
// as it is in a file store's index (PostgreSQL's parser keeps "src/a_b.cpp" or "example.com" whole).
// - A writer's texts are inserted after its batch committed, by its store's indexer (pg_indexer.hpp),
//   which moves indexed_count on in the same transaction; an import inserts them with the lines.
// - sessions.indexed_count: the events of the session whose texts are in dsh_acp.search (0 up to it).
//   A batch without texts moves it on with event_count only when they were equal; lines whose texts
//   never came (an older dsh-acp, rows from before this version, a writer killed before its
//   indexer ran) leave it behind, and a catch-up (the indexer, a search, `dsh-acp store index`:
//   PgStore::index_content) reads the lines from there.
// - Row security as for the lines: a role reads the rows of its own and of shared sessions, inserts
//   rows only into its own sessions, deletes only its own; they go with their session (delete and
//   truncate triggers).
// - Searching goes through dsh_acp.search_texts(): under row security PostgreSQL evaluates a query's
//   own conditions only after the policy's unless they are leakproof, and the tsquery match is not,
//   so a role's query could never use the GIN index. The function runs as the tables' owner (row
//   security not forced on dsh_acp.search: an owner can lift it at will anyway), finds the texts
//   through the index and returns those of the calling login role's own sessions (session_user)
//   and of shared ones: the same rows the select policy lets that role read.
constexpr std::string_view kVersion5 = R"sql(
CREATE TABLE dsh_acp.search (
  owner      name NOT NULL DEFAULT current_user,
  session_id text NOT NULL,
  seq        bigint NOT NULL,
  part       smallint NOT NULL DEFAULT 0,
  kind       text NOT NULL,
  text       text NOT NULL,
  tsv        tsvector NOT NULL,
  PRIMARY KEY (owner, session_id, seq, part)
);
CREATE INDEX search_tsv ON dsh_acp.search USING gin (tsv);
ALTER TABLE dsh_acp.search ENABLE ROW LEVEL SECURITY;
CREATE POLICY search_select ON dsh_acp.search FOR SELECT
  USING (owner = current_user OR EXISTS (SELECT FROM dsh_acp.sessions s
                                         WHERE s.owner = search.owner AND s.id = search.session_id AND s.shared));
CREATE POLICY search_insert ON dsh_acp.search FOR INSERT
  WITH CHECK (owner = current_user AND EXISTS (SELECT FROM dsh_acp.sessions s
                                               WHERE s.owner = current_user AND s.id = search.session_id));
CREATE POLICY search_delete ON dsh_acp.search FOR DELETE USING (owner = current_user);
GRANT SELECT, INSERT, DELETE ON dsh_acp.search TO dsh_acp_user;
CREATE FUNCTION dsh_acp.search_texts(q tsquery, exclude text[], max bigint)
  RETURNS TABLE (owner name, session_id text, seq bigint, part smallint)
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp SET enable_seqscan = off SET jit = off
  AS $$
    SELECT x.owner, x.session_id, x.seq, x.part FROM dsh_acp.search x
    WHERE x.tsv @@ q AND NOT (x.session_id = ANY (exclude))
      AND (x.owner = session_user OR EXISTS (SELECT FROM dsh_acp.sessions s
                                             WHERE s.owner = x.owner AND s.id = x.session_id AND s.shared))
    LIMIT max
  $$;
REVOKE ALL ON FUNCTION dsh_acp.search_texts(tsquery, text[], bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION dsh_acp.search_texts(tsquery, text[], bigint) TO dsh_acp_user;

ALTER TABLE dsh_acp.sessions ADD COLUMN indexed_count bigint NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION dsh_acp.sessions_delete_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM dsh_acp.events WHERE owner = OLD.owner AND session_id = OLD.id;
  DELETE FROM dsh_acp.search WHERE owner = OLD.owner AND session_id = OLD.id;
  RETURN OLD;
END $$;
CREATE OR REPLACE FUNCTION dsh_acp.sessions_truncate_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  TRUNCATE dsh_acp.events, dsh_acp.search;
  RETURN NULL;
END $$;
)sql";

constexpr std::array<std::string_view, kSchemaVersion> kUpgrades{kVersion1, kVersion2, kVersion3, kVersion4, kVersion5};

std::string migrate_hint(const PgConnection& c) { return "run `dsh-acp store migrate " + c.name() + "`"; }

} // namespace

std::optional<int> schema_version(PgConnection& c) {
  // Looked up step by step: naming a table of a schema the role may not use is an error.
  PgResult r = c.exec("SELECT to_regnamespace('dsh_acp') IS NOT NULL,"
                      " has_schema_privilege(current_user, 'dsh_acp', 'USAGE') IS TRUE, current_user"
                      " FROM (SELECT) x WHERE to_regnamespace('dsh_acp') IS NOT NULL");
  if (r.rows() == 0) return std::nullopt;
  if (r.value(0, 1) != "t")
    throw SchemaDenied(c.name() + ": role \"" + std::string(r.value(0, 2)) +
                       "\" may not use the dsh_acp schema: grant it dsh_acp_user (GRANT dsh_acp_user TO " +
                       std::string(r.value(0, 2)) + ")");
  if (c.exec("SELECT to_regclass('dsh_acp.meta')").is_null(0, 0)) return std::nullopt;
  PgResult v = c.exec("SELECT value FROM dsh_acp.meta WHERE key = 'schema_version'");
  if (v.rows() == 0) return 0;
  std::string_view text = v.value(0, 0);
  int version = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
  if (ec != std::errc() || end != text.data() + text.size())
    throw SchemaError(c.name() + ": dsh_acp.meta holds an invalid schema_version \"" + std::string(text) + "\"");
  return version;
}

namespace {

void require_utf8(PgConnection& c) {
  PgResult r = c.exec("SELECT current_setting('server_encoding')");
  const std::string encoding(r.value(0, 0));
  if (encoding != "UTF8")
    throw SchemaEncoding(c.name() + ": the database's encoding is " + encoding +
                         "; a dsh-acp store needs a UTF8 database (CREATE DATABASE ... ENCODING 'UTF8' TEMPLATE template0)");
}

} // namespace

void check_schema(PgConnection& c) {
  require_utf8(c);
  std::optional<int> version = schema_version(c);
  if (!version)
    throw SchemaMissing(c.name() + ": no dsh_acp schema in this database: " + migrate_hint(c));
  if (*version < kSchemaVersion)
    throw SchemaOutdated(c.name() + ": the dsh_acp schema is version " + std::to_string(*version) +
                         ", this dsh-acp needs " + std::to_string(kSchemaVersion) + ": " + migrate_hint(c));
  if (*version > kSchemaVersion)
    throw SchemaTooNew(c.name() + ": the dsh_acp schema was written by a newer dsh-acp (schema " +
                       std::to_string(*version) + ", this one knows " + std::to_string(kSchemaVersion) + ")");
  PgResult r = c.exec("SELECT has_table_privilege('dsh_acp.sessions', 'SELECT, INSERT, UPDATE, DELETE')"
                      " AND has_table_privilege('dsh_acp.events', 'SELECT, INSERT, DELETE')"
                      " AND has_table_privilege('dsh_acp.session_locks', 'SELECT, INSERT, UPDATE, DELETE')"
                      " AND has_table_privilege('dsh_acp.search', 'SELECT, INSERT, DELETE')"
                      " AND has_function_privilege('dsh_acp.search_texts(tsquery, text[], bigint)', 'EXECUTE'), current_user");
  if (r.value(0, 0) != "t")
    throw SchemaDenied(c.name() + ": role \"" + std::string(r.value(0, 1)) +
                       "\" may not use the dsh_acp tables: grant it dsh_acp_user");
}

void migrate(PgConnection& c, int target) {
  if (target < 1 || target > kSchemaVersion) throw SchemaError(c.name() + ": no schema version " + std::to_string(target));
  require_utf8(c);
  try {
    Transaction tx(c);
    // Concurrent migrations of one database wait for each other here.
    c.exec("SELECT pg_advisory_xact_lock(hashtextextended('dsh-acp:migrate', 0))");
    int version = schema_version(c).value_or(0);
    if (version > kSchemaVersion)
      throw SchemaTooNew(c.name() + ": the dsh_acp schema was written by a newer dsh-acp (schema " +
                         std::to_string(version) + ", this one knows " + std::to_string(kSchemaVersion) + ")");
    if (version >= target) return;  // nothing to do: the transaction rolls back
    c.exec_script("CREATE SCHEMA IF NOT EXISTS dsh_acp;"
                  "CREATE TABLE IF NOT EXISTS dsh_acp.meta (key text PRIMARY KEY, value text NOT NULL);");
    for (int v = version; v < target; ++v) c.exec_script(kUpgrades[static_cast<std::size_t>(v)]);
    c.exec("INSERT INTO dsh_acp.meta (key, value) VALUES ('schema_version', $1)"
           " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
           {std::to_string(target)});
    tx.commit();
  } catch (const PgError& e) {
    if (e.sqlstate() == "42501")
      throw SchemaDenied(std::string(e.what()) +
                         " (migrate needs a role that may create schemas in the database and roles: the"
                         " database owner with CREATEROLE, or a superuser)");
    throw;
  }
}

} // namespace acp::store::pg
