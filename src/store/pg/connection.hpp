// One libpq connection (PGconn) and its results, with errors that name the store by its redacted URL.
// Calls block: use them off the connection thread. One PgConnection is used by one thread at a
// time, except cancel(), which any thread may call to interrupt a blocked call.
// Credentials come only the libpq ways (PGPASSFILE, service file, PGPASSWORD): nothing here reads
// a password.
#pragma once

#include "store/errors.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace acp::store::pg {

/// A failure reported by PostgreSQL or libpq. what() is one line: "<redacted URL>: <primary
/// message>". sqlstate() is PostgreSQL's code when the server sent one; for failures libpq detects
/// itself: "08001" cannot connect, "08006" connection lost, "28P01" authentication failed,
/// "3D000" database does not exist (the last two recognised from the server's startup message).
class PgError : public StoreError {
public:
  PgError(const std::string& message, std::string sqlstate) : StoreError(message), sqlstate_(std::move(sqlstate)) {}
  const std::string& sqlstate() const noexcept { return sqlstate_; }
  /// SQLSTATE class 08: the connection is gone (reconnect and retry the transaction).
  bool connection_lost() const noexcept { return sqlstate_.starts_with("08"); }

private:
  std::string sqlstate_;
};

struct ConnectOptions {
  /// Bounds every statement / every lock wait of the session (0: no limit). Set at connect through
  /// the `options` conninfo keyword (appended to any the URL has).
  std::chrono::milliseconds statement_timeout{30'000};
  std::chrono::milliseconds lock_timeout{5'000};
  /// libpq's connect_timeout in seconds (0: libpq's default, wait forever).
  int connect_timeout_s = 10;
  /// fallback_application_name: a URL's own application_name wins.
  std::string application_name = "dsh-acp";
};

/// The wait before the next attempt to reach a server after `last` (0: none yet): 50 ms, doubling
/// up to 1 s. The pool and the listener back off alike.
inline std::chrono::milliseconds next_backoff(std::chrono::milliseconds last) {
  using std::chrono::milliseconds;
  return last == milliseconds(0) ? milliseconds(50) : std::min(last * 2, milliseconds(1000));
}

/// A text-format query parameter; nullopt is SQL NULL.
using Param = std::optional<std::string_view>;

/// Owns one PGresult (move-only). Values are text format; views live as long as the result.
class PgResult {
public:
  PgResult() noexcept = default;
  explicit PgResult(PGresult* r) noexcept : r_(r) {}
  PgResult(PgResult&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
  PgResult& operator=(PgResult&& o) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  ~PgResult();

  int rows() const noexcept;
  int columns() const noexcept;
  bool is_null(int row, int col) const noexcept;
  /// The text of a value ("" for NULL).
  std::string_view value(int row, int col) const noexcept;
  /// value() or nullopt for NULL.
  std::optional<std::string_view> get(int row, int col) const noexcept;
  /// value() parsed as a (big)integer; throws StoreError when it is not one.
  std::int64_t int64(int row, int col) const;
  /// Rows an INSERT/UPDATE/DELETE touched (PQcmdTuples).
  std::int64_t affected() const noexcept;
  PGresult* native() const noexcept { return r_; }

private:
  PGresult* r_ = nullptr;
};

/// A notification received on a LISTENed channel.
struct Notification {
  std::string channel, payload;
  int backend_pid = 0;
};

/// One connection (move-only). Moving or destroying it while another thread calls cancel() is not
/// allowed.
class PgConnection {
public:
  /// Connects to `url` (a postgresql:// URL or a libpq conninfo string). Throws PgError with a one-line
  /// message naming the redacted URL: bad URL, server unreachable, authentication failed, database
  /// missing.
  static PgConnection connect(const std::string& url, const ConnectOptions& options = {});
  /// Waits until `socket` can be read (`write` false) or written; false: give up (stopped).
  using SocketWait = std::function<bool(int socket, bool write)>;
  /// connect() through libpq's non-blocking connect, waiting on the socket by `wait`: a caller
  /// that must stop at once (a shutdown) is not held for connect_timeout. Throws PgError
  /// (SQLSTATE 57014) when `wait` gives up.
  static PgConnection connect(const std::string& url, const ConnectOptions& options, const SocketWait& wait);

  PgConnection(PgConnection&&) noexcept;
  PgConnection& operator=(PgConnection&&) noexcept;
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;
  ~PgConnection();

  /// The store's name in messages: the redacted URL.
  const std::string& name() const noexcept;

  /// One statement through PQexecParams, text-format parameters $1, $2, ... Returns the result of a
  /// command or query; throws PgError otherwise (the message names the store).
  PgResult exec(std::string_view sql, std::initializer_list<Param> params = {});
  PgResult exec(std::string_view sql, const std::vector<Param>& params);
  /// Sends one statement without parameters and returns at once; its result is taken by receive()
  /// before anything else runs on the connection (so the server works while the caller does).
  void send(std::string_view sql);
  /// send() of a statement with text-format parameters $1, $2, ...
  void send(std::string_view sql, const std::vector<Param>& params);
  /// Reads what the server sent without blocking: true once receive() would not block. Wait for
  /// more with poll() on socket(). Throws PgError when the connection is lost.
  bool result_ready();
  /// The result of the statement send() sent (PgError as exec()).
  PgResult receive();
  /// A statement prepared once per connection under `name` (again after a reset), then executed with
  /// binary-format parameters (PostgreSQL's send format of each `types` OID; nullopt is NULL): no
  /// parse or plan per call, and no copy or quoting of the values.
  PgResult exec_prepared(const std::string& name, std::string_view sql, const std::vector<unsigned>& types,
                         const std::vector<Param>& binary_params);
  /// Several ';'-separated statements without parameters (simple query protocol), e.g. a schema
  /// script. Throws PgError at the first failing statement.
  void exec_script(std::string_view sql);
  /// exec_script() returning the last statement's result: several statements in one round trip.
  PgResult exec_last(std::string_view sql);
  /// `text` as an SQL string literal (quoted and escaped for this connection), for exec_last().
  std::string literal(std::string_view text) const;
  /// True while nothing has arrived unasked: a server that ended the session (a FATAL message, the
  /// end of the stream) has spoken; so has one whose FATAL libpq took in behind a statement's result
  /// (its socket may still be open). Does not block. For a connection with no statement pending.
  bool untouched() const noexcept;
  /// Inside a transaction block (PQtransactionStatus is not idle).
  bool in_transaction() const noexcept;

  /// True while libpq considers the connection up (PQstatus == CONNECTION_OK). A connection lost
  /// under a call is noticed by that call (PgError::connection_lost()).
  bool ok() const noexcept;
  /// Reconnects with the same parameters (PQreset). Throws PgError when that fails.
  void reset();
  /// The socket, for waiting on notifications; -1 when not connected.
  int socket() const noexcept;
  /// Asks the server to cancel the statement running on this connection, from any thread (a stop
  /// token's callback); the blocked call then throws PgError (SQLSTATE 57014). Best effort: returns
  /// without effect when nothing runs or the server cannot be reached.
  void cancel() noexcept;

  /// Reads what the server sent without blocking and returns the notifications received so far
  /// (LISTEN first). Wait for more with poll() on socket(). Throws PgError when the connection is lost.
  std::vector<Notification> take_notifications();

  /// The PostgreSQL role this connection is logged in as (current_user at connect).
  std::string user() const;
  PGconn* native() const noexcept;

private:
  struct State;
  explicit PgConnection(std::unique_ptr<State> s) noexcept;
  std::unique_ptr<State> s_;
};

/// BEGIN on construction; ROLLBACK on destruction unless commit() succeeded. A failed ROLLBACK (the
/// connection is gone) is ignored: the server rolls the transaction back anyway.
class Transaction {
public:
  /// `begin`: the statement that opens it ("BEGIN", "BEGIN ISOLATION LEVEL SERIALIZABLE", ...).
  explicit Transaction(PgConnection& c, std::string_view begin = "BEGIN");
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();
  /// COMMIT; throws PgError (then the transaction is over: nothing was committed).
  void commit();

private:
  PgConnection& c_;
  bool open_ = true;
};

} // namespace acp::store::pg
