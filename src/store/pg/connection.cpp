#include "store/pg/connection.hpp"

#include "store/pg/libpq_loader.hpp"
#include "store/pg/url.hpp"
#include "support/log.hpp"

#include <charconv>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <unordered_set>

#include <poll.h>

namespace acp::store::pg {
namespace {

/// libpq's functions. Only a connection made below gets as far as a result or a PGconn, and
/// connect() loads libpq first, so every call after it finds the table loaded.
const Libpq& pq() { return libpq(); }

/// libpq's messages end in '\n' and may run over several lines ("\n\tIs the server running...",
/// one line per host tried): one line, lines joined by "; ", runs of blanks collapsed.
std::string one_line(std::string_view text) {
  std::string out;
  bool blank = false, newline = false;
  for (char ch : text) {
    if (ch == '\n' || ch == '\r') {
      newline = true;
    } else if (ch == ' ' || ch == '\t') {
      blank = true;
    } else {
      if (!out.empty() && newline) out += "; ";
      else if (!out.empty() && blank) out += ' ';
      blank = newline = false;
      out += ch;
    }
  }
  return out;
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

/// The SQLSTATE of a failed connection attempt. libpq hands over only the text of the server's
/// startup error, so the cases the user must act on differently are recognised by that text.
std::string connect_sqlstate(PGconn* conn, std::string_view message) {
  if (pq().PQconnectionNeedsPassword(conn) || contains(message, "authentication failed")) return "28P01";
  if (contains(message, "database \"") && contains(message, "does not exist")) return "3D000";
  if (contains(message, "role \"") && contains(message, "does not exist")) return "28000";
  return "08001";
}

std::string connect_message(const std::string& name, PGconn* conn, const std::string& url) {
  std::string why = scrub_passwords(one_line(conn ? pq().PQerrorMessage(conn) : "out of memory"), url);
  std::string message = name + ": cannot connect: " + why;
  if (conn && pq().PQconnectionNeedsPassword(conn))
    message += " (give the password through PGPASSFILE, a service file or PGPASSWORD)";
  return message;
}

std::string timeout_option(std::string_view setting, std::chrono::milliseconds ms) {
  return std::string("-c ").append(setting).append("=").append(std::to_string(ms.count()));
}

} // namespace

// ---- PgResult ----

PgResult& PgResult::operator=(PgResult&& o) noexcept {
  if (this != &o) {
    if (r_) pq().PQclear(r_);
    r_ = std::exchange(o.r_, nullptr);
  }
  return *this;
}

PgResult::~PgResult() {
  if (r_) pq().PQclear(r_);
}

int PgResult::rows() const noexcept { return r_ ? pq().PQntuples(r_) : 0; }
int PgResult::columns() const noexcept { return r_ ? pq().PQnfields(r_) : 0; }
bool PgResult::is_null(int row, int col) const noexcept { return pq().PQgetisnull(r_, row, col) != 0; }

std::string_view PgResult::value(int row, int col) const noexcept {
  return {pq().PQgetvalue(r_, row, col), static_cast<std::size_t>(pq().PQgetlength(r_, row, col))};
}

std::optional<std::string_view> PgResult::get(int row, int col) const noexcept {
  if (is_null(row, col)) return std::nullopt;
  return value(row, col);
}

std::int64_t PgResult::int64(int row, int col) const {
  std::string_view text = value(row, col);
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    throw StoreError("not an integer in column " + std::to_string(col) + ": \"" + std::string(text) + "\"");
  return v;
}

std::int64_t PgResult::affected() const noexcept {
  const char* n = r_ ? pq().PQcmdTuples(r_) : "";
  std::int64_t v = 0;
  std::from_chars(n, n + std::char_traits<char>::length(n), v);
  return v;
}

// ---- PgConnection ----

// The server's notices and warnings ("schema ... already exists, skipping", an unlock of a lock not
// held) go to the process log with the store's name, not to libpq's default, stderr: some ACP
// clients take any stderr output for an error.
// libpq's own notices (no severity field from a server) are kept at warn: they tell of the protocol.
static void log_notice(const std::string& name, const PGresult* r) noexcept {
  try {
    const char* severity = pq().PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
    const char* text = pq().PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    const std::string line = name + ": " + (severity ? severity : "libpq") + ": " +
                             one_line(text ? text : pq().PQresultErrorMessage(r));
    if (!severity || std::string_view(severity) == "WARNING") log::warn(line);
    else log::info(line);
  } catch (...) {
    // Out of memory: the notice is dropped (an exception must not unwind through libpq).
  }
}

struct PgConnection::State {
  PGconn* conn = nullptr;
  std::string name;
  std::mutex cancel_mutex;            // guards canceller against reset() on another thread
  PGcancel* canceller = nullptr;
  std::unordered_set<std::string> prepared;  // statement names prepared on this server session
  // The server said FATAL (or PANIC) outside a statement: it is ending this session, and the end of
  // the stream may come a moment after the message (the backend closes its socket last). libpq
  // hands such a message to the notice receiver when it arrives behind a statement's result.
  bool ended_by_server = false;

