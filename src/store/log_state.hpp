// What the store remembers about a log after reading it, folded event by event: the next seq,
// the last event's time, turn/step/tool-call bookkeeping for crash repair (docs/store-format.md#crash-repair),
// the latest title. Writers update it from the events they append, so an unchanged file never
// has to be re-read between two write sequences.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace acp::store {

/// Latest session/title (docs/store-format.md#titles).
struct TitleInfo {
  std::string title;
  boost::json::array messageSeqs;
  boost::json::object source;
  std::int64_t eventSeq = 0;
  std::int64_t updatedAt = 0;  ///< the title event's time
};

class LogState {
public:
  /// Folds one event (already accepted at seq == count()).
  void observe(const boost::json::object& event);
  /// Folds `count` events that change nothing but the count and the last time (assistant/chunk:
  /// what observe() does with them), without their records; `last_time` is the last one's time.
  void observe_plain(std::int64_t count, std::int64_t last_time) noexcept {
    if (count <= 0) return;
    count_ += count;
    last_time_ = last_time;
  }

  std::int64_t count() const noexcept { return count_; }
  std::int64_t last_time() const noexcept { return last_time_; }
  std::int64_t last_turn() const noexcept { return last_turn_; }
  bool turn_open() const noexcept { return open_turn_.has_value(); }
  const std::optional<TitleInfo>& title() const noexcept { return title_; }

  /// The synthetic closers for an interrupted turn (tool/result per pending call, step/end,
  /// turn/end interrupted), with seqs continuing the log and the last event's time. Empty when
  /// no turn is open.
  std::vector<boost::json::object> closers() const;

private:
  struct PendingCall {
    std::string call_id;
    boost::json::value turn;
    boost::json::value step;
    std::optional<std::int64_t> call_seq;  ///< seq of the logged tool/call, if any
  };
  void reset_pending() { pending_.clear(); }

  std::int64_t count_ = 0;
  std::int64_t last_time_ = 0;
  std::int64_t last_turn_ = 0;
  std::optional<boost::json::value> open_turn_;
  std::optional<std::pair<boost::json::value, boost::json::value>> open_step_;
  std::vector<PendingCall> pending_;
  std::optional<TitleInfo> title_;
};

/// Texts of the closer tool/results (byte-exact, docs/store-format.md#crash-repair).
extern const char* const kToolOutcomeUnknownText;
extern const char* const kToolNotStartedText;

} // namespace acp::store
