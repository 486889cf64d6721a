// OpenSSL opened at run time, by the first HTTPS request, instead of linked into the server.
// Linked statically, OpenSSL's pointer tables were 90 of the ~130 pages the dynamic loader had to
// relocate at every start (~100 page faults, ~1.7 ms of CPU here), for every editor that spawns us,
// an HTTPS model or not (issue 31, bench/README.md); linked shared, the loader would map and
// relocate libssl and libcrypto at every start instead.
//
// This file defines the OpenSSL functions the provider and MCP servers over https call (the
// connection of src/net, the TLS streams of openai_provider.cpp and src/mcp/http.cpp: Asio's SSL
// stream is header-only, compiled into them), each forwarding to libssl.so.3's own, resolved once at
// the first call. A function missing here is an undefined reference when dsh-acp links; one too many
// costs nothing. Linked into dsh-acp (and the tests of the whole server) only: llm_tests and the
// provider bench link OpenSSL itself, whose definitions these would clash with.
// Every OpenSSL 3 release keeps the soname libssl.so.3 and these functions' ABI.
#include "llm/provider.hpp"
#include "support/shared_library.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>


#include <cstdlib>
#include <optional>
#include <string>

// Every OpenSSL function the provider calls: libssl's and, through it, libcrypto's.
#define DSH_OPENSSL_FUNCTIONS(X) \
  X(BIO_ctrl) \
  X(BIO_ctrl_pending) \
  X(BIO_free) \
  X(BIO_new_bio_pair) \
  X(BIO_read) \
  X(BIO_write) \
  X(ERR_clear_error) \
  X(ERR_get_error) \
  X(ERR_lib_error_string) \
  X(ERR_reason_error_string) \
  X(SSL_CTX_ctrl) \
  X(SSL_CTX_free) \
  X(SSL_CTX_get_default_passwd_cb_userdata) \
  X(SSL_CTX_get_ex_data) \
  X(SSL_CTX_get_verify_callback) \
  X(SSL_CTX_load_verify_locations) \
  X(SSL_CTX_new) \
  X(SSL_CTX_set_default_passwd_cb_userdata) \
  X(SSL_CTX_set_default_verify_paths) \
  X(SSL_CTX_set_ex_data) \
  X(SSL_CTX_set_options) \
  X(SSL_CTX_set_verify) \
  X(SSL_accept) \
  X(SSL_connect) \
  X(SSL_ctrl) \
  X(SSL_free) \
  X(SSL_get0_param) \
  X(SSL_get_error) \
  X(SSL_get_ex_data) \
  X(SSL_get_shutdown) \
  X(SSL_get_verify_result) \
  X(SSL_new) \
  X(SSL_read) \
  X(SSL_set1_host) \
  X(SSL_set_bio) \
  X(SSL_set_ex_data) \
  X(SSL_set_hostflags) \
  X(SSL_write) \
  X(TLS_client_method) \
  X(TLS_method) \
  X(TLS_server_method) \
  X(X509_VERIFY_PARAM_set1_ip_asc) \
  X(X509_verify_cert_error_string)

namespace {

struct OpenSsl {
#define DSH_OPENSSL_POINTER(name) decltype(&::name) name = nullptr;
  DSH_OPENSSL_FUNCTIONS(DSH_OPENSSL_POINTER)
#undef DSH_OPENSSL_POINTER
};

struct Loaded {
  std::optional<OpenSsl> table;
  std::string error;  ///< why table is empty
};

Loaded load() {
  Loaded out;
  // DSH_ACP_LIBSSL: another file to open (a path, or a name the dynamic loader looks up).
  const char* named = std::getenv("DSH_ACP_LIBSSL");
  const char* file = named && *named ? named : "libssl.so.3";
  // A missing dependency (libcrypto) fails here, once (support/shared_library.hpp).
  void* handle = acp::support::open_shared_library(file, out.error);
  if (!handle) return out;
  OpenSsl t;
  // dlsym of the libssl handle also searches what it depends on: libcrypto's functions are found too.
#define DSH_OPENSSL_RESOLVE(name) acp::support::resolve_symbol(handle, #name, t.name, out.error);
  DSH_OPENSSL_FUNCTIONS(DSH_OPENSSL_RESOLVE)
#undef DSH_OPENSSL_RESOLVE
  if (out.error.empty()) out.table = t;
  return out;
}

/// The table, loaded by the first call (thread-safe). The first OpenSSL calls are the provider's TLS
/// context set-up (tls_context(): TLS_client_method, SSL_CTX_new), which turns this error into the
/// request's failure; nothing calls OpenSSL without a context, so every later call finds the table.
const OpenSsl& openssl() {
  static const Loaded once = load();
  if (!once.table)
    throw acp::llm::ProviderError("PROVIDER_NETWORK",
                                  "HTTPS needs OpenSSL's libssl.so.3 (Debian's package libssl3), which cannot be "
                                  "loaded: " + once.error);
  return *once.table;
}

} // namespace

