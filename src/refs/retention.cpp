#include "refs/retention.hpp"

#include "refs/json_string.hpp"
#include "support/utf8.hpp"

#include <algorithm>
#include <queue>
#include <stdexcept>
#include <string_view>

namespace acp::refs {
namespace {

// The fixed bytes of the data object are computed from the very strings the serializer writes, so
// the size model and the output cannot drift apart (they were hand-counted, checked only by assert).
constexpr std::string_view kOpenSessionId = "{\"sessionId\":";
constexpr std::string_view kLabelKey = ",\"label\":";
constexpr std::string_view kCwdKey = ",\"cwd\":";
constexpr std::string_view kSeqKey = ",\"capturedThroughSeq\":";
constexpr std::string_view kAnchorSeqKey = ",\"anchorSeq\":";
constexpr std::string_view kConversationKey = ",\"conversation\":[";
constexpr std::string_view kClose = "]}";
constexpr std::string_view kNull = "null";
constexpr std::string_view kUserOpen = "{\"role\":\"user\",";
constexpr std::string_view kAssistantOpen = "{\"role\":\"assistant\",";
constexpr std::string_view kAnchoredMark = "\"anchored\":true,";
constexpr std::string_view kTextKey = "\"text\":";
constexpr std::string_view kNoticeHead = "\n[\xE2\x80\xA6 omitted ";
constexpr std::string_view kNoticeTail = " UTF-8 bytes \xE2\x80\xA6]";

constexpr auto bytes(std::string_view s) { return static_cast<std::int64_t>(s.size()); }
constexpr std::int64_t kDataFixedBytes =
    bytes(kOpenSessionId) + bytes(kLabelKey) + bytes(kCwdKey) + bytes(kSeqKey) + bytes(kConversationKey) + bytes(kClose);
constexpr std::int64_t kNullBytes = bytes(kNull);
constexpr std::int64_t kUserShellBytes = bytes(kUserOpen) + bytes(kTextKey) + 1;  // + the closing '}'
constexpr std::int64_t kAssistantShellBytes = bytes(kAssistantOpen) + bytes(kTextKey) + 1;
constexpr std::int64_t kAnchoredBytes = bytes(kAnchoredMark);
constexpr std::int64_t kNoticeFixedBytes = bytes(kNoticeHead) + bytes(kNoticeTail);
// The shells as docs/session-references.md#retention counts them.
static_assert(kDataFixedBytes == 70 && kNullBytes == 4 && kUserShellBytes == 23 && kAssistantShellBytes == 28 &&
              kNoticeFixedBytes == 31 && kAnchoredBytes == 16 && bytes(kAnchorSeqKey) == 13);

std::int64_t decimal_digits(std::int64_t v) { return static_cast<std::int64_t>(std::to_string(v).size()); }

std::int64_t shell_bytes(Role role) { return role == Role::user ? kUserShellBytes : kAssistantShellBytes; }

bool starts_with_bom(std::string_view s) { return s.size() >= 3 && s.substr(0, 3) == "\xEF\xBB\xBF"; }

// One probe of TextRetainer headTail(h, t) on the UTF-8 bytes of `text`.
struct Probe {
  std::size_t prefix_bytes = 0;   // |keptPrefix|
  std::size_t suffix_start = 0;   // N − |keptSuffix|
  bool prefix_bom = false;        // the decoder strips a leading U+FEFF of each piece
  bool suffix_bom = false;
  std::int64_t omitted = 0;
  std::int64_t candidate_bytes = 0;
};

Probe probe(std::string_view text, std::int64_t r) {
  const std::size_t n = text.size();
  const auto h = static_cast<std::size_t>((r + 1) / 2);
  const auto t = static_cast<std::size_t>(r / 2);
  std::size_t prefix_len = std::min(n, h);
  std::size_t suffix_len = std::min(n - prefix_len, t);
  Probe p;
  // keptPrefix: drop an incomplete trailing sequence (for valid UTF-8: the largest boundary <= prefix_len).
  p.prefix_bytes = support::utf8_floor(text, prefix_len);
  // keptSuffix: drop leading continuation bytes (the smallest boundary >= n − suffix_len).
  p.suffix_start = support::utf8_ceil(text, n - suffix_len);
  p.prefix_bom = starts_with_bom(text.substr(0, p.prefix_bytes));
  p.suffix_bom = starts_with_bom(text.substr(p.suffix_start));
  const std::size_t suffix_bytes = n - p.suffix_start;
  p.omitted = static_cast<std::int64_t>(n - p.prefix_bytes - suffix_bytes);
  p.candidate_bytes = static_cast<std::int64_t>(p.prefix_bytes - (p.prefix_bom ? 3 : 0) + suffix_bytes -
                                                (p.suffix_bom ? 3 : 0)) +
                      kNoticeFixedBytes + decimal_digits(p.omitted);
  return p;
}

std::string notice(std::int64_t omitted) {
  std::string out(kNoticeHead);
  out += std::to_string(omitted);
  out += kNoticeTail;
  return out;
}

struct Retained {
  std::size_t index = 0;                  // into the projected items
  std::optional<std::string> truncated;   // replaces the original text once truncated
  std::int64_t omitted_bytes = 0;
  std::int64_t size = 0;                  // serialized bytes of {"role":…,"text":…}
  std::int64_t extra = 0;                 // kAnchoredBytes for the anchored item
};

} // namespace

std::int64_t item_size(Role role, std::string_view text, WorkCounter* counter) {
  return shell_bytes(role) + static_cast<std::int64_t>(tag_safe_json_size(text, counter));
}

TruncatedText truncate_with_notice(std::string_view text, std::int64_t max_out, WorkCounter* counter) {
  const auto n = static_cast<std::int64_t>(text.size());
  if (n <= max_out) return {std::string(text), 0};
  std::optional<Probe> best;
  std::int64_t low = 0;
  std::int64_t high = max_out;
  // Reproduced literally: with U+FEFF at a cut the candidate length is not monotone in r, so only
  // this exact probe sequence gives the original's answer.
  while (low <= high) {
    std::int64_t r = (low + high) / 2;
    Probe p = probe(text, r);
    if (counter) ++counter->truncation_probes;
    if (p.candidate_bytes <= max_out) {
      best = p;
      low = r + 1;
    } else {
      high = r - 1;
    }
  }
  if (!best) return {std::string(), n};
  std::string out;
  std::string_view head = text.substr(0, best->prefix_bytes);
  std::string_view tail = text.substr(best->suffix_start);
  if (best->prefix_bom) head.remove_prefix(3);
  if (best->suffix_bom) tail.remove_prefix(3);
  out.reserve(head.size() + tail.size() + 48);
  out.append(head);
  out.append(tail);
  out += notice(best->omitted);
  if (counter) counter->bytes_written += out.size();
  return {std::move(out), best->omitted};
}

namespace {

// What the choice of kept items measures against: the items, the budget, and the bytes every
// result carries whatever it keeps (the header fields and the brackets).
struct Budget {
  const std::vector<ProjectedItem>& items;
  std::int64_t fixed;
  std::int64_t max_bytes;
  WorkCounter* counter;

