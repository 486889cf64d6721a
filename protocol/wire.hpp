// The generic JSON codec for wire types, driven by Boost.Describe.
//
// Every ACP type is declared once as a plain struct with wire-named members plus
// BOOST_DESCRIBE_STRUCT; this file derives both directions of its JSON. It exists because Boost.JSON
// 1.81 writes disengaged optionals as null, rejects absent optionals and unknown keys, cannot rename,
// has no tagged unions and reports no error location. Rules:
//  - a member's wire name is its C++ name minus one trailing '_' (`delete_` → "delete");
//  - disengaged optionals are omitted when writing; absent or null optionals read as nullopt;
//  - unknown keys are ignored when reading;
//  - a struct with `kTagKey`/`kTag` writes its tag first; std::variant of such structs reads by tag;
//  - decode failures throw DecodeError carrying the JSON Pointer of the offending value.
#pragma once

#include "support/json_number.hpp"

#include <boost/describe/enum.hpp>
#include <boost/describe/enumerators.hpp>
#include <boost/describe/members.hpp>
#include <boost/json/value.hpp>
#include <boost/mp11/algorithm.hpp>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace acp::wire {

/// A failed decode: `pointer` is the JSON Pointer (RFC 6901) of the bad value, relative to the root.
class DecodeError : public std::runtime_error {
public:
  DecodeError(std::string pointer, const std::string& why)
      : std::runtime_error(why), pointer_(std::move(pointer)) {}
  const std::string& pointer() const noexcept { return pointer_; }

private:
  std::string pointer_;
};

/// The location being decoded, kept as a stack of reference tokens.
class Path {
public:
  void push(std::string_view key) { tokens_.emplace_back(key); }
  void push(std::size_t index) { tokens_.push_back(std::to_string(index)); }
  void pop() { tokens_.pop_back(); }
  std::string pointer() const;
  [[noreturn]] void fail(const std::string& why) const { throw DecodeError(pointer(), why); }

private:
  std::vector<std::string> tokens_;
};

constexpr std::string_view wire_name(std::string_view name) {
  if (!name.empty() && name.back() == '_') name.remove_suffix(1);
  return name;
}

template <class T>
concept Struct = boost::describe::has_describe_members<T>::value && std::is_class_v<T>;
template <class T>
concept Enum = boost::describe::has_describe_enumerators<T>::value;
template <class T>
concept Tagged = requires {
  { T::kTagKey } -> std::convertible_to<std::string_view>;
  { T::kTag } -> std::convertible_to<std::string_view>;
};

template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};
template <class T> struct is_vector : std::false_type {};
template <class T> struct is_vector<std::vector<T>> : std::true_type {};
template <class T> struct is_string_map : std::false_type {};
template <class T> struct is_string_map<std::map<std::string, T>> : std::true_type {};
template <class T> struct is_variant : std::false_type {};
template <class... Ts> struct is_variant<std::variant<Ts...>> : std::true_type {};

std::string_view kind_name(const boost::json::value& v);

[[noreturn]] void fail_type(const Path& path, std::string_view expected, const boost::json::value& got);

// ---------------------------------------------------------------------------------------------
// Encoding

template <class T> boost::json::value encode(const T& v);