  static void notice(void* self, const PGresult* r) noexcept {
    auto* s = static_cast<State*>(self);
    const char* severity = pq().PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
    if (severity && (std::string_view(severity) == "FATAL" || std::string_view(severity) == "PANIC"))
      s->ended_by_server = true;
    log_notice(s->name, r);
  }

  ~State() {
    if (canceller) pq().PQfreeCancel(canceller);
    if (conn) pq().PQfinish(conn);
  }

  void refresh_canceller() {
    std::lock_guard lock(cancel_mutex);
    if (canceller) pq().PQfreeCancel(canceller);
    canceller = pq().PQgetCancel(conn);
  }

  /// The PgError of a failed call: PostgreSQL's SQLSTATE and primary message, or libpq's message.
  PgError error(const PGresult* r) const {
    const char* state = r ? pq().PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    const char* primary = r ? pq().PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    std::string sqlstate = state ? state : (pq().PQstatus(conn) == CONNECTION_BAD ? "08006" : "");
    std::string message = primary ? primary : one_line(pq().PQerrorMessage(conn));
    if (message.empty()) message = "unknown libpq failure";
    return PgError(name + ": " + message, std::move(sqlstate));
  }

  PgResult check(PGresult* r) const {
    PgResult result(r);
    switch (r ? pq().PQresultStatus(r) : PGRES_FATAL_ERROR) {
    case PGRES_COMMAND_OK:
    case PGRES_TUPLES_OK:
    case PGRES_EMPTY_QUERY:
      return result;
    default:
      throw error(r);
    }
  }
};

PgConnection::PgConnection(std::unique_ptr<State> s) noexcept : s_(std::move(s)) {}
PgConnection::PgConnection(PgConnection&&) noexcept = default;
PgConnection& PgConnection::operator=(PgConnection&&) noexcept = default;
PgConnection::~PgConnection() = default;

PgConnection PgConnection::connect(const std::string& url, const ConnectOptions& options) {
  return connect(url, options, SocketWait());
}

namespace {

// What the URL sets itself: it wins over our defaults.
struct UrlSettings {
  std::string options;  ///< the URL's server options
  int timeout_s = 0;    ///< connect_timeout, the URL's else ours
  std::unordered_set<std::string> keys;
};

// Parse first: a clear error for a malformed URL, and the URL's own options and connect_timeout.
UrlSettings url_settings(const std::string& url, const std::string& name, const ConnectOptions& options) {
  char* parse_error = nullptr;
  PQconninfoOption* parsed = pq().PQconninfoParse(url.c_str(), &parse_error);
  if (!parsed) {
    std::string why = parse_error ? scrub_passwords(one_line(parse_error), url) : "out of memory";
    pq().PQfreemem(parse_error);
    throw PgError(name + ": invalid connection URL: " + why, "");
  }
  UrlSettings u;
  u.timeout_s = options.connect_timeout_s;
  for (PQconninfoOption* o = parsed; o->keyword; ++o) {
    if (!o->val) continue;
    if (std::string_view(o->keyword) == "options") u.options = o->val;
    if (std::string_view(o->keyword) == "connect_timeout") u.timeout_s = std::atoi(o->val);
    u.keys.insert(o->keyword);
  }
  pq().PQconninfoFree(parsed);
  return u;
}

// The keywords and values PQconnectStartParams takes (null-terminated lists), pointing into this
// object's strings: it stays where it was made.
struct ConnectParams {
  ConnectParams(const std::string& url, const ConnectOptions& options, const UrlSettings& u);
  ConnectParams(const ConnectParams&) = delete;
  ConnectParams& operator=(const ConnectParams&) = delete;

