// ContentBlock (the MCP shape ACP uses), keyed by "type" (https://agentclientprotocol.com/protocol/content).
#pragma once

#include <boost/describe/class.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace acp::protocol {

using Meta = std::optional<boost::json::object>;

struct Annotations {
  std::optional<std::vector<std::string>> audience;
  std::optional<std::string> lastModified;
  std::optional<double> priority;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(Annotations, (), (audience, lastModified, priority, _meta))

struct TextContent {
  static constexpr std::string_view kTagKey = "type", kTag = "text";
  std::string text;
  std::optional<Annotations> annotations;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(TextContent, (), (text, annotations, _meta))

struct ImageContent {
  static constexpr std::string_view kTagKey = "type", kTag = "image";
  std::string data;
  std::string mimeType;
  std::optional<std::string> uri;
  std::optional<Annotations> annotations;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(ImageContent, (), (data, mimeType, uri, annotations, _meta))

struct AudioContent {
  static constexpr std::string_view kTagKey = "type", kTag = "audio";
  std::string data;
  std::string mimeType;
  std::optional<Annotations> annotations;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(AudioContent, (), (data, mimeType, annotations, _meta))

struct ResourceLink {
  static constexpr std::string_view kTagKey = "type", kTag = "resource_link";
  std::string uri;
  std::string name;
  std::optional<std::string> title;
  std::optional<std::string> description;
  std::optional<std::string> mimeType;
  std::optional<std::int64_t> size;
  std::optional<Annotations> annotations;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(ResourceLink, (), (uri, name, title, description, mimeType, size, annotations, _meta))

/// Text or blob resource contents; exactly one of `text` and `blob` is set (checked by the host).
struct ResourceContents {
  std::string uri;
  std::optional<std::string> text;
  std::optional<std::string> blob;
  std::optional<std::string> mimeType;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(ResourceContents, (), (uri, text, blob, mimeType, _meta))

struct EmbeddedResource {
  static constexpr std::string_view kTagKey = "type", kTag = "resource";
  ResourceContents resource;
  std::optional<Annotations> annotations;
  Meta _meta;
};
BOOST_DESCRIBE_STRUCT(EmbeddedResource, (), (resource, annotations, _meta))

using ContentBlock = std::variant<TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource>;

} // namespace acp::protocol