extern "C" {

long BIO_ctrl(BIO* bp, int cmd, long larg, void* parg) { return openssl().BIO_ctrl(bp, cmd, larg, parg); }
size_t BIO_ctrl_pending(BIO* b) { return openssl().BIO_ctrl_pending(b); }
int BIO_free(BIO* a) { return openssl().BIO_free(a); }
int BIO_new_bio_pair(BIO** bio1, size_t writebuf1, BIO** bio2, size_t writebuf2) {
  return openssl().BIO_new_bio_pair(bio1, writebuf1, bio2, writebuf2);
}
int BIO_read(BIO* b, void* data, int dlen) { return openssl().BIO_read(b, data, dlen); }
int BIO_write(BIO* b, const void* data, int dlen) { return openssl().BIO_write(b, data, dlen); }
void ERR_clear_error(void) { openssl().ERR_clear_error(); }
unsigned long ERR_get_error(void) { return openssl().ERR_get_error(); }
const char* ERR_lib_error_string(unsigned long e) { return openssl().ERR_lib_error_string(e); }
const char* ERR_reason_error_string(unsigned long e) { return openssl().ERR_reason_error_string(e); }
long SSL_CTX_ctrl(SSL_CTX* ctx, int cmd, long larg, void* parg) { return openssl().SSL_CTX_ctrl(ctx, cmd, larg, parg); }
void SSL_CTX_free(SSL_CTX* ctx) { openssl().SSL_CTX_free(ctx); }
void* SSL_CTX_get_default_passwd_cb_userdata(SSL_CTX* ctx) {
  return openssl().SSL_CTX_get_default_passwd_cb_userdata(ctx);
}
void* SSL_CTX_get_ex_data(const SSL_CTX* ssl, int idx) { return openssl().SSL_CTX_get_ex_data(ssl, idx); }
SSL_verify_cb SSL_CTX_get_verify_callback(const SSL_CTX* ctx) { return openssl().SSL_CTX_get_verify_callback(ctx); }
int SSL_CTX_load_verify_locations(SSL_CTX* ctx, const char* CAfile, const char* CApath) {
  return openssl().SSL_CTX_load_verify_locations(ctx, CAfile, CApath);
}
SSL_CTX* SSL_CTX_new(const SSL_METHOD* meth) { return openssl().SSL_CTX_new(meth); }
void SSL_CTX_set_default_passwd_cb_userdata(SSL_CTX* ctx, void* u) {
  openssl().SSL_CTX_set_default_passwd_cb_userdata(ctx, u);
}
int SSL_CTX_set_default_verify_paths(SSL_CTX* ctx) { return openssl().SSL_CTX_set_default_verify_paths(ctx); }
int SSL_CTX_set_ex_data(SSL_CTX* ssl, int idx, void* data) { return openssl().SSL_CTX_set_ex_data(ssl, idx, data); }
uint64_t SSL_CTX_set_options(SSL_CTX* ctx, uint64_t op) { return openssl().SSL_CTX_set_options(ctx, op); }
void SSL_CTX_set_verify(SSL_CTX* ctx, int mode, SSL_verify_cb callback) {
  openssl().SSL_CTX_set_verify(ctx, mode, callback);
}
int SSL_accept(SSL* ssl) { return openssl().SSL_accept(ssl); }
int SSL_connect(SSL* ssl) { return openssl().SSL_connect(ssl); }
long SSL_ctrl(SSL* ssl, int cmd, long larg, void* parg) { return openssl().SSL_ctrl(ssl, cmd, larg, parg); }
void SSL_free(SSL* ssl) { openssl().SSL_free(ssl); }
X509_VERIFY_PARAM* SSL_get0_param(SSL* ssl) { return openssl().SSL_get0_param(ssl); }
int SSL_get_error(const SSL* s, int ret_code) { return openssl().SSL_get_error(s, ret_code); }
void* SSL_get_ex_data(const SSL* ssl, int idx) { return openssl().SSL_get_ex_data(ssl, idx); }
int SSL_get_shutdown(const SSL* ssl) { return openssl().SSL_get_shutdown(ssl); }
long SSL_get_verify_result(const SSL* ssl) { return openssl().SSL_get_verify_result(ssl); }
SSL* SSL_new(SSL_CTX* ctx) { return openssl().SSL_new(ctx); }
int SSL_read(SSL* ssl, void* buf, int num) { return openssl().SSL_read(ssl, buf, num); }
int SSL_set1_host(SSL* s, const char* hostname) { return openssl().SSL_set1_host(s, hostname); }
void SSL_set_bio(SSL* s, BIO* rbio, BIO* wbio) { openssl().SSL_set_bio(s, rbio, wbio); }
int SSL_set_ex_data(SSL* ssl, int idx, void* data) { return openssl().SSL_set_ex_data(ssl, idx, data); }
void SSL_set_hostflags(SSL* s, unsigned int flags) { openssl().SSL_set_hostflags(s, flags); }
int SSL_write(SSL* ssl, const void* buf, int num) { return openssl().SSL_write(ssl, buf, num); }
const SSL_METHOD* TLS_client_method(void) { return openssl().TLS_client_method(); }
const SSL_METHOD* TLS_method(void) { return openssl().TLS_method(); }
const SSL_METHOD* TLS_server_method(void) { return openssl().TLS_server_method(); }
int X509_VERIFY_PARAM_set1_ip_asc(X509_VERIFY_PARAM* param, const char* ipasc) {
  return openssl().X509_VERIFY_PARAM_set1_ip_asc(param, ipasc);
}
const char* X509_verify_cert_error_string(long n) { return openssl().X509_verify_cert_error_string(n); }

} // extern "C"
