#include "refs/parallel_reads.hpp"

#include "refs/errors.hpp"
#include "store/errors.hpp"
#include "support/background_threads.hpp"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

namespace acp::refs {
namespace {

struct ReadState {
  explicit ReadState(std::size_t n) : sources(n), errors(n), missing(n, false), done(n, false) {}
  std::mutex mutex;
  std::condition_variable_any changed;
  std::vector<std::optional<ProjectedSource>> sources;
  std::vector<std::optional<std::string>> errors;
  std::vector<bool> missing;  ///< the source does not exist (errors[i] is the whole message)
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

// Asks every reader to stop, then joins them; runs on every way out of read_all_in_parallel.
struct StopAndJoin {
  std::stop_source& stop;
  std::vector<std::jthread>& threads;
  ~StopAndJoin() {
    stop.request_stop();
    for (auto& t : threads)
      if (t.joinable()) t.join();
  }
};

} // namespace

std::vector<ProjectedSource> read_all_in_parallel(SessionSource& source, const std::vector<std::string>& ids,
                                                  const std::vector<std::optional<std::int64_t>>& anchors,
                                                  std::int64_t max_reference_bytes, std::stop_token stop) {
  if (stop.stop_requested()) cancelled();
  ReadState state(ids.size());
  std::stop_source readers;  // stops the reads: the caller's cancel, a decided failure, or leaving
  std::stop_callback forward(stop, [&readers] { readers.request_stop(); });
  auto read = [&state, &source, &ids, &anchors, &readers, max_reference_bytes](std::size_t i) {
    std::optional<ProjectedSource> result;
    std::optional<std::string> error;
    bool missing = false;
    try {
      result = i < anchors.size() && anchors[i]
                   ? source.read_anchored(ids[i], max_reference_bytes, *anchors[i], readers.get_token())
                   : source.read_projected(ids[i], max_reference_bytes, readers.get_token());
    } catch (const store::SessionNotFound&) {
      // Worded so no client can take it for its own session being gone (acpx reads any
      // `session "…" not found` that way); docs/decisions.md#errors-on-the-wire.
      error = "referenced session " + ids[i] + " does not exist";
      missing = true;
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "unknown error";
    }
    std::lock_guard lock(state.mutex);
    state.sources[i] = std::move(result);
    state.errors[i] = std::move(error);
    state.missing[i] = missing;
    state.done[i] = true;
    state.changed.notify_all();
  };
  {
    std::vector<std::jthread> threads;
    threads.reserve(ids.size());
    StopAndJoin guard{readers, threads};
    for (std::size_t i = 0; i < ids.size(); ++i) {
      try {
        // Bulk reads yield the CPU to the connection and other sessions' turns.
        threads.emplace_back([&read, i] {
          support::lower_thread_priority();
          read(i);
        });
      } catch (const std::system_error&) {
        read(i);  // no thread available: still read, just not concurrently
      }
    }
    std::unique_lock lock(state.mutex);
    const bool known = state.changed.wait(lock, stop, [&] { return decided(state); });
    lock.unlock();
    if (!known) cancelled();  // the guard stops and joins the readers first
  }
  // Every reader has been joined here.
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!state.errors[i]) continue;
    // A read that fails because the caller gave up is a cancellation, not a read failure.
    if (stop.stop_requested()) cancelled();
    if (state.missing[i]) throw SessionReferenceError(ErrorCode::read_failed, *state.errors[i]);
    throw SessionReferenceError(ErrorCode::read_failed, "failed to read referenced session: " + *state.errors[i]);
  }
  std::vector<ProjectedSource> out;
  out.reserve(ids.size());
  for (auto& s : state.sources) out.push_back(std::move(*s));
  return out;
}

} // namespace acp::refs
