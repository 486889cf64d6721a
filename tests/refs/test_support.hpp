// Shared helpers of the session-reference unit tests: event builders and an in-memory SessionSource
// whose reads can be gated (to hold a read open until it is cancelled) and counted.
#pragma once

#include "refs/projection.hpp"
#include "refs/service.hpp"

#include <boost/json.hpp>

#include <atomic>
#include <condition_variable>
#include <map>
#include <set>
#include <mutex>
#include <stdexcept>
#include <string>
#include <stop_token>
#include <thread>
#include <chrono>

namespace refs_test {

namespace json = boost::json;

inline json::object text_content_event(std::string_view type, std::string_view text, json::object source,
                                       std::int64_t seq) {
  json::object data;
  data["content"] = json::array{json::object{{"type", "text"}, {"text", text}}};
  if (!source.empty()) data["source"] = std::move(source);
  return json::object{{"type", type}, {"seq", seq}, {"time", 1700000000000 + seq}, {"data", std::move(data)},
                      {"surfaceOp", "append"}};
}

inline json::object user(std::string_view text, std::int64_t seq = 0) {
  return text_content_event("user/message", text, json::object{{"kind", "user"}}, seq);
}
inline json::object assistant(std::string_view text, std::int64_t seq = 0) {
  return text_content_event("assistant/message", text, json::object{}, seq);
}
inline json::object checkpoint(std::string_view text, std::int64_t seq = 0) {
  return text_content_event("user/message", text, json::object{{"kind", "plugin"}, {"plugin", "compact"}}, seq);
}
inline json::object steering(std::string_view text, std::string_view kind, std::int64_t seq = 0) {
  return text_content_event("steering/message", text, json::object{{"kind", kind}}, seq);
}

inline acp::store::SurfaceSnapshot snapshot(std::string id, std::optional<std::string> cwd,
                                            std::optional<std::int64_t> seq, std::vector<json::object> events) {
  acp::store::SurfaceSnapshot s;
  s.session.id = std::move(id);
  s.session.cwd = std::move(cwd);
  s.capturedThroughSeq = seq;
  s.events = std::move(events);
  return s;
}

class MemorySource : public acp::refs::SessionSource {
public:
  std::map<std::string, acp::store::SurfaceSnapshot> snapshots;
  std::map<std::string, std::string> errors;
  std::vector<acp::store::SessionListing> listings;
  std::map<std::string, int> delay_ms;  ///< per-id pause before a read completes
  std::set<std::string> blocked;         ///< ids whose reads block until they are asked to stop
  std::atomic<int> reads{0};
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
  std::atomic<int> stopped{0};  ///< reads that ended because they were asked to stop

  /// While closed, every read blocks until open() is called.
  void close_gate() {
    std::lock_guard lock(mutex_);
    gate_open_ = false;
  }
  void open_gate() {
    {
      std::lock_guard lock(mutex_);
      gate_open_ = true;
    }
    cv_.notify_all();
  }
  /// Blocks until `n` reads are in flight at the same time (proves parallel reads).
  void wait_for_in_flight(int n) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return in_flight.load() >= n; });
  }

  /// The snapshot's projection. A closed gate blocks the read until the gate opens or the read is
  /// asked to stop; a stopped read throws, as a store read does.
  acp::refs::ProjectedSource read_projected(const std::string& id, std::int64_t, std::stop_token stop) override {
    ++reads;
    int now = ++in_flight;
    int seen = max_in_flight.load();
    while (now > seen && !max_in_flight.compare_exchange_weak(seen, now)) {
    }
    struct Leave {
      MemorySource& s;
      ~Leave() {
        std::lock_guard lock(s.mutex_);
        --s.in_flight;
        s.cv_.notify_all();
      }
    } leave{*this};
    {
      std::unique_lock lock(mutex_);
      cv_.notify_all();
      const bool block = blocked.contains(id);
      if (!cv_.wait(lock, stop, [&] { return gate_open_ && !block; })) {
        ++stopped;
        throw std::runtime_error("read stopped");
      }
    }
    if (auto d = delay_ms.find(id); d != delay_ms.end()) {
      std::unique_lock lock(mutex_);
      cv_.wait_for(lock, stop, std::chrono::milliseconds(d->second), [] { return false; });
      if (stop.stop_requested()) {
        ++stopped;
        throw std::runtime_error("read stopped");
      }
    }
    if (auto e = errors.find(id); e != errors.end()) throw std::runtime_error(e->second);
    auto s = snapshots.find(id);
    if (s == snapshots.end()) throw std::runtime_error("session \"" + id + "\" not found");
    return acp::refs::project_snapshot(s->second);
  }

  /// Blocks until no read is in flight.
  void wait_for_idle() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return in_flight.load() == 0; });
  }

  std::vector<acp::store::SessionListing> list_sessions() override { return listings; }

private:
  std::mutex mutex_;
  std::condition_variable_any cv_;
  bool gate_open_ = true;
};

} // namespace refs_test
