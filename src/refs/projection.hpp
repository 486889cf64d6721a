// Projection of a folded session surface onto the conversation a reference carries
// (docs/session-references.md#projection).
//
// Only direct-user user/steering messages, assistant text and compact checkpoints (user/message whose
// source is {kind:"plugin",plugin:"compact"}) survive; text blocks are joined with "\n" and empty
// results are dropped. project() works on a snapshot already in memory: items borrow their text from
// it (string_view), so it copies nothing and the snapshot must outlive the items. project_event() is
// the rule for one event, shared with the streaming reader (streaming_projection.hpp).
#pragma once

#include "refs/work_counter.hpp"

#include "store/session_types.hpp"

#include <boost/json/object.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace acp::refs {

enum class Role { user, assistant };

struct ProjectedItem {
  Role role = Role::user;
  bool checkpoint = false;
  /// The joined text. Points into the event when there is a single text block; otherwise into
  /// ProjectedConversation::joined_storage.
  std::string_view text;
  /// Set (>= 0) when a streaming reader let go of the text because retention certainly drops the
  /// item: the text's UTF-8 bytes and the item's serialized size as retention measures it. `text`
  /// is empty then, and retention must never keep the item.
  std::int64_t released_bytes = -1;
  std::int64_t released_size = -1;
  /// The seq of the event the item comes from (-1 when the event had none); what an anchor names.
  std::int64_t seq = -1;

  bool released() const { return released_bytes >= 0; }
};

struct ProjectedConversation {
  std::vector<ProjectedItem> items;
  /// Owns the texts joined from several blocks (and every text of a streamed source); unique_ptr
  /// keeps their addresses stable.
  std::vector<std::unique_ptr<std::string>> joined_storage;
};

/// One source as the service renders it: the header fields retention needs and the projected items.
struct ProjectedSource {
  std::string session_id;  ///< the snapshot's id
  std::optional<std::string> cwd;
  std::optional<std::int64_t> captured_through_seq;
  ProjectedConversation conversation;
  /// Read for an anchored reference: the index in conversation.items of the item the snapshot
  /// centres on, nullopt when there is no item. Unset for a read without an anchor.
  std::optional<std::size_t> anchor = std::nullopt;
};

/// Whether `source` is the compact checkpoint marker: kind "plugin" and plugin "compact" (extra keys ignored).
bool is_compact_checkpoint_source(const boost::json::value* source);

/// The item one surface event contributes, nullopt when none. A text joined from several blocks is
/// written to `joined` and the item points there; a single block's text points into the event.
std::optional<ProjectedItem> project_event(const boost::json::object& event, std::string& joined);

ProjectedConversation project(const std::vector<boost::json::object>& events, WorkCounter* counter = nullptr);

/// project() of a snapshot into a source that owns its texts (for hosts that hold whole snapshots).
ProjectedSource project_snapshot(const store::SurfaceSnapshot& snapshot);

/// The item an anchor at `seq` centres on, judged from the items' own seqs only: the item holding
/// it, else the one with the smallest seq after it, else the last item; nullopt without items.
/// For hosts holding projected snapshots; a store read follows the log's replacements instead
/// (streaming_projection.hpp), which this cannot see.
std::optional<std::size_t> anchor_by_item_seqs(const std::vector<ProjectedItem>& items, std::int64_t seq);

} // namespace acp::refs
