#include "handlers/model_option.hpp"

namespace acp::handlers {

std::optional<std::vector<protocol::SessionConfigOption>> model_config_options(const HandlerContext& ctx,
                                                                                const engine::Session& session) {
  if (!ctx.engine.offers_models()) return std::nullopt;
  protocol::SessionConfigOption option;
  option.id = kModelOptionId;
  option.name = "Model";
  option.description = "The " + ctx.config.provider + " model this session's next requests use";
  option.category = "model";
  option.type = "select";
  option.currentValue = ctx.engine.session_model(session);
  for (const auto& m : ctx.engine.model_choices(session))
    option.options.push_back(protocol::SessionConfigSelectOption{m, m, std::nullopt, std::nullopt});
  return std::vector<protocol::SessionConfigOption>{std::move(option)};
}

} // namespace acp::handlers
