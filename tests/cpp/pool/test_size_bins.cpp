// The pool's size classes: every size fits its class, classes round-trip, overhead < 1/16.
#include <cuplug/pool/size_bins.hpp>

#include <boost/test/unit_test.hpp>

#include <random>

namespace pool = cuplug::pool;

BOOST_AUTO_TEST_SUITE(size_bins)

BOOST_AUTO_TEST_CASE(bitlog2_is_floor_log2) {
  BOOST_TEST(pool::bitlog2(0) == 0u);
  BOOST_TEST(pool::bitlog2(1) == 0u);
  BOOST_TEST(pool::bitlog2(2) == 1u);
  BOOST_TEST(pool::bitlog2(3) == 1u);
  BOOST_TEST(pool::bitlog2(1023) == 9u);
  BOOST_TEST(pool::bitlog2(1024) == 10u);
  BOOST_TEST(pool::bitlog2(~std::size_t{0}) == 63u);
}

BOOST_AUTO_TEST_CASE(small_sizes_are_exact_and_zero_shares_bin_0) {
  for (std::size_t n = 1; n <= 32; ++n)
    BOOST_TEST(pool::alloc_size(pool::bin_number(n)) == n);
  BOOST_TEST(pool::bin_number(0) == 0u);
  BOOST_TEST(pool::alloc_size(0) == 1u);
}

BOOST_AUTO_TEST_CASE(round_sizes_cost_nothing) {
  // PyCUDA's truncating scheme serves 1 MiB with 1 MiB + 64 KiB - 1; this one with 1 MiB.
  for (unsigned e = 5; e < 62; ++e) {
    const std::size_t n = std::size_t{1} << e;
    BOOST_TEST(pool::alloc_size(pool::bin_number(n)) == n);
    BOOST_TEST(pool::alloc_size(pool::bin_number(n + 1)) == n + (n >> 4));
    BOOST_TEST(pool::alloc_size(pool::bin_number(3 * n)) == 3 * n);
  }
}

BOOST_AUTO_TEST_CASE(random_sizes_fit_their_class_with_small_overhead) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200000; ++i) {
    const std::size_t n = (rng() >> (rng() % 64)) + 1;
    if (n > pool::max_block_size)
      continue;
    const std::uint32_t bin = pool::bin_number(n);
    const std::size_t block = pool::alloc_size(bin);
    BOOST_TEST_REQUIRE(block >= n);
    BOOST_TEST_REQUIRE(pool::bin_number(block) == bin); // classes round-trip
    BOOST_TEST_REQUIRE(block - n <= n / 16);            // < 6.25 % overhead
    if (bin > 0)
      BOOST_TEST_REQUIRE(pool::alloc_size(bin - 1) < n); // the smallest class that fits
  }
}

BOOST_AUTO_TEST_CASE(sizes_beyond_4_gib_and_the_top_class) {
  const std::size_t five_gib = std::size_t{5} << 30;
  BOOST_TEST(pool::alloc_size(pool::bin_number(five_gib)) == five_gib);
  BOOST_TEST(pool::alloc_size(pool::bin_number(five_gib + 1)) > five_gib);
  BOOST_TEST(pool::bin_number(pool::max_block_size) == pool::bin_count - 1);
  BOOST_CHECK_THROW(pool::bin_number(pool::max_block_size + 1), std::length_error);
  BOOST_CHECK_THROW(pool::alloc_size(pool::bin_count), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
