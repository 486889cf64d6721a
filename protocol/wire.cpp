#include "wire.hpp"

namespace acp::wire {

std::string Path::pointer() const {
  std::string out;
  for (const auto& token : tokens_) {
    out.push_back('/');
    for (char c : token) {
      if (c == '~') out += "~0";
      else if (c == '/') out += "~1";
      else out.push_back(c);
    }
  }
  return out;
}

std::string_view kind_name(const boost::json::value& v) {
  switch (v.kind()) {
  case boost::json::kind::null: return "null";
  case boost::json::kind::bool_: return "boolean";
  case boost::json::kind::int64:
  case boost::json::kind::uint64:
  case boost::json::kind::double_: return "number";
  case boost::json::kind::string: return "string";
  case boost::json::kind::array: return "array";
  case boost::json::kind::object: return "object";
  }
  return "value";
}

void fail_type(const Path& path, std::string_view expected, const boost::json::value& got) {
  path.fail("expected " + std::string(expected) + ", got " + std::string(kind_name(got)));
}

} // namespace acp::wire
