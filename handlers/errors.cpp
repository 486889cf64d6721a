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
  } catch (const std::exception& e) {
    log::error(std::string("internal error: ") + e.what());
    return jsonrpc::internal(e.what());
  } catch (...) {
    log::error("internal error: unknown exception");
    return jsonrpc::internal("unknown exception");
  }
}

} // namespace acp::handlers
