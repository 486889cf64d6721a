"""Sessions in PostgreSQL for the Python process tests (transcripts, two processes): the `.pg` variants.

A test registered a second time with the suffix `.pg` (tests/CMakeLists.txt, dsh_add_pg_variant) runs
with DSH_ACP_TEST_STORE=pg and DSH_ACP_TEST_PG (the suite's cluster, cmake/Postgres.cmake). Its helpers
then give it a database of its own on that cluster (created, migrated by the binary under test, and a
login role in dsh_acp_user so row security applies), start the server with `--store URL` instead of a
file root, put sessions the test seeds as files in with `dsh-acp store copy DIR URL`, and read what
the server wrote from an export (`dsh-acp store copy URL DIR`) taken at that point.
The JavaScript twin is tests/e2e/lib/pgvariant.mjs.
"""
import os
import re
import secrets
import shutil
import subprocess
import tempfile


def enabled():
    """True in a `.pg` variant: sessions go to PostgreSQL."""
    return os.environ.get("DSH_ACP_TEST_STORE") == "pg"


_URL = re.compile(r"^(postgres(?:ql)?://)(?:([^@/?]*)@)?([^/?]*)(?:/([^?]*))?(\?.*)?$")


class ScratchStore:
    """A fresh, migrated database with one login role; `url` is the role's, `admin` the superuser's."""

    def __init__(self, binary):
        admin = os.environ.get("DSH_ACP_TEST_PG")
        if not admin:
            raise SystemExit("FAIL: DSH_ACP_TEST_STORE=pg needs DSH_ACP_TEST_PG (run through ctest: the postgres fixture)")
        m = _URL.match(admin)
        if not m:
            raise SystemExit(f"FAIL: DSH_ACP_TEST_PG is no postgresql:// URL: {admin}")
        self.binary = binary
        self._parts = m
        tag = secrets.token_hex(4)
        self.db = f"dsh_suite_{tag}"
        self.role = f"person_{tag}"
        self.psql("postgres", f"CREATE DATABASE {self.db}")
        self.admin = self._url(m.group(2) or "postgres", self.db)
        self.url = self._url(self.role, self.db)
        try:
            self._run(["store", "migrate", self.admin])
            self.psql(self.db, f"CREATE ROLE {self.role} LOGIN IN ROLE dsh_acp_user")
        except BaseException:
            self.drop()
            raise

    def _url(self, role, db):
        m = self._parts
        return f"{m.group(1)}{role}@{m.group(3)}/{db}{m.group(5) or ''}"

    def psql(self, db, sql):
        url = self._url(self._parts.group(2) or "postgres", db)
        r = subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-XAtq", "-c", sql],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise AssertionError(f"psql failed: {r.stderr}\n{sql}")
        return r.stdout.strip()

    def _run(self, args):
        r = subprocess.run([self.binary] + args, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise AssertionError(f"dsh-acp {' '.join(args)}: exit {r.returncode}: {r.stdout}{r.stderr}")
        return r.stdout

    def seed(self, directory):
        """Copies every session of a file root in (as the role: the sessions are its own)."""
        if os.path.isdir(directory) and any(os.scandir(directory)):
            self._run(["store", "copy", directory, self.url])

    def export(self, directory=None):
        """Copies every session out into `directory` (a new temporary one by default); returns it.
        The caller removes it. A new root takes the layout of this run (DSH_ACP_STORE_GENERATION),
        as the sessions the server wrote take its shapes."""
        target = directory or tempfile.mkdtemp(prefix="dsh-pg-export-")
        generation = "0.1" if os.environ.get("DSH_ACP_STORE_GENERATION") == "0.1" else "45fc"
        self._run(["store", "copy", self.url, target, "--store-generation", generation])
        return target

    def turn_starts(self, session_id):
        """turn/start events the session holds now (0 before it exists)."""
        sid = session_id.replace("'", "''")
        return int(self.psql(self.db, f"SELECT count(*) FROM dsh_acp.events WHERE session_id = '{sid}' AND type = 'turn/start'"))

    def lock_waiters(self):
        """Writers of this database waiting for a session's lock (its session_locks row, another
        holds it): what blocked_flocks() counts for a file root."""
        return int(self.psql(self.db, "SELECT count(DISTINCT w.pid) FROM pg_locks w JOIN pg_locks r USING (pid) "
                                      "WHERE NOT w.granted AND r.granted AND r.locktype = 'relation' "
                                      "AND r.relation = 'dsh_acp.session_locks'::regclass"))

    def drop(self):
        self.psql("postgres", f"DROP DATABASE IF EXISTS {self.db} WITH (FORCE)")
        self.psql("postgres", f"DROP ROLE IF EXISTS {self.role}")


def remove(directory):
    shutil.rmtree(directory, ignore_errors=True)
