// The pool kit's size classes: PyCUDA's bitlog2 + 4 mantissa bits, rounded up so exact sizes fit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace cuplug::pool {

static_assert(sizeof(std::size_t) == 8, "the size classes assume a 64-bit size_t");

// A bin number is (floor(log2(size)) << 4) | the 4 bits below the leading one, as PyCUDA's
// (spec §13.5). PyCUDA truncates the lower bits and serves the largest size of the class, so an
// exact 1 MiB takes 1 MiB + 64 KiB - 1. Here sizes round *up* to the next class boundary
// instead: every class holds exactly one block size, (16 + m) << (e - 4), so powers of two and
// other round sizes cost nothing extra and the overhead stays below 1/16.
inline constexpr unsigned mantissa_bits = 4;
inline constexpr std::uint32_t bin_count = 64u << mantissa_bits;

// floor(log2(n)); 0 for n = 0 (PyCUDA's bitlog2).
constexpr unsigned bitlog2(std::size_t n) noexcept {
  return n == 0 ? 0u : 63u - static_cast<unsigned>(__builtin_clzll(n));
}

// The block size of a bin; std::invalid_argument for a bin number >= bin_count.
constexpr std::size_t alloc_size(std::uint32_t bin) {
  if (bin >= bin_count)
    throw std::invalid_argument("memory_pool::alloc_size: bin number " + std::to_string(bin) +
                                " is out of range (0.." + std::to_string(bin_count - 1) + ")");
  const unsigned e = bin >> mantissa_bits;
  const std::size_t head = (std::size_t{1} << mantissa_bits) | (bin & ((1u << mantissa_bits) - 1));
  return e >= mantissa_bits ? head << (e - mantissa_bits) : head >> (mantissa_bits - e);
}

// The largest request a bin can serve.
inline constexpr std::size_t max_block_size = alloc_size(bin_count - 1);

// The bin serving `size` bytes: the smallest class whose block size is >= size. Size 0 shares
// bin 0 (block size 1) with size 1, as in PyCUDA. std::length_error above max_block_size.
constexpr std::uint32_t bin_number(std::size_t size) {
  if (size > max_block_size)
    throw std::length_error("memory_pool::bin_number: " + std::to_string(size) +
                            " bytes is larger than the largest size class (" +
                            std::to_string(max_block_size) + " bytes)");
  unsigned e = bitlog2(size);
  if (e <= mantissa_bits) // small sizes are represented exactly
    return (e << mantissa_bits) | ((size << (mantissa_bits - e)) & ((1u << mantissa_bits) - 1));
  const unsigned shift = e - mantissa_bits;
  std::size_t head = size >> shift; // 16..31
  if ((size & ((std::size_t{1} << shift) - 1)) != 0)
    ++head;
  if (head == (std::size_t{2} << mantissa_bits)) { // rounded up into the next power of two
    ++e;
    head = std::size_t{1} << mantissa_bits;
  }
  return (e << mantissa_bits) | static_cast<std::uint32_t>(head & ((1u << mantissa_bits) - 1));
}

} // namespace cuplug::pool