  std::string server_options;
  std::string connect_timeout;
  std::vector<const char*> keys, values;
};

ConnectParams::ConnectParams(const std::string& url, const ConnectOptions& options, const UrlSettings& u) {
  // Our settings follow the URL's options so they apply; the URL's application_name wins over ours.
  server_options = u.options;
  if (options.statement_timeout.count() > 0)
    server_options += (server_options.empty() ? "" : " ") + timeout_option("statement_timeout", options.statement_timeout);
  if (options.lock_timeout.count() > 0)
    server_options += (server_options.empty() ? "" : " ") + timeout_option("lock_timeout", options.lock_timeout);
  connect_timeout = std::to_string(options.connect_timeout_s);

  // Lines travel as UTF-8 whatever the URL or PGCLIENTENCODING say: after the URL, so this wins.
  keys = {"dbname", "fallback_application_name", "client_encoding"};
  values = {url.c_str(), options.application_name.c_str(), "UTF8"};
  if (!server_options.empty()) keys.push_back("options"), values.push_back(server_options.c_str());
  if (!u.keys.contains("connect_timeout") && options.connect_timeout_s > 0)
    keys.push_back("connect_timeout"), values.push_back(connect_timeout.c_str());
  // Over TCP, a peer that vanished without a word (a host lost, a dropped NAT flow) is noticed by
  // keepalives and unacknowledged sends within about half a minute, not the system's two hours: a
  // call blocked on it fails, and the listener relists. Unix sockets ignore these.
  static constexpr std::pair<const char*, const char*> kDeadPeer[] = {
      {"keepalives", "1"}, {"keepalives_idle", "10"}, {"keepalives_interval", "5"}, {"keepalives_count", "3"},
      {"tcp_user_timeout", "30000"}};
  for (const auto& [key, value] : kDeadPeer)
    if (!u.keys.contains(key)) keys.push_back(key), values.push_back(value);
  keys.push_back(nullptr), values.push_back(nullptr);
}

// Without a caller's wait, connect_timeout bounds the whole attempt (as libpq's blocking connect
// bounds each host's: 0 waits forever, 1 means 2). `timed_out` is set when the deadline passed.
PgConnection::SocketWait deadline_wait(int timeout_s, bool& timed_out) {
  const auto deadline = timeout_s > 0 ? std::chrono::steady_clock::now() + std::chrono::seconds(std::max(timeout_s, 2))
                                      : std::chrono::steady_clock::time_point::max();
  return [deadline, &timed_out](int socket, bool write) {
    pollfd p{socket, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    for (;;) {
      int ms = -1;
      if (deadline != std::chrono::steady_clock::time_point::max()) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        ms = static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, std::numeric_limits<int>::max()));
      }
      const int n = ::poll(&p, 1, ms);
      if (n > 0 || (n < 0 && errno != EINTR)) return true;  // PQconnectPoll reports a socket error
      if (n == 0) {
        timed_out = true;
        return false;
      }
    }
  };
}

} // namespace

