#include "handlers/handlers.hpp"
#include "handlers/router.hpp"
#include "protocol/methods.hpp"

namespace acp::handlers {

void bind_all(Router& router) {
  // clang-format off
  router.bind(methods::initialize,               &initialize);
  router.bind_notification(methods::session_cancel, &session_cancel);
  router.bind(methods::session_new,              &session_new);
  router.bind(methods::session_prompt,           &session_prompt);
  // clang-format on
}

} // namespace acp::handlers
