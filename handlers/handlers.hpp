// One function per ACP method, named after it ('/' → '_'). Each is defined in its own file.
#pragma once

#include "handlers/handler_context.hpp"
#include "protocol/types/extensions.hpp"
#include "protocol/types/initialize.hpp"
#include "protocol/types/session.hpp"

#include <boost/asio/awaitable.hpp>

namespace acp::handlers {

boost::asio::awaitable<protocol::InitializeResponse> initialize(HandlerContext&, protocol::InitializeRequest);
boost::asio::awaitable<protocol::EmptyResponse> authenticate(HandlerContext&, protocol::AuthenticateRequest);
boost::asio::awaitable<protocol::EmptyResponse> logout(HandlerContext&, protocol::LogoutRequest);
boost::asio::awaitable<protocol::SetSessionConfigOptionResponse> session_set_config_option(
    HandlerContext&, protocol::SetSessionConfigOptionRequest);
boost::asio::awaitable<protocol::EmptyResponse> session_set_mode(HandlerContext&, protocol::SetSessionModeRequest);
boost::asio::awaitable<protocol::NewSessionResponse> session_new(HandlerContext&, protocol::NewSessionRequest);
/// `turn`: the prompt's cancellation object, made when the request arrived ($/cancel_request
/// reaches it while the prompt waits in line); null: one of its own.
boost::asio::awaitable<protocol::PromptResponse> session_prompt(HandlerContext&, protocol::PromptRequest,
                                                                std::shared_ptr<engine::Turn> turn = nullptr);
boost::asio::awaitable<void> session_cancel(HandlerContext&, protocol::CancelNotification);
boost::asio::awaitable<protocol::EmptyResponse> session_cancel_request(HandlerContext&, protocol::CancelNotification);
boost::asio::awaitable<protocol::LoadSessionResponse> session_load(HandlerContext&, protocol::LoadSessionRequest);
boost::asio::awaitable<protocol::ForkSessionResponse> session_fork(HandlerContext&, protocol::ForkSessionRequest);
boost::asio::awaitable<protocol::LoadSessionResponse> session_resume(HandlerContext&, protocol::ResumeSessionRequest);
boost::asio::awaitable<protocol::EmptyResponse> session_close(HandlerContext&, protocol::SessionIdRequest);
boost::asio::awaitable<protocol::EmptyResponse> session_delete(HandlerContext&, protocol::SessionIdRequest);
boost::asio::awaitable<protocol::ListSessionsResponse> session_list(HandlerContext&, protocol::ListSessionsRequest);
boost::asio::awaitable<protocol::CandidatesResponse> dsh_session_reference_candidates(HandlerContext&,
                                                                                       protocol::CandidatesRequest);

} // namespace acp::handlers
