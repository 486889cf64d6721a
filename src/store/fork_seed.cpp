#include "store/fork_seed.hpp"

#include "store/log_state.hpp"
#include "store/records.hpp"

namespace acp::store {

namespace json = boost::json;

void ForkSeed::keep(json::object&& event) { kept_.push_back(std::move(event)); }

bool ForkSeed::observe(json::object&& event) {
  const std::string_view type = string_member(event, 0, "type");
  switch (phase_) {
  case Phase::copying: {
    const bool at_point = at_point_ && at_point_(event);
    keep(std::move(event));
    if (!at_point) return true;
    if (type == "turn/end") phase_ = Phase::done;  // a failure note: the turn is over with it
    else if (is_surface_type(type)) phase_ = Phase::to_turn_end;
    else phase_ = Phase::to_message_end;  // a block's chunks: its step's message completes it
    return phase_ != Phase::done;
  }
  case Phase::to_message_end:
    if (type == "assistant/chunk") {
      keep(std::move(event));
      return true;
    }
    if (type == "assistant/message") {
      keep(std::move(event));
      phase_ = Phase::to_turn_end;
      return true;
    }
    // The step ended without its message (an interrupted stream): the cut stays after the chunks.
    phase_ = Phase::done;
    return false;
  case Phase::to_turn_end:
    if (is_surface_type(type) || type == "turn/start") {
      pending_.clear();
      phase_ = Phase::done;
      return false;
    }
    pending_.push_back(std::move(event));
    if (type == "turn/end") {
      for (auto& e : pending_) keep(std::move(e));
      pending_.clear();
      phase_ = Phase::done;
      return false;
    }
    return true;
  case Phase::done:
    return false;
  }
  return false;
}

std::vector<json::object> ForkSeed::finish() {
  pending_.clear();  // the source's turn never ended after the message: the closers end it
  LogState state;
  for (const auto& e : kept_) state.observe(e);
  std::vector<json::object> seed = std::move(kept_);
  kept_.clear();
  for (auto& closer : state.closers()) seed.push_back(std::move(closer));
  return seed;
}

NewEvent fork_event(const ForkProvenance& p) {
  json::object source{{"sessionId", p.session_id}};
  if (p.store) source["store"] = *p.store;
  if (p.owner) source["owner"] = *p.owner;
  json::object data{{"source", std::move(source)}};
  if (p.through_seq) data["throughSeq"] = *p.through_seq;
  if (p.message_id) data["messageId"] = *p.message_id;
  data["seedLength"] = p.seed_length;
  data["inheritsChoices"] = p.inherits_choices;
  NewEvent e;
  e.type = std::string(kForkEvent);
  e.data = std::move(data);
  e.ignorable = true;
  return e;
}

NewEvent as_new_event(json::object&& record) {
  NewEvent e;
  if (const auto* type = record.if_contains("type"); type && type->is_string()) e.type = std::string(type->get_string());
  if (auto* data = record.if_contains("data"); data && data->is_object()) e.data = std::move(data->get_object());
  if (const auto* op = record.if_contains("surfaceOp")) e.surfaceOp = *op;
  if (const auto* seqs = record.if_contains("sourceEventSeqs"); seqs && seqs->is_array())
    e.sourceEventSeqs = seqs->get_array();
  if (const auto* time = record.if_contains("time")) e.time = safe_int(*time);
  if (const auto* ignorable = record.if_contains("ignorable"); ignorable && ignorable->is_bool())
    e.ignorable = ignorable->get_bool();
  return e;
}

} // namespace acp::store
