#include "handlers/handlers.hpp"
#include "handlers/router.hpp"
#include "protocol/methods.hpp"

namespace acp::handlers {

void bind_all(Router& router) {
  // clang-format off
  router.bind(methods::dsh_session_reference_candidates, &dsh_session_reference_candidates);
  router.bind(methods::initialize,                  &initialize);
  router.bind(methods::authenticate,                &authenticate);
  router.bind(methods::logout,                      &logout);
  router.bind_notification(methods::session_cancel, &session_cancel);
  router.bind(methods::session_cancel,              &session_cancel_request);  // clients that send it with an id
  router.bind(methods::session_close,               &session_close);
  router.bind(methods::session_delete,              &session_delete);
  router.bind(methods::session_fork,                &session_fork);
  router.bind(methods::session_list,                &session_list);
  router.bind(methods::session_load,                &session_load);
  router.bind(methods::session_new,                 &session_new);
  router.bind(methods::session_prompt,              &session_prompt);
  router.bind(methods::session_resume,              &session_resume);
  router.bind(methods::session_set_config_option,   &session_set_config_option);
  router.bind(methods::session_set_mode,            &session_set_mode);
  // clang-format on
}

} // namespace acp::handlers
