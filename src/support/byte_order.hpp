// Reading fixed-width integers out of file formats' bytes (image headers and structures). The caller
// checks the bounds.
#pragma once

#include <cstdint>
#include <string_view>

namespace acp::support::bytes {

inline std::uint32_t byte_at(std::string_view b, std::size_t i) { return static_cast<unsigned char>(b[i]); }
inline std::uint32_t be16(std::string_view b, std::size_t i) { return byte_at(b, i) << 8 | byte_at(b, i + 1); }
inline std::uint32_t le16(std::string_view b, std::size_t i) { return byte_at(b, i) | byte_at(b, i + 1) << 8; }
inline std::uint32_t le24(std::string_view b, std::size_t i) { return le16(b, i) | byte_at(b, i + 2) << 16; }
inline std::uint32_t be32(std::string_view b, std::size_t i) { return be16(b, i) << 16 | be16(b, i + 2); }
inline std::uint32_t le32(std::string_view b, std::size_t i) { return le16(b, i) | le16(b, i + 2) << 16; }

} // namespace acp::support::bytes