  std::int64_t measure(std::size_t i) const {
    return items[i].released() ? items[i].released_size : refs::item_size(items[i].role, items[i].text, counter);
  }
  std::int64_t bytes_of(std::size_t i) const {
    return items[i].released() ? items[i].released_bytes : static_cast<std::int64_t>(items[i].text.size());
  }
  std::int64_t total_of(std::int64_t sum, std::int64_t count) const {
    return fixed + sum + (count > 0 ? count - 1 : 0);
  }
};

// The items kept so far and what the dropped ones weighed.
struct Selection {
  std::vector<Retained> retained;
  std::int64_t items_sum = 0;
  std::int64_t count = 0;
  std::int64_t dropped_bytes = 0;
  std::int64_t dropped_count = 0;

  std::int64_t total(const Budget& budget) const { return budget.total_of(items_sum, count); }
  std::string_view current_text(const Budget& budget, const Retained& r) const {
    return r.truncated ? std::string_view(*r.truncated) : budget.items[r.index].text;
  }
};

std::int64_t header_bytes(const SourceHeader& header, std::optional<std::int64_t> anchor_seq, WorkCounter* counter) {
  std::int64_t fixed = kDataFixedBytes + static_cast<std::int64_t>(tag_safe_json_size(header.session_id, counter)) +
                       static_cast<std::int64_t>(tag_safe_json_size(header.label, counter)) +
                       (header.cwd ? static_cast<std::int64_t>(tag_safe_json_size(*header.cwd, counter)) : kNullBytes) +
                       (header.captured_through_seq ? decimal_digits(*header.captured_through_seq) : kNullBytes);
  if (header.anchored) fixed += bytes(kAnchorSeqKey) + (anchor_seq ? decimal_digits(*anchor_seq) : kNullBytes);
  return fixed;
}

// Centred: the anchored item is the one never dropped; its neighbours join one at a time,
// newer first and then alternately older and newer, each side closing at the first neighbour
// that no longer fits. The kept items stay one contiguous run [lo, hi] around the anchor.
Selection select_around_anchor(const Budget& budget, std::size_t a) {
  const std::size_t n = budget.items.size();
  Selection kept;
  kept.retained.push_back(Retained{a, std::nullopt, 0, budget.measure(a) + kAnchoredBytes, kAnchoredBytes});
  kept.items_sum = kept.retained.back().size;
  kept.count = 1;
  std::size_t lo = a, hi = a;
  bool newer = hi + 1 < n, older = lo > 0;
  bool newer_turn = true;
  while (newer || older) {
    const bool take_newer = newer && (newer_turn || !older);
    const std::size_t j = take_newer ? hi + 1 : lo - 1;
    const std::int64_t size = budget.measure(j);
    if (budget.total_of(kept.items_sum + size, kept.count + 1) > budget.max_bytes) {
      (take_newer ? newer : older) = false;
    } else {
      kept.retained.push_back(Retained{j, std::nullopt, 0, size, 0});
      kept.items_sum += size;
      ++kept.count;
      if (take_newer) {
        hi = j;
        newer = hi + 1 < n;
      } else {
        lo = j;
        older = lo > 0;
      }
    }
    newer_turn = !take_newer;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (i >= lo && i <= hi) continue;
    ++kept.dropped_count;
    kept.dropped_bytes += budget.bytes_of(i);
  }
  return kept;
}

// Without an anchor: drop whole items, oldest first, keeping checkpoints and the newest item, while the data
// object is over budget. The original drops the first eligible item and re-measures each time. Its
// total after dropping the first j eligible items is monotone in j, so the smallest j that fits is
// found by walking back from the newest item: only kept items (plus one) are ever measured, and the
// dropped prefix costs O(1) per item. Nothing here is O(items) in memory — only the kept items are
// recorded: per-item arrays over a million-message source were fresh memory on every prepare, and
// faulting it in cost more than the walk itself.
Selection select_dropping_oldest(const Budget& budget) {
  const std::size_t n = budget.items.size();
  auto mandatory_at = [&](std::size_t i) { return budget.items[i].checkpoint || i + 1 == n; };
  Selection kept;
  // retained: checkpoints and the newest item first, then kept eligible items; checkpoints and the
  // newest item are never dropped in Phase 1.
  for (std::size_t i = 0; i < n; ++i) {
    if (!mandatory_at(i)) continue;
    kept.retained.push_back(Retained{i, std::nullopt, 0, budget.measure(i), 0});
    kept.items_sum += kept.retained.back().size;
  }
  kept.count = static_cast<std::int64_t>(kept.retained.size());
  // Keep eligible items from the newest backwards while the result still fits; when even the
  // mandatory items do not fit, all eligible items go (the original's loop ends there too). Every
  // eligible item at or before `dropped_through` is dropped.
  std::size_t dropped_through = n;  // n: none dropped
  for (std::size_t i = n > 1 ? n - 1 : 0; i-- > 0;) {
    if (mandatory_at(i)) continue;
    const std::int64_t size = budget.measure(i);
    if (budget.total_of(kept.items_sum + size, kept.count + 1) > budget.max_bytes) {
      dropped_through = i;
      break;
    }
    kept.retained.push_back(Retained{i, std::nullopt, 0, size, 0});
    kept.items_sum += size;
    ++kept.count;
  }
  if (dropped_through < n) {
    for (std::size_t i = 0; i <= dropped_through; ++i) {
      if (mandatory_at(i)) continue;
      ++kept.dropped_count;
      kept.dropped_bytes += budget.bytes_of(i);
    }
  }
  return kept;
}

// Phase 2: head/tail-truncate the longest current text (ties → lowest position) until it fits.
// False when no truncation can make it fit.
bool truncate_to_fit(const Budget& budget, Selection& kept) {
  if (kept.total(budget) <= budget.max_bytes) return true;
  const auto& items = budget.items;
  std::vector<Retained>& retained = kept.retained;
  struct Entry {
    std::int64_t bytes;
    std::size_t pos;
  };
  auto less = [](const Entry& a, const Entry& b) { return a.bytes < b.bytes || (a.bytes == b.bytes && a.pos > b.pos); };
  std::priority_queue<Entry, std::vector<Entry>, decltype(less)> heap(less);
  for (std::size_t pos = 0; pos < retained.size(); ++pos)
    heap.push(Entry{static_cast<std::int64_t>(kept.current_text(budget, retained[pos]).size()), pos});
  while (kept.total(budget) > budget.max_bytes) {
    // Texts only ever shrink, so an entry is current iff its length matches the current text.
    while (!heap.empty() &&
           heap.top().bytes != static_cast<std::int64_t>(kept.current_text(budget, retained[heap.top().pos]).size()))
      heap.pop();
    if (heap.empty()) return false;
    const Entry longest = heap.top();
    if (longest.bytes == 0) return false;
    heap.pop();
    Retained& item = retained[longest.pos];
    const std::int64_t overflow = kept.total(budget) - budget.max_bytes;
    const std::int64_t target = std::max<std::int64_t>(0, longest.bytes - overflow);
    TruncatedText cut = truncate_with_notice(items[item.index].text, target, budget.counter);
    if (cut.text == kept.current_text(budget, item)) return false;  // no progress possible
    kept.items_sum -= item.size;
    item.size = shell_bytes(items[item.index].role) + item.extra +
                static_cast<std::int64_t>(tag_safe_json_size(cut.text, budget.counter));
    kept.items_sum += item.size;
    item.omitted_bytes = cut.omitted_bytes;  // replaced, not accumulated: truncation restarts from the original
    item.truncated = std::move(cut.text);
    if (budget.counter) ++budget.counter->retention_steps;
    heap.push(Entry{static_cast<std::int64_t>(item.truncated->size()), longest.pos});
  }
  return true;
}

// Serialize once, in the data object's key order.
std::string serialize(const SourceHeader& header, std::optional<std::int64_t> anchor_seq, const Budget& budget,
                      const Selection& kept) {
  std::string json;
  json.reserve(static_cast<std::size_t>(kept.total(budget)));
  json += kOpenSessionId;
  append_tag_safe_json(json, header.session_id);
  json += kLabelKey;
  append_tag_safe_json(json, header.label);
  json += kCwdKey;
  if (header.cwd)
    append_tag_safe_json(json, *header.cwd);
  else
    json += kNull;
  json += kSeqKey;
  json += header.captured_through_seq ? std::to_string(*header.captured_through_seq) : std::string(kNull);
  if (header.anchored) {
    json += kAnchorSeqKey;
    json += anchor_seq ? std::to_string(*anchor_seq) : std::string(kNull);
  }
  json += kConversationKey;
  for (std::size_t pos = 0; pos < kept.retained.size(); ++pos) {
    const Retained& r = kept.retained[pos];
    if (pos > 0) json.push_back(',');
    json += budget.items[r.index].role == Role::user ? kUserOpen : kAssistantOpen;
    if (r.extra > 0) json += kAnchoredMark;
    json += kTextKey;
    append_tag_safe_json(json, kept.current_text(budget, r));
    json.push_back('}');
  }
  json += kClose;
  return json;
}

} // namespace

std::optional<RetainedSource> retain(const SourceHeader& header, const std::vector<ProjectedItem>& items,
                                     std::int64_t max_bytes, WorkCounter* counter) {
  const std::size_t n = items.size();
  const bool centred = header.anchored && header.anchor_index && *header.anchor_index < n;
  std::optional<std::int64_t> anchor_seq;
  if (centred && items[*header.anchor_index].seq >= 0) anchor_seq = items[*header.anchor_index].seq;
  const Budget budget{items, header_bytes(header, anchor_seq, counter), max_bytes, counter};

  RetentionStats stats;
  stats.original_messages = static_cast<std::int64_t>(n);
  for (const auto& item : items) stats.compacted = stats.compacted || item.checkpoint;

  // Phase 1: choose the whole items to keep (centred on an anchor, or the original's rule).
  Selection kept = centred ? select_around_anchor(budget, *header.anchor_index) : select_dropping_oldest(budget);
  stats.omitted_messages = kept.dropped_count;
  if (counter) counter->retention_steps += n;

  std::sort(kept.retained.begin(), kept.retained.end(),
            [](const Retained& a, const Retained& b) { return a.index < b.index; });
  for (const Retained& r : kept.retained)
    if (items[r.index].released()) throw std::logic_error("retention would keep an item whose text was released");

  if (!truncate_to_fit(budget, kept)) return std::nullopt;

  stats.retained_messages = static_cast<std::int64_t>(kept.retained.size());
  std::int64_t omitted = kept.dropped_bytes;
  for (const auto& r : kept.retained) omitted += r.omitted_bytes;
  stats.omitted_bytes = omitted;
  stats.truncated = stats.omitted_messages > 0 || stats.omitted_bytes > 0;

  RetainedSource out;
  out.data_json = serialize(header, anchor_seq, budget, kept);
  if (counter) counter->bytes_written += out.data_json.size();
  // The budget decisions above used the size model; a mismatch would break the budget silently.
  if (static_cast<std::int64_t>(out.data_json.size()) != kept.total(budget))
    throw std::logic_error("retention: serialized size " + std::to_string(out.data_json.size()) + " != modelled " +
                           std::to_string(kept.total(budget)));
  out.stats = stats;
  out.anchor_seq = anchor_seq;
  return out;
}

} // namespace acp::refs
