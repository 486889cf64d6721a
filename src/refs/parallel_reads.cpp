#include "refs/parallel_reads.hpp"

#include "refs/errors.hpp"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

namespace acp::refs {
namespace {

struct ReadState {
  explicit ReadState(std::size_t n) : snapshots(n), errors(n), done(n, false) {}
  std::mutex mutex;
  std::condition_variable_any changed;
  std::vector<std::optional<store::SurfaceSnapshot>> snapshots;
  std::vector<std::optional<std::string>> errors;
  std::vector<bool> done;
};

[[noreturn]] void cancelled() {
  throw SessionReferenceError(ErrorCode::cancelled, "session reference preparation was cancelled");
}

// The outcome is known once every read is done, or once some read failed and all reads before it
// are done (nothing later can change which failure is reported first).
bool decided(const ReadState& s) {
  for (std::size_t i = 0; i < s.done.size(); ++i) {
    if (!s.done[i]) return false;
    if (s.errors[i]) return true;
  }
  return true;
}

} // namespace

std::vector<store::SurfaceSnapshot> read_all_in_parallel(const std::shared_ptr<SessionSource>& source,
                                                         const std::vector<std::string>& ids, std::stop_token stop) {
  if (stop.stop_requested()) cancelled();
  auto state = std::make_shared<ReadState>(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto read = [state, source, id = ids[i], i] {
      std::optional<store::SurfaceSnapshot> snapshot;
      std::optional<std::string> error;
      try {
        snapshot = source->read_surface(id);
      } catch (const std::exception& e) {
        error = e.what();
      } catch (...) {
        error = "unknown error";
      }
      std::lock_guard lock(state->mutex);
      state->snapshots[i] = std::move(snapshot);
      state->errors[i] = std::move(error);
      state->done[i] = true;
      state->changed.notify_all();
    };
    try {
      std::thread(read).detach();
    } catch (const std::system_error&) {
      read();  // no thread available: still read, just not concurrently
    }
  }

  std::unique_lock lock(state->mutex);
  if (!state->changed.wait(lock, stop, [&] { return decided(*state); })) cancelled();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!state->errors[i]) continue;
    // A read that fails because the caller gave up is a cancellation, not a read failure.
    if (stop.stop_requested()) cancelled();
    throw SessionReferenceError(ErrorCode::read_failed, "failed to read referenced session: " + *state->errors[i]);
  }
  std::vector<store::SurfaceSnapshot> out;
  out.reserve(ids.size());
  for (auto& s : state->snapshots) out.push_back(std::move(*s));
  return out;
}

} // namespace acp::refs
