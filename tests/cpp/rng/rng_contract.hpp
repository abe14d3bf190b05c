// The rng contract: what every rng backend must do, as functions over a factory, and the macro
// that makes one Boost.Test suite of them per backend (and generator).
#pragma once

#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/registry.hpp>
#include <cuplug/rng.hpp>

#include <boost/test/unit_test.hpp>

#include "support/gpu_present.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cuplug::test {

// One backend under test.
struct rng_case {
  std::function<plugin_ptr<rng>()> make;
  bool device = false;  // writes device memory (needs a CUDA context), else host memory
  bool seekable = true; // set_offset is expected to work
  unsigned dimensions = 1;
  bool quasi = false;  // Sobol: no seed, offsets below 2^32
  bool tables = false; // publishes the Sobol tables
};

// A new object of rng backend `name` with `opts` (registry::create, not the shared backend).
inline std::function<plugin_ptr<rng>()> rng_backend(const std::string &name,
                                                    std::map<std::string, std::string> opts = {}) {
  return [name, opts] {
    return registry::instance().create<rng>(plugin_kind::rng, name, options(opts));
  };
}

// Output memory of a case: host memory, or device memory read back after the stream's work.
class rng_buffer {
public:
  rng_buffer(const rng_case &c, std::size_t bytes) : device_(c.device), host_(bytes + 64) {
    if (device_)
      CUPLUG_CALL(cuMemAlloc, &ptr_, bytes == 0 ? 1 : bytes);
    else
      ptr_ = reinterpret_cast<device_ptr>(host_.data());
  }
  ~rng_buffer() {
    if (device_)
      (void)driver().cuMemFree(ptr_);
  }
  rng_buffer(const rng_buffer &) = delete;
  rng_buffer &operator=(const rng_buffer &) = delete;
  device_ptr ptr() const { return ptr_; }
  template <class T> std::vector<T> read(std::size_t count) {
    std::vector<T> out(count);
    if (count == 0)
      return out;
    if (device_) {
      CUPLUG_CALL(cuCtxSynchronize, nullptr);
      CUPLUG_CALL(cuMemcpyDtoH, out.data(), ptr_, count * sizeof(T));
    } else {
      std::memcpy(out.data(), host_.data(), count * sizeof(T));
    }
    return out;
  }

private:
  bool device_;
  std::vector<char> host_;
  device_ptr ptr_ = 0;
};

