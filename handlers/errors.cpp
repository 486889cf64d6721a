#include "engine/engine.hpp"
#include "handlers/router.hpp"
#include "refs/errors.hpp"
#include "store/errors.hpp"
#include "support/log.hpp"

namespace acp::handlers {

jsonrpc::RpcError to_rpc_error(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const jsonrpc::RpcError& e) {
    return e;
  } catch (const engine::SessionNotFound& e) {
    return jsonrpc::resource_not_found(e.session_id());
  } catch (const engine::QueueFull& e) {
    return jsonrpc::prompt_queue_full(e.session_id(), engine::kMaxQueuedPrompts);
  } catch (const engine::ServerBusy& e) {
    return jsonrpc::prompt_budget_full(e.session_id(), e.held_bytes(), e.limit());
  } catch (const engine::ReadOnlySession& e) {
    return jsonrpc::invalid_params("/sessionId", e.what());
  } catch (const engine::InvalidInput& e) {
    return jsonrpc::invalid_params(e.path(), e.what());
  } catch (const engine::ProviderFailed& e) {
    // 401/403 name the provider (docs/decisions.md#errors-on-the-wire); its own message stays in the log's turn/end.
    if (e.code() == "AUTH_REQUIRED") return jsonrpc::auth_required(e.provider());
    return jsonrpc::provider_failure(e.code(), e.what(), e.http_status());
  } catch (const refs::SessionReferenceError& e) {
    return jsonrpc::invalid_params_code(e.code_name(), e.what(), e.parameter().empty() ? "" : "/" + e.parameter());
  } catch (const store::StoreCorrupt& e) {
    log::warn(std::string("unreadable session log: ") + e.what());
    return jsonrpc::log_corrupt(e.what());
  } catch (const store::FoldError& e) {
    log::warn(std::string("invalid session surface: ") + e.what());
    return jsonrpc::log_corrupt(std::string("invalid session surface: ") + e.what());
  } catch (const store::SessionBusy&) {
    return jsonrpc::session_busy();
  } catch (const store::SessionReadOnly& e) {
    return jsonrpc::invalid_params("/sessionId", e.what());
  } catch (const store::InvalidSessionId& e) {
    return jsonrpc::invalid_params("/sessionId", e.what());
  } catch (const store::SessionNotFound& e) {
    // Gone from the store while the request ran (another process deleted it): to the client the
    // same as a session that is not there.
    return jsonrpc::resource_not_found(e.id());
  } catch (const store::SessionExists& e) {
    log::warn(std::string("session id taken: ") + e.what());
    return jsonrpc::session_exists(e.id());
  } catch (const store::InvalidBatch& e) {
    // Our own records refused (never the client's params): a defect worth the error log.
    log::error(std::string("session log write refused: ") + e.what());
    return jsonrpc::write_refused(e.what());
  } catch (const std::exception& e) {
    // On purpose here too: EncodingMismatch and SharingUnsupported (a store that cannot serve),
    // ReadCancelled (only at shutdown), a plain StoreError (I/O), and everything not the store's.
    log::error(std::string("internal error: ") + e.what());
    return jsonrpc::internal(e.what());
  } catch (...) {
    log::error("internal error: unknown exception");
    return jsonrpc::internal("unknown exception");
  }
}

} // namespace acp::handlers
