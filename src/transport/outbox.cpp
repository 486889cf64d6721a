#include "transport/outbox.hpp"

#include "support/log.hpp"
#include "transport/transport.hpp"
#include "support/event.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <deque>
#include <list>
#include <optional>
#include <unordered_map>

namespace acp::transport {

namespace asio = boost::asio;

namespace {

// Frames are coalesced into writes of about this size (fewer system calls). While several keys
// have frames the writes are smaller: a write in progress cannot be reordered, and with a slow
// reader every byte of it delays the other keys' frames (10 MB/s: 64 KiB is 6.4 ms).
constexpr std::size_t kWriteBatch = 64u << 10;
constexpr std::size_t kSharedWriteBatch = 16u << 10;
// Deficit round robin: each turn a key may write this many more bytes, so a key of small frames
// (a prompt's updates) is not served one frame per large frame of another key (a replay).
constexpr std::size_t kQuantum = 4u << 10;

struct KeyQueue {
  std::string key;
  std::deque<std::string> frames;
  std::size_t bytes = 0;   ///< frames not yet taken by the writer
  std::size_t credit = 0;  ///< bytes this key may still write before the next key's turn
};

// Frames waiting to be admitted. `owned`: a send() awaits them; otherwise they were push()ed
// behind a waiting send() of the same key and only keep their place in that key's order.
struct Sender {
  std::string key;
  std::deque<std::string> frames;
  bool owned = false;
  bool done = false;
  bool admitted = false;
  std::optional<support::Event> wake;
};

} // namespace

struct Outbox::Impl {
  Impl(asio::any_io_executor ex, Transport& t, std::size_t max, std::size_t per_key)
      : executor(ex), transport(t), max_bytes(std::max<std::size_t>(max, 1)),
        per_key_bytes(std::clamp<std::size_t>(per_key, 1, max_bytes)), writer_wake(ex), reader_wake(ex) {}

  asio::any_io_executor executor;
  Transport& transport;
  std::size_t max_bytes;
  std::size_t per_key_bytes;
  std::unordered_map<std::string, KeyQueue> queues;  // node-based: pointers stay valid
  std::deque<KeyQueue*> rotation;                     // keys with frames, in writing turn
  std::list<std::shared_ptr<Sender>> senders;         // in arrival order
  std::unordered_map<std::string, std::size_t> senders_per_key;
  std::size_t owned_senders = 0;
  std::size_t queued = 0;  // admitted and not yet written
  std::size_t held = 0;    // push()ed frames kept behind a waiting sender
  std::size_t peak = 0;
  support::Event writer_wake;  ///< notified: frames to write, or closing
  support::Event reader_wake;  ///< notified: room freed, or closing
  bool closed = false;
  bool reader_released = false;
  std::size_t readers_waiting = 0;  // ready() calls suspended now
  bool dropping = false;
  bool broken = false;
  std::function<void()> on_broken;

  void enqueue(const std::string& key, std::string frame) {
    auto [it, inserted] = queues.try_emplace(key);
    KeyQueue& q = it->second;
    if (inserted) q.key = key;
    if (q.frames.empty()) rotation.push_back(&q);
    q.bytes += frame.size();
    queued += frame.size();
    peak = std::max(peak, queued);
    q.frames.push_back(std::move(frame));
  }

  std::size_t key_bytes(const std::string& key) const {
    auto it = queues.find(key);
    return it == queues.end() ? 0 : it->second.bytes;
  }

  bool fits(std::size_t used, std::size_t n, std::size_t limit) const { return used == 0 || used + n <= limit; }

  void finish(Sender& s, bool admitted) {
    s.done = true;
    s.admitted = admitted;
    if (auto it = senders_per_key.find(s.key); it != senders_per_key.end() && --it->second == 0) senders_per_key.erase(it);
    if (s.owned) {
      --owned_senders;
      s.wake->set();
    }
    for (const auto& f : s.frames) {
      if (!s.owned) held -= f.size();
    }
    s.frames.clear();
  }

  // Moves waiting frames into their queues, senders in arrival order. A sender short of room in
  // the total blocks every later owned sender (no starving a large batch); one short of room in
  // its own key blocks only later senders of that key.
  void admit() {
    bool total_blocked = false;
    std::vector<const std::string*> blocked_keys;
    bool moved = false;
    for (auto it = senders.begin(); it != senders.end();) {
      Sender& s = **it;
      if (std::any_of(blocked_keys.begin(), blocked_keys.end(), [&](const std::string* k) { return *k == s.key; })) {
        ++it;
        continue;
      }
      while (!s.frames.empty()) {
        std::size_t n = s.frames.front().size();
        if (s.owned) {
          if (total_blocked || !fits(queued, n, max_bytes)) {
            total_blocked = true;
            break;
          }
          if (!fits(key_bytes(s.key), n, per_key_bytes)) break;
        } else {
          held -= n;
        }
        enqueue(s.key, std::move(s.frames.front()));
        s.frames.pop_front();
        moved = true;
      }
      if (s.frames.empty()) {
        finish(s, true);
        it = senders.erase(it);
      } else {
        blocked_keys.push_back(&s.key);
        ++it;
      }
    }
    if (moved) writer_wake.notify_all();
    reader_wake.notify_all();
  }

