#include "handlers/handlers.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/wire.hpp"
#include "refs/service.hpp"
#include "refs/uri.hpp"
#include "store/layout.hpp"
#include "store/listing_index.hpp"
#include "store/title.hpp"
#include "support/hex.hpp"
#include "support/iso_time.hpp"
#include "support/json_text.hpp"

#include <boost/json.hpp>

namespace acp::handlers {

namespace json = boost::json;

namespace {

constexpr std::size_t kPageSize = 100;
// Line-limited clients (the Python SDK) read frames of at most 64 KiB: the items of a page take at
// most this much, leaving room for the envelope, the request id and the cursor. Long cwds or ids
// mean fewer items per page; a page always holds at least one item.
constexpr std::size_t kMaxItemsBytes = 60 * 1024;

// The cursor is the keyset (createdAt, id) of the last row sent, as JSON text made opaque with hex.
std::string encode_cursor(std::int64_t created_at, const std::string& id) {
  std::string text = json::serialize(json::array{created_at, json::string(id)});
  return support::hex_encode(text);
}

std::pair<std::int64_t, std::string> decode_cursor(const std::string& cursor) {
  auto bad = [] { return jsonrpc::invalid_params("/cursor", "not a cursor returned by session/list"); };
  if (cursor.size() % 2) throw bad();
  std::string text;
  for (std::size_t i = 0; i < cursor.size(); i += 2) {
    auto nibble = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      throw bad();
    };
    text.push_back(static_cast<char>(nibble(cursor[i]) * 16 + nibble(cursor[i + 1])));
  }
  boost::system::error_code ec;
  json::value v = support::parse_json(text, ec);  // the client's bytes, whatever it made of our cursor
  if (ec || !v.is_array() || v.as_array().size() != 2 || !v.as_array()[0].is_int64() || !v.as_array()[1].is_string())
    throw bad();
  return {v.as_array()[0].get_int64(), std::string(v.as_array()[1].get_string())};
}

protocol::SessionInfo session_info(const store::SessionListing& row) {
  protocol::SessionInfo info;
  info.sessionId = row.header.id;
  info.cwd = *row.header.cwd;
  // Titles other programs wrote may be long or hold escape sequences: listed cleaned and cut as
  // the original's fallback titles are (docs/store-format.md#titles).
  if (row.title) {
    std::string title = store::listed_title(*row.title);
    if (!title.empty() || row.title->empty()) info.title = std::move(title);
  }
  info.updatedAt = support::iso_time(row.updatedAt);
  // Discovery: clients and scripts can build mentions without parsing our URI scheme.
  info._meta = json::object{{"deepseek-harness/sessionReference", {{"uri", refs::encode_uri(row.header.id)}}}};
  // A store with people: whose the session is, and whether its owner shared it.
  if (row.owner) {
    info._meta->emplace("dsh-acp/owner", *row.owner);
    info._meta->emplace("dsh-acp/shared", row.shared);
  }
  // A prompt there would be refused (a read-only root, someone else's session): the client can
  // say so before the user types one.
  if (row.read_only) info._meta->emplace("dsh-acp/readOnly", true);
  return info;
}

// `_meta["dsh-acp/query"]` (or `_meta.query`): a search by content, nullopt when absent.
std::optional<std::string> search_words(const protocol::ListSessionsRequest& req) {
  if (!req._meta) return std::nullopt;
  for (std::string_view key : {"dsh-acp/query", "query"}) {
    const json::value* v = req._meta->if_contains(key);
    if (!v || v->is_null()) continue;
    if (!v->is_string()) throw jsonrpc::invalid_params("/_meta/" + std::string(key), "a search query must be a string");
    if (v->get_string().size() > 1024)
      throw jsonrpc::invalid_params("/_meta/" + std::string(key), "a search query takes at most 1024 bytes");
    return std::string(v->get_string());
  }
  return std::nullopt;
}

} // namespace

boost::asio::awaitable<protocol::ListSessionsResponse> session_list(HandlerContext& ctx,
                                                                    protocol::ListSessionsRequest req) {
  if (std::optional<std::string> words = search_words(req)) {
    // Best first, one page: a search has no cursor (a ranking changes as sessions are written).
    if (req.cursor) throw jsonrpc::invalid_params("/cursor", "a search by content has no further pages");
    if (req.cwd) {
      store::ListQuery check;
      check.cwd = req.cwd;
      check.limit = 1;
      co_await ctx.engine.list(check);  // the same check of the cwd as a listing's
    }
    const std::optional<std::string> cwd = req.cwd ? std::optional(store::normalize_cwd(*req.cwd)) : std::nullopt;
    std::vector<refs::ContentMatch> found = co_await ctx.engine.search_sessions(nullptr, *words, 4 * kPageSize);
    protocol::ListSessionsResponse response;
    std::size_t items_bytes = 0;
    for (const refs::ContentMatch& m : found) {
      if (!m.listing.header.cwd || (cwd && store::normalize_cwd(*m.listing.header.cwd) != *cwd)) continue;
      protocol::SessionInfo info = session_info(m.listing);
      info._meta->emplace("dsh-acp/match", json::object{{"seq", m.seq}, {"kind", m.kind}, {"snippet", m.snippet}});
      std::size_t bytes = json::serialize(wire::encode(info)).size() + 1;
      if (response.sessions.size() >= kPageSize || (!response.sessions.empty() && items_bytes + bytes > kMaxItemsBytes)) break;
      items_bytes += bytes;
      response.sessions.push_back(std::move(info));
    }
    co_return response;
  }
  store::ListQuery query;
  query.with_cwd_only = true;  // the protocol needs an absolute cwd to load a session
  query.cwd = req.cwd;  // checked by the engine, as session/new's is
  if (req.cursor) query.after = decode_cursor(*req.cursor);
  query.limit = kPageSize + 1;
  std::vector<store::SessionListing> rows = co_await ctx.engine.list(query);

  protocol::ListSessionsResponse response;
  std::size_t items_bytes = 0;
  bool full = false;
  for (std::size_t i = 0; i < rows.size() && i < kPageSize; ++i) {
    protocol::SessionInfo info = session_info(rows[i]);
    std::size_t bytes = json::serialize(wire::encode(info)).size() + 1;  // and its comma
    if (!response.sessions.empty() && items_bytes + bytes > kMaxItemsBytes) {
      full = true;
      break;
    }
    items_bytes += bytes;
    response.sessions.push_back(std::move(info));
  }
  if (full || rows.size() > kPageSize) {
    const auto& last = rows[response.sessions.size() - 1];
    response.nextCursor = encode_cursor(last.header.createdAt, last.header.id);
  }
  co_return response;
}

} // namespace acp::handlers
