// Fuzz target `refs`: `dsh-session:` URI decoding, mention parsing and `/ref` parsing.
// Input: prompt text, then optional listing rows "id\tcwd\ttitle" separated by 0x1E.
// The prompt goes through parse_text (mentions), decode_uri, and parse_slash_command; a `/ref`
// query then filters the rows with select_candidates as list_candidates does. The handler around
// `/ref` (session lookup, store listing) needs the handler runtime, so only its pure steps run here.
// Properties: a decoded URI re-encodes to itself; encode→decode and format_mention→parse_text
// round-trip valid UTF-8 ids and labels.
#include "fuzz_support.hpp"

#include "handlers/slash_command_text.hpp"
#include "refs/candidates.hpp"
#include "refs/errors.hpp"
#include "refs/mentions.hpp"
#include "refs/uri.hpp"

#include <string>

namespace {

using namespace acp;

void check_uri(std::string_view text) {
  try {
    std::string id = refs::decode_uri(text);
    if (refs::encode_uri(id) != text) dsh_fuzz::violated("decode_uri accepted a non-canonical URI");
  } catch (const refs::SessionReferenceError&) {
  }
  if (dsh_fuzz::valid_utf8(text)) {
    std::string uri = refs::encode_uri(text);
    try {
      if (refs::decode_uri(uri) != text) dsh_fuzz::violated("decode_uri(encode_uri(id)) != id");
    } catch (const refs::SessionReferenceError&) {
      dsh_fuzz::violated("decode_uri rejected encode_uri's output");
    }
  }
}

void check_mentions(std::string_view text) {
  try {
    refs::ParsedText parsed = refs::parse_text(text);
    for (const auto& r : parsed.references) (void)refs::encode_uri(r.session_id);
  } catch (const refs::SessionReferenceError&) {
  }
}

void check_mention_round_trip(std::string_view id, std::string_view label) {
  if (!dsh_fuzz::valid_utf8(id) || !dsh_fuzz::valid_utf8(label)) return;
  std::string mention = refs::format_mention({std::string(id), std::string(label)});
  refs::ParsedText parsed;
  try {
    parsed = refs::parse_text("see " + mention + " please");
  } catch (const refs::SessionReferenceError&) {
    dsh_fuzz::violated("parse_text rejected format_mention's output");
  }
  if (parsed.references.size() != 1 || parsed.references[0].session_id != id || parsed.references[0].label != label)
    dsh_fuzz::violated("format_mention does not parse back to its id and label");
}

void check_ref_command(std::string_view prompt, const std::vector<std::string_view>& rows) {
  auto command = handlers::parse_slash_command(prompt);
  if (!command) return;
  // The commands without an argument to check here (handlers/slash_commands.cpp).
  if (command->name == "compact" || command->name == "share" || command->name == "unshare") return;
  if (command->name != "ref") dsh_fuzz::violated("unknown slash command recognised");
  std::vector<store::SessionListing> listings;
  for (std::string_view row : rows) {
    auto fields = dsh_fuzz::split(row, '\t');
    store::SessionListing l;
    l.header.id = std::string(fields[0]);
    if (fields.size() > 1 && !fields[1].empty()) l.header.cwd = std::string(fields[1]);
    if (fields.size() > 2) l.title = std::string(fields[2]);
    l.header.createdAt = std::int64_t(listings.size());
    listings.push_back(std::move(l));
  }
  refs::Target target{"target", std::string("/work")};
  auto candidates = refs::select_candidates(listings, target, command->argument, 50, true);
  if (candidates.size() > listings.size()) dsh_fuzz::violated("more candidates than listings");
  for (const auto& c : candidates)
    if (c.session_id == target.id) dsh_fuzz::violated("the target is its own candidate");
  (void)refs::lowercase_en_us(command->argument);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto parts = dsh_fuzz::split(in, '\x1e');
  std::string_view prompt = parts[0];
  std::vector<std::string_view> rows(parts.begin() + 1, parts.end());
  if (rows.size() > 64) rows.resize(64);

  check_mentions(prompt);
  check_uri(prompt);
  check_ref_command(prompt, rows);
  // The first row's id and title double as a mention's id and label.
  if (!rows.empty()) {
    auto fields = dsh_fuzz::split(rows[0], '\t');
    check_mention_round_trip(fields[0], fields.size() > 2 ? fields[2] : fields[0]);
  }
  return 0;
}