namespace rng_contract {

inline const rng_distribution all_distributions[] = {
    rng_distribution::raw_bits, rng_distribution::uniform, rng_distribution::normal,
    rng_distribution::lognormal, rng_distribution::poisson};
inline const rng_dtype all_dtypes[] = {rng_dtype::float32, rng_dtype::float64, rng_dtype::uint32,
                                       rng_dtype::uint64};

inline plugin_ptr<rng> make(const rng_case &c) {
  if (c.device)
    make_gpu_current();
  plugin_ptr<rng> g = c.make();
  BOOST_REQUIRE(g);
  return g;
}

// A count that every distribution takes: even (Box-Muller) and whole points of a quasi generator.
inline std::size_t valid_count(const rng_case &c, std::size_t n) {
  const std::size_t unit = c.dimensions % 2 == 0 ? c.dimensions : 2 * c.dimensions;
  return (n + unit - 1) / unit * unit;
}

// Generates `count` values as raw bytes (element size from dtype).
inline std::vector<std::uint8_t> draw(const rng_case &c, rng &g, rng_distribution d, rng_dtype t,
                                      std::size_t count, const rng_params &p = {}) {
  rng_buffer b(c, count * size_of(t));
  g.generate(d, t, b.ptr(), count, p);
  return b.read<std::uint8_t>(count * size_of(t));
}

inline rng_params params_for(rng_distribution d) {
  rng_params p;
  if (d == rng_distribution::lognormal) {
    p.mean = 0.25;
    p.stddev = 0.5;
  } else if (d == rng_distribution::normal) {
    p.mean = 1.5;
    p.stddev = 2.0;
  } else if (d == rng_distribution::poisson) {
    p.lambda = 3.5;
  }
  return p;
}

inline std::string what(rng_distribution d, rng_dtype t) {
  return std::string(to_string(d)) + " " + to_string(t);
}

// A new generator starts at offset 0 with seed 0; seed() goes back to offset 0 and replays.
inline void seeding_restarts_the_stream(const rng_case &c) {
  auto g = make(c);
  BOOST_TEST(g->offset() == 0u);
  BOOST_TEST(g->seekable() == c.seekable);
  const std::size_t n = valid_count(c, 1000);
  const auto first = draw(c, *g, rng_distribution::uniform, rng_dtype::float32, n);
  BOOST_TEST(g->offset() == n / c.dimensions);
  g->seed(0);
  BOOST_TEST(g->offset() == 0u);
  BOOST_TEST(draw(c, *g, rng_distribution::uniform, rng_dtype::float32, n) == first,
             "seed(0) did not replay a new generator's stream");
  g->seed(12345);
  BOOST_TEST(g->offset() == 0u);
  const auto other = draw(c, *g, rng_distribution::uniform, rng_dtype::float32, n);
  if (c.seekable) { // (seeding a Mersenne twister costs cuRAND seconds: once is enough)
    g->seed(12345);
    BOOST_TEST(draw(c, *g, rng_distribution::uniform, rng_dtype::float32, n) == other);
  }
  // Quasi-random generators have no seed: every seed gives the same sequence.
  if (!c.quasi)
    BOOST_TEST(other != first, "seeds 0 and 12345 gave the same values");
  g->seed(std::numeric_limits<std::uint64_t>::max());
  BOOST_TEST(g->offset() == 0u);
}

// Where one call ends the next begins, for every distribution the backend supports: a second
// generator moved to the first one's offset continues with the same values, and the offset
// after a call of n values is one position per value (a pair for cuRAND's XORWOW / MRG32k3a
// normals, which the backend reports itself).
inline void split_calls_continue(const rng_case &c) {
  for (rng_distribution d : all_distributions) {
    for (rng_dtype t : all_dtypes) {
      auto a = make(c);
      if (!a->supports(d, t))
        continue;
      // A generator that cannot skip only counts; one kind shows that (each costs a seeding).
      if (!c.seekable && (d != rng_distribution::uniform || t != rng_dtype::float32))
        continue;
      BOOST_TEST_CONTEXT(what(d, t)) {
        const rng_params p = params_for(d);
        a->seed(99);
        const std::size_t n1 = valid_count(c, 6), n2 = valid_count(c, 10);
        (void)draw(c, *a, d, t, n1, p);
        const std::uint64_t after_first = a->offset();
        BOOST_TEST(after_first > 0u);
        BOOST_TEST(after_first <= n1);
        const auto second = draw(c, *a, d, t, n2, p);
        if (!c.seekable) {
          BOOST_TEST(a->offset() == n1 + n2);
          continue;
        }
        auto b = make(c);
        b->seed(99);
        b->set_offset(after_first);
        BOOST_TEST(b->offset() == after_first);
        BOOST_TEST(draw(c, *b, d, t, n2, p) == second,
                   "a generator moved to offset " << after_first << " did not continue");
      }
    }
  }
}

// 32-bit and integer streams do not depend on how they are split into calls (of one-dimensional
// generators).
inline void raw_and_uniform_do_not_depend_on_the_split(const rng_case &c) {
  if (c.dimensions != 1) {
    BOOST_TEST_MESSAGE("a call stores its points dimension by dimension: splits differ");
    return;
  }
  for (rng_dtype t : {rng_dtype::uint32, rng_dtype::uint64, rng_dtype::float32}) {
    const rng_distribution d =
        t == rng_dtype::float32 ? rng_distribution::uniform : rng_distribution::raw_bits;
    auto whole = make(c);
    if (!whole->supports(d, t))
      continue;
    BOOST_TEST_CONTEXT(what(d, t)) {
      if (!c.seekable && t != rng_dtype::uint32)
        continue; // one kind is enough where each new generator costs a seeding
      const std::size_t n1 = 7, n2 = 1001;
      const auto all = draw(c, *whole, d, t, n1 + n2);
      auto split = make(c);
      auto part = draw(c, *split, d, t, n1);
      const auto rest = draw(c, *split, d, t, n2);
      part.insert(part.end(), rest.begin(), rest.end());
      BOOST_TEST(part == all);
    }
  }
}

// supports() tells the truth: what it claims works, what it denies throws not_supported and
// leaves the position alone.
inline void supports_is_truthful(const rng_case &c) {
  auto g = make(c);
  int supported = 0;
  for (rng_distribution d : all_distributions) {
    for (rng_dtype t : all_dtypes) {
      BOOST_TEST_CONTEXT(what(d, t)) {
        const std::size_t n = valid_count(c, 4);
        const std::uint64_t before = g->offset();
        if (g->supports(d, t)) {
          ++supported;
          BOOST_CHECK_NO_THROW((void)draw(c, *g, d, t, n, params_for(d)));
          BOOST_TEST(g->offset() > before);
        } else {
          BOOST_CHECK_THROW((void)draw(c, *g, d, t, n, params_for(d)), not_supported);
          BOOST_TEST(g->offset() == before);
        }
      }
    }
  }
  // Every backend gives uniform floats of both precisions.
  BOOST_TEST(g->supports(rng_distribution::uniform, rng_dtype::float32));
  BOOST_TEST(g->supports(rng_distribution::uniform, rng_dtype::float64));
  BOOST_TEST(supported >= 7);
}

inline std::string invalid_argument_message(const std::function<void()> &call) {
  try {
    call();
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  return "(no std::invalid_argument)";
}

// Bad arguments stop at the core's door with a message naming the problem; the generator does
// not move.
inline void bad_arguments_are_refused_at_the_door(const rng_case &c) {
  auto g = make(c);
  rng_buffer b(c, 64 * 8);
  const std::uint64_t start = g->offset();
  g->generate(rng_distribution::uniform, rng_dtype::float32, b.ptr(), 0); // nothing to do
  BOOST_TEST(g->offset() == start);
  BOOST_TEST(invalid_argument_message([&] {
               g->generate(rng_distribution::uniform, rng_dtype::float32, 0, 4);
             }) == "rng::generate: output pointer is null");
  const std::string odd = invalid_argument_message(
      [&] { g->generate(rng_distribution::normal, rng_dtype::float32, b.ptr(), 7); });
  BOOST_TEST(odd.find("the count must be even; got 7: generate 8 and drop the last") !=
                 std::string::npos,
             odd);
  rng_params flat;
  flat.stddev = 0;
  BOOST_TEST(invalid_argument_message([&] {
               g->generate(rng_distribution::lognormal, rng_dtype::float64, b.ptr(), 2, flat);
             }) == "rng::generate: stddev must be positive");
  rng_params nothing;
  nothing.lambda = -1;
  BOOST_TEST(invalid_argument_message([&] {
               g->generate(rng_distribution::poisson, rng_dtype::uint32, b.ptr(), 2, nothing);
             }) == "rng::generate: poisson lambda must be positive");
  BOOST_TEST(g->offset() == start);
  if (!c.seekable) {
    BOOST_CHECK_THROW(g->set_offset(10), not_supported);
    return;
  }
  // A call may not run past position 2^64 - 1 (and may end exactly there).
  const std::uint64_t last = std::numeric_limits<std::uint64_t>::max();
  g->set_offset(last - 3);
  const std::string past = invalid_argument_message([&] {
    g->generate(rng_distribution::uniform, rng_dtype::float32, b.ptr(), 4 * c.dimensions);
  });
  BOOST_TEST(past.find("pass the end of the stream (2^64 positions)") != std::string::npos, past);
  BOOST_TEST(g->offset() == last - 3);
  if (!c.quasi) { // Sobol sequences end at 2^32 (2^64 for Sobol64) points: cuRAND refuses
    g->generate(rng_distribution::uniform, rng_dtype::float32, b.ptr(), 3);
    BOOST_TEST(g->offset() == last);
  }
}

// Values lie where their distribution puts them, and look like it (a loose check; the GPU
// tests do the real statistics).
inline void values_have_their_distribution(const rng_case &c) {
  auto g = make(c);
  g->seed(7);
  const std::size_t n = valid_count(c, 20000);
  {
    const auto bytes = draw(c, *g, rng_distribution::uniform, rng_dtype::float32, n);
    std::vector<float> v(n);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    double sum = 0;
    for (float x : v) {
      BOOST_TEST_REQUIRE((x > 0.0f && x <= 1.0f), "uniform float32 " << x << " outside (0, 1]");
      sum += x;
    }
    BOOST_TEST(std::abs(sum / n - 0.5) < 0.02);
  }
  {
    const auto bytes = draw(c, *g, rng_distribution::uniform, rng_dtype::float64, n);
    std::vector<double> v(n);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    for (double x : v)
      BOOST_TEST_REQUIRE((x > 0.0 && x <= 1.0), "uniform float64 " << x << " outside (0, 1]");
  }
  {
    rng_params p;
    p.mean = 3;
    p.stddev = 2;
    const auto bytes = draw(c, *g, rng_distribution::normal, rng_dtype::float64, n, p);
    std::vector<double> v(n);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    double sum = 0, squares = 0;
    for (double x : v) {
      sum += x;
      squares += x * x;
    }
    const double mean = sum / n, sd = std::sqrt(squares / n - mean * mean);
    BOOST_TEST(std::abs(mean - 3) < 0.1);
    BOOST_TEST(std::abs(sd - 2) < 0.1);
  }
  if (g->supports(rng_distribution::poisson, rng_dtype::uint32)) {
    rng_params p;
    p.lambda = 6.5;
    const auto bytes = draw(c, *g, rng_distribution::poisson, rng_dtype::uint32, n, p);
    std::vector<std::uint32_t> v(n);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    double sum = 0;
    for (std::uint32_t x : v)
      sum += x;
    BOOST_TEST(std::abs(sum / n - 6.5) < 0.15);
  }
}

// Published tables are copied in part and in whole; a backend without them says not_supported.
inline void tables_are_published_or_refused(const rng_case &c) {
  auto g = make(c);
  const rng_table tables[] = {
      rng_table::sobol32_directions,           rng_table::sobol64_directions,
      rng_table::scrambled_sobol32_directions, rng_table::scrambled_sobol64_directions,
      rng_table::scramble32_constants,         rng_table::scramble64_constants};
  for (rng_table t : tables) {
    BOOST_TEST_CONTEXT(to_string(t)) {
      std::vector<std::uint64_t> out(64);
      if (!c.tables) {
        BOOST_TEST(g->table_size(t) == 0u);
        BOOST_CHECK_THROW(g->copy_table(t, 0, 4, out.data()), not_supported);
        continue;
      }
      const std::size_t size = g->table_size(t);
      BOOST_TEST(size >= 20000u);
      g->copy_table(t, size - 2, 2, out.data());
      BOOST_CHECK_THROW(g->copy_table(t, size - 1, 2, out.data()), std::invalid_argument);
    }
  }
  if (c.tables) {
    // Sobol's first direction vector is 2^31, 2^30, ... (every dimension's first number is 1/2).
    std::vector<std::uint32_t> v(32);
    g->copy_table(rng_table::sobol32_directions, 0, 32, v.data());
    BOOST_TEST(v[0] == 1u << 31);
    BOOST_TEST(v[31] == 1u);
    BOOST_TEST(g->library_version() >= 10000u);
  } else {
    BOOST_TEST(g->library_version() == 0u);
  }
}

} // namespace rng_contract
} // namespace cuplug::test