PgConnection PgConnection::connect(const std::string& url, const ConnectOptions& options, const SocketWait& wait) {
  auto s = std::make_unique<State>();
  s->name = redact_url(url);
  try {
    libpq();
  } catch (const StoreError& e) {
    throw PgError(s->name + ": " + e.what(), "");
  }
  const UrlSettings u = url_settings(url, s->name, options);
  const ConnectParams params(url, options, u);

  // Started without blocking either way, so the notice receiver is in place before the server's
  // first message (a startup WARNING such as a collation version mismatch comes with every
  // connection).
  bool timed_out = false;
  const SocketWait until_deadline = deadline_wait(u.timeout_s, timed_out);
  s->conn = pq().PQconnectStartParams(params.keys.data(), params.values.data(), /*expand_dbname=*/1);
  if (s->conn) pq().PQsetNoticeReceiver(s->conn, &State::notice, s.get());
  PostgresPollingStatusType step = PGRES_POLLING_WRITING;
  while (s->conn && pq().PQstatus(s->conn) != CONNECTION_BAD && step != PGRES_POLLING_OK && step != PGRES_POLLING_FAILED) {
    if (!(wait ? wait : until_deadline)(pq().PQsocket(s->conn), step == PGRES_POLLING_WRITING)) {
      if (timed_out) throw PgError(s->name + ": cannot connect: timeout expired", "08001");
      throw PgError(s->name + ": connecting stopped", "57014");
    }
    step = pq().PQconnectPoll(s->conn);
  }
  if (!s->conn || pq().PQstatus(s->conn) != CONNECTION_OK) {
    std::string message = connect_message(s->name, s->conn, url);
    throw PgError(message, s->conn ? connect_sqlstate(s->conn, pq().PQerrorMessage(s->conn)) : "08001");
  }
  s->refresh_canceller();
  return PgConnection(std::move(s));
}

const std::string& PgConnection::name() const noexcept {
  static const std::string none;
  return s_ ? s_->name : none;
}

PgResult PgConnection::exec(std::string_view sql, std::initializer_list<Param> params) {
  return exec(sql, std::vector<Param>(params));
}

namespace {

// Text-format parameters are NUL-terminated strings: copied into one buffer.
struct TextParams {
  std::string buffer;
  std::vector<const char*> values;

  explicit TextParams(const std::vector<Param>& params) {
    std::size_t total = 0;
    for (const Param& p : params) total += p ? p->size() + 1 : 0;
    buffer.reserve(total);
    std::vector<std::size_t> offsets;
    offsets.reserve(params.size());
    for (const Param& p : params) {
      offsets.push_back(buffer.size());
      if (p) buffer.append(*p).push_back('\0');
    }
    values.reserve(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) values.push_back(params[i] ? buffer.data() + offsets[i] : nullptr);
  }
  int count() const { return static_cast<int>(values.size()); }
};

} // namespace

PgResult PgConnection::exec(std::string_view sql, const std::vector<Param>& params) {
  const std::string text(sql);
  const TextParams p(params);
  return s_->check(pq().PQexecParams(s_->conn, text.c_str(), p.count(), nullptr, p.values.data(), nullptr, nullptr, 0));
}

void PgConnection::send(std::string_view sql) {
  if (!pq().PQsendQuery(s_->conn, std::string(sql).c_str())) throw s_->error(nullptr);
}

void PgConnection::send(std::string_view sql, const std::vector<Param>& params) {
  const std::string text(sql);
  const TextParams p(params);
  if (!pq().PQsendQueryParams(s_->conn, text.c_str(), p.count(), nullptr, p.values.data(), nullptr, nullptr, 0))
    throw s_->error(nullptr);
}

bool PgConnection::result_ready() {
  if (!pq().PQconsumeInput(s_->conn)) throw s_->error(nullptr);
  return !pq().PQisBusy(s_->conn);
}

PgResult PgConnection::receive() {
  PGresult* first = pq().PQgetResult(s_->conn);
  // The statement's end: libpq hands out results until a null one, which must be taken too.
  while (PGresult* more = pq().PQgetResult(s_->conn)) pq().PQclear(more);
  return s_->check(first);
}