  void drop_all() {
    if (dropping) return;
    dropping = true;
    for (auto& [key, q] : queues) queued -= q.bytes;
    queues.clear();
    rotation.clear();
    for (auto& s : senders) finish(*s, false);
    senders.clear();
    senders_per_key.clear();
    held = 0;
    transport.cancel_write();
    writer_wake.notify_all();
    reader_wake.notify_all();
  }

  // One write's worth, the keys served in turn by bytes (deficit round robin).
  std::string take_batch() {
    const std::size_t limit = rotation.size() > 1 ? kSharedWriteBatch : kWriteBatch;
    std::string batch;
    while (!rotation.empty() && batch.size() < limit) {
      KeyQueue* q = rotation.front();
      rotation.pop_front();
      q->credit += kQuantum;
      while (!q->frames.empty() && q->frames.front().size() <= q->credit && batch.size() < limit) {
        std::string& frame = q->frames.front();
        q->bytes -= frame.size();
        q->credit -= frame.size();
        if (batch.empty()) batch = std::move(frame);
        else batch += frame;
        q->frames.pop_front();
      }
      if (!q->frames.empty()) rotation.push_back(q);
      else queues.erase(queues.find(q->key));
    }
    return batch;
  }
};

Outbox::Outbox(asio::any_io_executor executor, Transport& transport, std::size_t max_bytes, std::size_t per_key_bytes)
    : impl_(std::make_unique<Impl>(std::move(executor), transport, max_bytes, per_key_bytes)) {}
Outbox::~Outbox() = default;

asio::awaitable<bool> Outbox::send(std::string key, std::vector<std::string> frames) {
  auto& s = *impl_;
  if (s.dropping) co_return false;
  auto sender = std::make_shared<Sender>();
  sender->key = std::move(key);
  sender->owned = true;
  for (auto& f : frames) {
    f.push_back('\n');
    sender->frames.push_back(std::move(f));
  }
  sender->wake.emplace(s.executor);
  s.senders.push_back(sender);
  ++s.senders_per_key[sender->key];
  ++s.owned_senders;
  s.admit();
  if (!sender->done) co_await sender->wake->wait();
  if (!sender->done) {
    // The awaiting coroutine was cancelled from outside: withdraw what was not admitted.
    s.senders.remove(sender);
    s.finish(*sender, false);
    s.admit();
  }
  co_return sender->admitted;
}

void Outbox::push(const std::string& key, std::string frame) {
  auto& s = *impl_;
  if (s.dropping) return;
  frame.push_back('\n');
  if (!s.senders_per_key.contains(key)) {
    s.enqueue(key, std::move(frame));
    s.writer_wake.notify_all();
    return;
  }
  // Behind a waiting send() of this key: admitted right after it, whatever the limits.
  s.held += frame.size();
  if (s.senders.back()->owned || s.senders.back()->key != key) {
    auto held = std::make_shared<Sender>();
    held->key = key;
    s.senders.push_back(held);
    ++s.senders_per_key[key];
  }
  s.senders.back()->frames.push_back(std::move(frame));
}

asio::awaitable<void> Outbox::room(const std::string& key_in) {
  const std::string key = key_in;
  auto& s = *impl_;
  const auto cancellation = co_await asio::this_coro::cancellation_state;
  while (!s.dropping && cancellation.cancelled() == asio::cancellation_type::none &&
         !(s.queued + s.held < s.max_bytes && s.key_bytes(key) < s.per_key_bytes))
    co_await s.reader_wake.wait();  // admit() notifies after every write
}

asio::awaitable<void> Outbox::ready() {
  auto& s = *impl_;
  while (!s.dropping && !s.reader_released && !(s.queued + s.held < s.max_bytes && s.owned_senders < kMaxWaitingSenders)) {
    // (Not counted down if the wait ends by an exception: the reader is then gone with its connection.)
    ++s.readers_waiting;
    co_await s.reader_wake.wait();
    --s.readers_waiting;
  }
}

void Outbox::release_reader() {
  impl_->reader_released = true;
  impl_->reader_wake.notify_all();
}

asio::awaitable<void> Outbox::run() {
  auto& s = *impl_;
  for (;;) {
    if (s.dropping) break;
    if (s.rotation.empty()) {
      if (s.closed && s.senders.empty()) break;
      co_await s.writer_wake.wait();
      continue;
    }
    std::string batch = s.take_batch();
    s.admit();  // the keys just served have room again
    boost::system::error_code ec = co_await s.transport.write(batch);
    s.queued -= batch.size();
    if (ec) {
      if (!s.dropping) fail("frame stream write failed: " + ec.message());
      break;
    }
    s.admit();
  }
}

void Outbox::close() {
  impl_->closed = true;
  impl_->writer_wake.notify_all();
}

void Outbox::abort() { impl_->drop_all(); }

void Outbox::fail(const std::string& why) {
  auto& s = *impl_;
  if (s.broken) return;
  s.broken = true;
  log::error(why + "; dropping further output");
  s.drop_all();
  if (s.on_broken) s.on_broken();
}

void Outbox::on_broken(std::function<void()> fn) { impl_->on_broken = std::move(fn); }

bool Outbox::broken() const { return impl_->broken; }
std::size_t Outbox::queued_bytes() const { return impl_->queued; }
std::size_t Outbox::peak_queued_bytes() const { return impl_->peak; }
bool Outbox::reader_waiting() const { return impl_->readers_waiting > 0; }

} // namespace acp::transport
