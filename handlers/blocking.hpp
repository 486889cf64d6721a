// Blocking work of a handler (re-reading key files for authenticate) runs on the engine's pool.
#pragma once

#include "engine/offload.hpp"
#include "handlers/handler_context.hpp"

namespace acp::handlers {

template <class F> auto run_blocking(HandlerContext& ctx, F& work) { return engine::offload(ctx.engine.pool(), work); }

} // namespace acp::handlers
