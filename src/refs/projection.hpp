// Projection of a folded session surface onto the conversation a reference carries (harness-compat §5.6).
//
// Only direct-user user/steering messages, assistant text and compact checkpoints (user/message whose
// source is {kind:"plugin",plugin:"compact"}) survive; text blocks are joined with "\n" and empty
// results are dropped. Items borrow their text from the snapshot (string_view), so projection copies
// nothing: the snapshot must outlive the items.
#pragma once

#include "refs/work_counter.hpp"

#include <boost/json/object.hpp>

#include <memory>
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
};

struct ProjectedConversation {
  std::vector<ProjectedItem> items;
  /// Owns the texts joined from several blocks; unique_ptr keeps their addresses stable.
  std::vector<std::unique_ptr<std::string>> joined_storage;
};

/// Whether `source` is the compact checkpoint marker: kind "plugin" and plugin "compact" (extra keys ignored).
bool is_compact_checkpoint_source(const boost::json::value* source);

ProjectedConversation project(const std::vector<boost::json::object>& events, WorkCounter* counter = nullptr);

} // namespace acp::refs
