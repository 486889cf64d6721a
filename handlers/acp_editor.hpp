// engine::Editor over the client connection: fs/read_text_file, fs/write_text_file and terminal/*
// as ACP defines them, for one session, offered only where the client advertised them in initialize.
#pragma once

#include "engine/editor.hpp"
#include "handlers/handler_context.hpp"

#include <memory>

namespace acp::handlers {

/// The editor of session `session_id` as its client's capabilities describe it; null when the
/// client does none of it (or there is no client to ask), so the server does all.
std::shared_ptr<engine::Editor> acp_editor(HandlerContext& ctx, const std::string& session_id);

} // namespace acp::handlers
