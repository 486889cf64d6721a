// SHA-256 (FIPS 180-4), the store's one digest: tool-result fingerprints, directory names, the
// index cache's file name, `dsh-acp store` comparisons. Our own rather than OpenSSL's, so that
// nothing but the HTTPS provider needs OpenSSL, which the server then loads only when it makes its
// first HTTPS request (issue 31: OpenSSL's pointer tables were 90 of the ~130 pages the loader
// relocated at every start).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace acp::support {

class Sha256;
namespace detail {
/// sha256() without the CPU's SHA extensions, which it uses where there are some (tests compare).
std::array<unsigned char, 32> sha256_portable(std::string_view bytes) noexcept;
}

/// A running digest: update() any number of times, digest() of everything so far (it may go on).
class Sha256 {
public:
  using Digest = std::array<unsigned char, 32>;

  Sha256() noexcept;
  Sha256& update(std::string_view bytes) noexcept;
  Digest digest() const noexcept;

private:
  friend Digest detail::sha256_portable(std::string_view) noexcept;
  void compress(const unsigned char* block) noexcept;

  std::array<std::uint32_t, 8> state_;
  std::array<unsigned char, 64> pending_{};  ///< the bytes of an unfinished block
  std::size_t pending_size_ = 0;
  std::uint64_t length_ = 0;  ///< bytes taken in so far
  bool portable_ = false;
};

/// The digest of `bytes`.
Sha256::Digest sha256(std::string_view bytes) noexcept;

} // namespace acp::support
