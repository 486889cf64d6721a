// libpq opened at run time, when a PostgreSQL store is first touched, instead of linked: linked, the
// dynamic loader mapped libpq and the ~20 libraries it needs (Kerberos, LDAP, SASL, GnuTLS, ...) at
// every start of the server, PostgreSQL or not, which took start-up from 2 ms to 17 (issue 31,
// bench/README.md). Its functions are resolved once into one table; connection.cpp and url.cpp call
// libpq through it only, and the product binary has no libpq symbol to bind at start.
// libpq-fe.h still gives the types: the table's members have the exact types of its declarations.
#pragma once

#include <libpq-fe.h>

// Every libpq function the store calls. One more call: one more line here.
#define DSH_LIBPQ_FUNCTIONS(X) \
  X(PQcancel) \
  X(PQclear) \
  X(PQcmdStatus) \
  X(PQcmdTuples) \
  X(PQconnectPoll) \
  X(PQconnectStartParams) \
  X(PQconnectionNeedsPassword) \
  X(PQconninfoFree) \
  X(PQconninfoParse) \
  X(PQconsumeInput) \
  X(PQerrorMessage) \
  X(PQescapeLiteral) \
  X(PQexec) \
  X(PQexecParams) \
  X(PQexecPrepared) \
  X(PQfinish) \
  X(PQfreeCancel) \
  X(PQfreemem) \
  X(PQgetCancel) \
  X(PQgetResult) \
  X(PQgetisnull) \
  X(PQgetlength) \
  X(PQgetvalue) \
  X(PQisBusy) \
  X(PQnfields) \
  X(PQnotifies) \
  X(PQntuples) \
  X(PQprepare) \
  X(PQreset) \
  X(PQresultErrorField) \
  X(PQresultErrorMessage) \
  X(PQresultStatus) \
  X(PQsendQuery) \
  X(PQsendQueryParams) \
  X(PQsetNoticeReceiver) \
  X(PQsocket) \
  X(PQstatus) \
  X(PQtransactionStatus) \
  X(PQuser)

namespace acp::store::pg {

/// libpq's functions, under their own names.
struct Libpq {
#define DSH_LIBPQ_POINTER(name) decltype(&::name) name = nullptr;
  DSH_LIBPQ_FUNCTIONS(DSH_LIBPQ_POINTER)
#undef DSH_LIBPQ_POINTER
};

/// The file opened: $DSH_ACP_LIBPQ when set (a path, or a name the dynamic loader looks up), else
/// libpq.so.5, the soname of every libpq since PostgreSQL 8.0 (Debian's package libpq5).
const char* libpq_file() noexcept;

/// The table, loaded by the first call of the process (thread-safe). Throws StoreError saying which
/// file or function could not be loaded, and that PostgreSQL stores need libpq; every later call
/// throws the same (the library is opened once).
const Libpq& libpq();

/// libpq(), or null when it cannot be loaded: for the URL checks of url.cpp, which fall back to
/// their text-only reading (whatever would use the store then fails with libpq()'s error).
const Libpq* libpq_if_loadable() noexcept;

} // namespace acp::store::pg
