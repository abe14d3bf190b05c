// SHA-256 for the compile cache's keys and entry checksums (not installed).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cuplug {

// SHA-256 (FIPS 180-4). Self-contained on purpose: the Boost versions we must build with (1.74,
// 1.83) have no public SHA-256 (Boost.Hash2 arrived in 1.86), and OpenSSL would make the core
// link a crypto library for one hash. Tested against the FIPS vectors in test_compile_cache.cpp.
// One object hashes one message: finish() / hex() end it.
class sha256 {
public:
  void update(const void *data, std::size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // A field with its length in front, so that ("ab","c") and ("a","bc") hash differently.
  void field(std::string_view s);

  std::array<unsigned char, 32> finish();
  std::string hex(); // finish() as 64 lowercase hex digits

private:
  void compress(const unsigned char *p);

  std::uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char block_[64];
  std::size_t fill_ = 0;
  std::uint64_t total_ = 0;
};

// Lowercase hex SHA-256 of `data` (the key and entry checksum hash).
std::string sha256_hex(std::string_view data);

} // namespace cuplug