template <class T> void encode_into(boost::json::value& out, const T& v) {
  if constexpr (std::is_same_v<T, boost::json::value>) {
    out = v;
  } else if constexpr (std::is_same_v<T, boost::json::object>) {
    out = v;
  } else if constexpr (std::is_same_v<T, boost::json::array>) {
    out = v;
  } else if constexpr (std::is_same_v<T, std::string>) {
    out = boost::json::string(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    out = v;
  } else if constexpr (std::is_integral_v<T>) {
    out = static_cast<std::int64_t>(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    out = static_cast<double>(v);
  } else if constexpr (Enum<T>) {
    std::string_view name;
    boost::mp11::mp_for_each<boost::describe::describe_enumerators<T>>([&](auto d) {
      if (d.value == v) name = wire_name(d.name);
    });
    out = boost::json::string(name);
  } else if constexpr (is_optional<T>::value) {
    if (v) encode_into(out, *v);
    else out = nullptr;
  } else if constexpr (is_vector<T>::value) {
    auto& arr = out.emplace_array();
    arr.reserve(v.size());
    for (const auto& e : v) arr.push_back(encode(e));
  } else if constexpr (is_string_map<T>::value) {
    auto& obj = out.emplace_object();
    for (const auto& [k, e] : v) obj[k] = encode(e);
  } else if constexpr (is_variant<T>::value) {
    std::visit([&](const auto& alt) { encode_into(out, alt); }, v);
  } else if constexpr (Struct<T>) {
    auto& obj = out.emplace_object();
    if constexpr (Tagged<T>) obj[std::string_view(T::kTagKey)] = std::string_view(T::kTag);
    boost::mp11::mp_for_each<boost::describe::describe_members<T, boost::describe::mod_any_access>>([&](auto d) {
      const auto& member = v.*d.pointer;
      using M = std::remove_cvref_t<decltype(member)>;
      if constexpr (is_optional<M>::value) {
        if (!member) return;
      }
      encode_into(obj[wire_name(d.name)], member);
    });
  } else {
    static_assert(sizeof(T) == 0, "type has no wire encoding");
  }
}

template <class T> boost::json::value encode(const T& v) {
  boost::json::value out;
  encode_into(out, v);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Decoding

template <class T> void decode_into(const boost::json::value& in, T& out, Path& path);

template <class Variant> void decode_variant(const boost::json::value& in, Variant& out, Path& path) {
  using First = std::variant_alternative_t<0, Variant>;
  static_assert(Tagged<First>, "variants on the wire are tagged unions");
  const auto* obj = in.if_object();
  if (!obj) fail_type(path, "object", in);
  std::string_view key = First::kTagKey;
  const auto* tag = obj->if_contains(key);
  path.push(key);
  if (!tag) path.fail("missing required field");
  if (!tag->is_string()) fail_type(path, "string", *tag);
  std::string_view name = tag->get_string();
  bool matched = false;
  boost::mp11::mp_for_each<boost::mp11::mp_iota_c<std::variant_size_v<Variant>>>([&](auto index) {
    using Alt = std::variant_alternative_t<index, Variant>;
    if (matched || name != Alt::kTag) return;
    matched = true;
    path.pop();
    Alt alt;
    decode_into(in, alt, path);
    out = std::move(alt);
    path.push(key);
  });
  if (!matched) path.fail("unknown " + std::string(key) + " '" + std::string(name) + "'");
  path.pop();
}

template <class T> void decode_integer(const boost::json::value& in, T& out, Path& path) {
  static_assert(sizeof(T) < sizeof(std::int64_t) || std::is_signed_v<T>, "read through int64");
  constexpr auto lo = static_cast<std::int64_t>(std::numeric_limits<T>::min());
  constexpr auto hi = static_cast<std::int64_t>(std::numeric_limits<T>::max());
  if (auto n = support::json_integer(in, lo, hi)) out = static_cast<T>(*n);
  else if (in.is_int64()) path.fail("integer out of range");
  else fail_type(path, "integer", in);
}

template <class T> void decode_enum(const boost::json::value& in, T& out, Path& path) {
  if (!in.is_string()) fail_type(path, "string", in);
  std::string_view s = in.get_string();
  bool found = false;
  boost::mp11::mp_for_each<boost::describe::describe_enumerators<T>>([&](auto d) {
    if (!found && wire_name(d.name) == s) {
      out = d.value;
      found = true;
    }
  });
  if (!found) path.fail("unknown value '" + std::string(s) + "'");
}

template <class T> void decode_vector(const boost::json::value& in, T& out, Path& path) {
  const auto* arr = in.if_array();
  if (!arr) fail_type(path, "array", in);
  out.clear();
  out.reserve(arr->size());
  for (std::size_t i = 0; i < arr->size(); ++i) {
    path.push(i);
    typename T::value_type e{};
    decode_into((*arr)[i], e, path);
    out.push_back(std::move(e));
    path.pop();
  }
}

template <class T> void decode_string_map(const boost::json::value& in, T& out, Path& path) {
  const auto* obj = in.if_object();
  if (!obj) fail_type(path, "object", in);
  out.clear();
  for (const auto& kv : *obj) {
    path.push(kv.key());
    decode_into(kv.value(), out[std::string(kv.key())], path);
    path.pop();
  }
}

template <class T> void decode_struct(const boost::json::value& in, T& out, Path& path) {
  const auto* obj = in.if_object();
  if (!obj) fail_type(path, "object", in);
  boost::mp11::mp_for_each<boost::describe::describe_members<T, boost::describe::mod_any_access>>([&](auto d) {
    auto& member = out.*d.pointer;
    using M = std::remove_cvref_t<decltype(member)>;
    std::string_view key = wire_name(d.name);
    path.push(key);
    if (const auto* v = obj->if_contains(key)) {
      decode_into(*v, member, path);
    } else if constexpr (!is_optional<M>::value) {
      path.fail("missing required field");
    }
    path.pop();
  });
}

template <class T> void decode_into(const boost::json::value& in, T& out, Path& path) {
  if constexpr (std::is_same_v<T, boost::json::value>) {
    out = in;
  } else if constexpr (std::is_same_v<T, boost::json::object>) {
    if (!in.is_object()) fail_type(path, "object", in);
    out = in.get_object();
  } else if constexpr (std::is_same_v<T, boost::json::array>) {
    if (!in.is_array()) fail_type(path, "array", in);
    out = in.get_array();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!in.is_string()) fail_type(path, "string", in);
    out.assign(in.get_string().data(), in.get_string().size());
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!in.is_bool()) fail_type(path, "boolean", in);
    out = in.get_bool();
  } else if constexpr (std::is_integral_v<T>) {
    decode_integer(in, out, path);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!in.is_number()) fail_type(path, "number", in);
    out = static_cast<T>(in.to_number<double>());
  } else if constexpr (Enum<T>) {
    decode_enum(in, out, path);
  } else if constexpr (is_optional<T>::value) {
    if (in.is_null()) {
      out.reset();
    } else {
      typename T::value_type inner{};
      decode_into(in, inner, path);
      out = std::move(inner);
    }
  } else if constexpr (is_vector<T>::value) {
    decode_vector(in, out, path);
  } else if constexpr (is_string_map<T>::value) {
    decode_string_map(in, out, path);
  } else if constexpr (is_variant<T>::value) {
    decode_variant(in, out, path);
  } else if constexpr (Struct<T>) {
    decode_struct(in, out, path);
  } else {
    static_assert(sizeof(T) == 0, "type has no wire decoding");
  }
}

/// Decodes `in` as T; throws DecodeError with the pointer of the first bad value.
template <class T> T decode(const boost::json::value& in) {
  Path path;
  T out{};
  decode_into(in, out, path);
  return out;
}

} // namespace acp::wire