// One suite of the contract for one backend. `case_fn` returns an rng_case; the decorators (a
// label, a precondition) apply to every test in the suite.
#define CUPLUG_RNG_CONTRACT(suite, case_fn, decorators)                                            \
  BOOST_AUTO_TEST_SUITE(suite, decorators)                                                         \
  BOOST_AUTO_TEST_CASE(seeding_restarts_the_stream) {                                              \
    cuplug::test::rng_contract::seeding_restarts_the_stream(case_fn());                            \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(split_calls_continue) {                                                     \
    cuplug::test::rng_contract::split_calls_continue(case_fn());                                   \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(raw_and_uniform_do_not_depend_on_the_split) {                               \
    cuplug::test::rng_contract::raw_and_uniform_do_not_depend_on_the_split(case_fn());             \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(supports_is_truthful) {                                                     \
    cuplug::test::rng_contract::supports_is_truthful(case_fn());                                   \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(bad_arguments_are_refused_at_the_door) {                                    \
    cuplug::test::rng_contract::bad_arguments_are_refused_at_the_door(case_fn());                  \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(values_have_their_distribution) {                                           \
    cuplug::test::rng_contract::values_have_their_distribution(case_fn());                         \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(tables_are_published_or_refused) {                                          \
    cuplug::test::rng_contract::tables_are_published_or_refused(case_fn());                        \
  }                                                                                                \
  BOOST_AUTO_TEST_SUITE_END()