PgResult PgConnection::exec_prepared(const std::string& name, std::string_view sql, const std::vector<unsigned>& types,
                                     const std::vector<Param>& binary_params) {
  if (!s_->prepared.contains(name)) {
    std::vector<Oid> oids(types.begin(), types.end());
    s_->check(pq().PQprepare(s_->conn, name.c_str(), std::string(sql).c_str(), static_cast<int>(oids.size()), oids.data()));
    s_->prepared.insert(name);
  }
  const int n = static_cast<int>(binary_params.size());
  std::vector<const char*> values(binary_params.size());
  std::vector<int> lengths(binary_params.size()), formats(binary_params.size(), 1);
  for (std::size_t i = 0; i < binary_params.size(); ++i) {
    if (!binary_params[i]) continue;
    values[i] = binary_params[i]->data();
    lengths[i] = static_cast<int>(binary_params[i]->size());
  }
  return s_->check(pq().PQexecPrepared(s_->conn, name.c_str(), n, values.data(), lengths.data(), formats.data(), 0));
}

void PgConnection::exec_script(std::string_view sql) { s_->check(pq().PQexec(s_->conn, std::string(sql).c_str())); }

PgResult PgConnection::exec_last(std::string_view sql) { return s_->check(pq().PQexec(s_->conn, std::string(sql).c_str())); }

std::string PgConnection::literal(std::string_view text) const {
  char* quoted = pq().PQescapeLiteral(s_->conn, text.data(), text.size());
  if (!quoted) throw s_->error(nullptr);
  std::string out(quoted);
  pq().PQfreemem(quoted);
  return out;
}

bool PgConnection::untouched() const noexcept {
  if (!ok() || s_->ended_by_server) return false;
  pollfd p{socket(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

bool PgConnection::in_transaction() const noexcept {
  return s_ && pq().PQtransactionStatus(s_->conn) != PQTRANS_IDLE;
}

bool PgConnection::ok() const noexcept { return s_ && pq().PQstatus(s_->conn) == CONNECTION_OK; }

void PgConnection::reset() {
  s_->prepared.clear();  // a new server session knows none
  s_->ended_by_server = false;
  pq().PQreset(s_->conn);
  if (pq().PQstatus(s_->conn) != CONNECTION_OK)
    throw PgError(s_->name + ": cannot reconnect: " + one_line(pq().PQerrorMessage(s_->conn)), "08001");
  s_->refresh_canceller();
}

int PgConnection::socket() const noexcept { return s_ ? pq().PQsocket(s_->conn) : -1; }

void PgConnection::cancel() noexcept {
  if (!s_) return;
  std::lock_guard lock(s_->cancel_mutex);
  if (!s_->canceller) return;
  char why[256];
  pq().PQcancel(s_->canceller, why, sizeof why);  // best effort: the interrupted call reports the outcome
}

std::vector<Notification> PgConnection::take_notifications() {
  if (!pq().PQconsumeInput(s_->conn)) throw s_->error(nullptr);
  std::vector<Notification> out;
  while (PGnotify* n = pq().PQnotifies(s_->conn)) {
    out.push_back({n->relname, n->extra, n->be_pid});
    pq().PQfreemem(n);
  }
  return out;
}

std::string PgConnection::user() const { return pq().PQuser(s_->conn); }

PGconn* PgConnection::native() const noexcept { return s_ ? s_->conn : nullptr; }

// ---- Transaction ----

Transaction::Transaction(PgConnection& c, std::string_view begin) : c_(c) { c_.exec(begin); }

Transaction::~Transaction() {
  if (!open_) return;
  try {
    c_.exec("ROLLBACK");
  } catch (const StoreError&) {
    // The connection is gone: the server rolls back on its own.
  }
}

void Transaction::commit() {
  open_ = false;
  // COMMIT of a transaction that already failed succeeds with the tag ROLLBACK.
  PgResult r = c_.exec("COMMIT");
  if (std::string_view(pq().PQcmdStatus(r.native())) == "ROLLBACK")
    throw PgError(c_.name() + ": the transaction failed earlier and was rolled back", "25P02");
}

} // namespace acp::store::pg
