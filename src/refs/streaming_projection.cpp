#include "refs/streaming_projection.hpp"

#include "refs/retention.hpp"

#include "store/errors.hpp"
#include "store/records.hpp"

#include <algorithm>
#include <unordered_set>

namespace acp::refs {

namespace {

[[noreturn]] void changed_while_read() {
  throw store::StoreError("session log changed while it was read");
}

} // namespace

void StreamingProjector::hold(const Item& item, const ProjectedItem& projected) {
  Held held{projected.text.data() == joined_.data() ? std::move(joined_) : std::string(projected.text), item.checkpoint};
  texts_.insert_or_assign(item.seq, std::move(held));
}

void StreamingProjector::add(const boost::json::object& event) {
  if (error_) return;
  store::FoldStep step;
  try {
    step = fold_.apply(event);
  } catch (const store::FoldError& e) {
    error_ = e;  // the rest of the log is still scanned for corruption, but nothing is kept
    items_ = {};
    texts_ = {};
    node_has_item_ = {};
    return;
  }
  if (step.kind == store::FoldStep::Kind::skipped) return;
  const std::int64_t seq = fold_.count() - 1;
  std::optional<ProjectedItem> projected = project_event(event, joined_);
  std::optional<Item> item;
  if (projected)
    item = Item{seq, item_size(projected->role, projected->text), static_cast<std::int64_t>(projected->text.size()),
                projected->role, projected->checkpoint};

  if (anchor_seq_) {
    follow_anchor(step, seq);
    if (step.kind == store::FoldStep::Kind::appended) {
      node_has_item_.push_back(item.has_value());
      if (item) items_.push_back(*item);
    } else {
      replace_items(step, item);
    }
    return;  // no text is held: the second pass fetches those near the anchor
  }
  if (step.kind == store::FoldStep::Kind::appended) {
    node_has_item_.push_back(item.has_value());
    if (!item) return;
    items_.push_back(*item);
    hold(*item, *projected);
    window_size_ += item->size;
    advance_window();
    return;
  }
  replace_items(step, item);
  if (item) hold(*item, *projected);
  recompute_window();
}

// The shadowed nodes' items are a contiguous run of items_, starting after the items of the nodes
// before `first`; the replacing item (if any) takes their place.
void StreamingProjector::replace_items(const store::FoldStep& step, const std::optional<Item>& item) {
  auto nodes = node_has_item_.begin();
  const auto k = static_cast<std::size_t>(std::count(nodes, nodes + std::ptrdiff_t(step.first), true));
  const auto m = static_cast<std::size_t>(
      std::count(nodes + std::ptrdiff_t(step.first), nodes + std::ptrdiff_t(step.last) + 1, true));
  for (std::size_t j = k; j < k + m; ++j) texts_.erase(items_[j].seq);
  items_.erase(items_.begin() + std::ptrdiff_t(k), items_.begin() + std::ptrdiff_t(k + m));
  node_has_item_.erase(nodes + std::ptrdiff_t(step.first), nodes + std::ptrdiff_t(step.last) + 1);
  node_has_item_.insert(node_has_item_.begin() + std::ptrdiff_t(step.first), item.has_value());
  if (item) items_.insert(items_.begin() + std::ptrdiff_t(k), *item);
}

// The anchor is the first surface event at or after seq N (the event holding N, or the one that
// follows it when N is log-only), and from then on the node that replaces it: a checkpoint covers
// the seqs it replaced.
void StreamingProjector::follow_anchor(const store::FoldStep& step, std::int64_t seq) {
  if (step.kind == store::FoldStep::Kind::replaced && anchor_node_) {
    if (*anchor_node_ >= step.first && *anchor_node_ <= step.last)
      anchor_node_ = step.first;
    else if (*anchor_node_ > step.last)
      *anchor_node_ -= step.last - step.first;
  }
  if (anchor_node_ || seq < *anchor_seq_) return;
  anchor_node_ = step.kind == store::FoldStep::Kind::appended ? fold_.size() - 1 : step.first;
}

std::optional<std::size_t> StreamingProjector::anchor_index() const {
  if (!anchor_seq_ || items_.empty()) return std::nullopt;
  // Beyond the log: the nearest item is the newest.
  if (!anchor_node_) return items_.size() - 1;
  const auto nodes = node_has_item_.begin();
  const auto k = static_cast<std::size_t>(std::count(nodes, nodes + std::ptrdiff_t(*anchor_node_), true));
  return std::min(k, items_.size() - 1);
}

// Centred retention keeps the anchored item and a contiguous run around it whose serialized sizes
// (plus fixed fields and commas) fit the budget, so an item with more than the budget between it
// and the anchor (inclusive) is certainly dropped.
StreamingProjector::Reach StreamingProjector::reach() const {
  Reach r;
  if (!anchor_seq_) return r;
  const std::optional<std::size_t> a = anchor_index();
  if (!a) return r;
  r.any = true;
  r.lo = r.hi = *a;
  std::int64_t sum = items_[*a].size;
  while (r.hi + 1 < items_.size() && sum + items_[r.hi + 1].size <= max_) sum += items_[++r.hi].size;
  sum = items_[*a].size;
  while (r.lo > 0 && sum + items_[r.lo - 1].size <= max_) sum += items_[--r.lo].size;
  return r;
}

bool StreamingProjector::needed(std::size_t j, const Reach& r) const {
  if (anchor_seq_) return r.any && j >= r.lo && j <= r.hi;
  return j >= window_ || items_[j].checkpoint;
}

// Moves the window start forward past every item that has more than the budget after it.
void StreamingProjector::advance_window() {
  while (window_ + 1 < items_.size() && window_size_ - items_[window_].size > max_) {
    if (!items_[window_].checkpoint) texts_.erase(items_[window_].seq);
    window_size_ -= items_[window_].size;
    ++window_;
  }
}

// After a replace: the smallest window whose items after its start fit the budget, walking back
// from the newest item; held texts of eligible items before it are released.
void StreamingProjector::recompute_window() {
  if (items_.empty()) {
    window_ = 0;
    window_size_ = 0;
    return;
  }
  std::size_t w = items_.size() - 1;
  std::int64_t after = 0;
  while (w > 0 && after + items_[w].size <= max_) {
    after += items_[w].size;
    --w;
  }
  window_ = w;
  window_size_ = after + items_[w].size;
  std::unordered_set<std::int64_t> in_window;
  for (std::size_t j = w; j < items_.size(); ++j) in_window.insert(items_[j].seq);
  for (auto it = texts_.begin(); it != texts_.end();) {
    if (!it->second.checkpoint && !in_window.contains(it->first))
      it = texts_.erase(it);
    else
      ++it;
  }
}

std::vector<std::int64_t> StreamingProjector::missing() const {
  std::vector<std::int64_t> out;
  const Reach r = reach();
  for (std::size_t j = 0; j < items_.size(); ++j)
    if (needed(j, r) && !texts_.contains(items_[j].seq)) out.push_back(items_[j].seq);
  return out;
}

void StreamingProjector::refill(const boost::json::object& event) {
  if (wanted_.empty()) {
    const Reach r = reach();
    for (std::size_t j = 0; j < items_.size(); ++j)
      if (needed(j, r) && !texts_.contains(items_[j].seq)) wanted_.emplace(items_[j].seq, j);
    if (wanted_.empty()) return;
  }
  const boost::json::value* seq_v = event.if_contains("seq");
  auto seq = seq_v ? store::safe_int(*seq_v) : std::nullopt;
  if (!seq) return;
  auto it = wanted_.find(*seq);
  if (it == wanted_.end() || texts_.contains(*seq)) return;
  std::optional<ProjectedItem> projected = project_event(event, joined_);
  const Item& item = items_[it->second];
  if (!projected || projected->role != item.role || projected->checkpoint != item.checkpoint ||
      static_cast<std::int64_t>(projected->text.size()) != item.bytes)
    changed_while_read();
  hold(item, *projected);
}

ProjectedConversation StreamingProjector::finish() {
  if (error_) throw *error_;
  ProjectedConversation out;
  out.items.reserve(items_.size());
  out.joined_storage.reserve(texts_.size());
  const Reach r = reach();
  for (std::size_t j = 0; j < items_.size(); ++j) {
    const Item& item = items_[j];
    ProjectedItem p;
    p.role = item.role;
    p.checkpoint = item.checkpoint;
    p.seq = item.seq;
    if (auto it = texts_.find(item.seq); it != texts_.end()) {
      out.joined_storage.push_back(std::make_unique<std::string>(std::move(it->second.text)));
      p.text = *out.joined_storage.back();
    } else if (!needed(j, r)) {
      p.released_bytes = item.bytes;
      p.released_size = item.size;
    } else {
      changed_while_read();  // a second pass did not find the text it needed
    }
    out.items.push_back(p);
  }
  items_ = {};
  texts_ = {};
  return out;
}

ProjectedSource project_log(const EventStream& stream, std::int64_t max_reference_bytes,
                            std::optional<std::int64_t> anchor_seq) {
  StreamingProjector projector(max_reference_bytes, anchor_seq);
  StreamedLog log = stream([&](boost::json::object&& e) { projector.add(e); });
  if (!projector.missing().empty()) stream([&](boost::json::object&& e) { projector.refill(e); });
  ProjectedSource out;
  out.session_id = std::move(log.header.id);
  out.cwd = std::move(log.header.cwd);
  out.captured_through_seq = log.captured_through_seq;
  out.anchor = projector.anchor_index();
  out.conversation = projector.finish();
  return out;
}

} // namespace acp::refs
