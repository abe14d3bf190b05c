// The philox plugin against cuRAND's PHILOX4_32_10 generator: its host path against cuRAND's host
// generator (no GPU needed) for 2^24 words, split calls, offsets and extreme seeds; on a GPU its
// kernels against cuRAND's device generator and against its own host path.
#include "rng_contract.hpp"

#include <curand.h>

#include <cstring>
#include <limits>
#include <sstream>

namespace {

using cuplug::rng;
using cuplug::rng_distribution;
using cuplug::rng_dtype;
using cuplug::rng_params;
using cuplug::test::rng_backend;

constexpr std::uint64_t max_u64 = std::numeric_limits<std::uint64_t>::max();

void check(curandStatus_t s, const char *what) {
  if (s != CURAND_STATUS_SUCCESS)
    BOOST_FAIL(what << " failed with cuRAND status " << static_cast<int>(s));
}

// cuRAND's own host generator, driven as the rng interface would drive it.
class curand_host {
public:
  explicit curand_host(std::uint64_t seed) {
    check(curandCreateGeneratorHost(&g_, CURAND_RNG_PSEUDO_PHILOX4_32_10), "create");
    check(curandSetPseudoRandomGeneratorSeed(g_, seed), "seed");
  }
  ~curand_host() { curandDestroyGenerator(g_); }
  curand_host(const curand_host &) = delete;
  curand_host &operator=(const curand_host &) = delete;
  void set_offset(std::uint64_t o) { check(curandSetGeneratorOffset(g_, o), "offset"); }
  // `count` values as bytes.
  std::vector<std::uint8_t> draw(rng_distribution d, rng_dtype t, std::size_t count,
                                 const rng_params &p) {
    std::vector<std::uint8_t> out(count * cuplug::size_of(t));
    void *o = out.data();
    const bool f64 = t == rng_dtype::float64;
    const auto mf = static_cast<float>(p.mean), sf = static_cast<float>(p.stddev);
    switch (d) {
    case rng_distribution::raw_bits:
      check(curandGenerate(g_, static_cast<unsigned *>(o), count), "generate");
      break;
    case rng_distribution::uniform:
      check(f64 ? curandGenerateUniformDouble(g_, static_cast<double *>(o), count)
                : curandGenerateUniform(g_, static_cast<float *>(o), count),
            "uniform");
      break;
    case rng_distribution::normal:
      check(f64 ? curandGenerateNormalDouble(g_, static_cast<double *>(o), count, p.mean, p.stddev)
                : curandGenerateNormal(g_, static_cast<float *>(o), count, mf, sf),
            "normal");
      break;
    case rng_distribution::lognormal:
      check(
          f64 ? curandGenerateLogNormalDouble(g_, static_cast<double *>(o), count, p.mean, p.stddev)
              : curandGenerateLogNormal(g_, static_cast<float *>(o), count, mf, sf),
          "lognormal");
      break;
    case rng_distribution::poisson:
      check(curandGeneratePoisson(g_, static_cast<unsigned *>(o), count, p.lambda), "poisson");
      break;
    }
    return out;
  }

private:
  curandGenerator_t g_ = nullptr;
};

cuplug::test::rng_case host_case() { return {rng_backend("philox", {{"memory", "host"}})}; }

std::vector<std::uint8_t> draw(rng &g, rng_distribution d, rng_dtype t, std::size_t count,
                               const rng_params &p) {
  return cuplug::test::rng_contract::draw(host_case(), g, d, t, count, p);
}

// Index and values of the first difference, for messages.
std::string first_difference(const std::vector<std::uint8_t> &a, const std::vector<std::uint8_t> &b,
                             std::size_t element) {
  for (std::size_t i = 0; i + element <= a.size() && i + element <= b.size(); i += element) {
    if (std::memcmp(&a[i], &b[i], element) != 0) {
      std::uint64_t x = 0, y = 0;
      std::memcpy(&x, &a[i], element);
      std::memcpy(&y, &b[i], element);
      std::ostringstream s;
      s << "element " << i / element << ": 0x" << std::hex << x << " vs 0x" << y;
      return s.str();
    }
  }
  return a.size() == b.size() ? "none" : "the sizes differ";
}

struct kind {
  rng_distribution distribution;
  rng_dtype dtype;
  rng_params params;
};

const kind kinds[] = {
    {rng_distribution::raw_bits, rng_dtype::uint32, {}},
    {rng_distribution::uniform, rng_dtype::float32, {}},
    {rng_distribution::uniform, rng_dtype::float64, {}},
    {rng_distribution::normal, rng_dtype::float32, {}},
    {rng_distribution::normal, rng_dtype::float32, {0.5, 2.5, 1}},
    {rng_distribution::normal, rng_dtype::float64, {-1.25, 0.75, 1}},
    {rng_distribution::lognormal, rng_dtype::float32, {0.5, 0.75, 1}},
    {rng_distribution::lognormal, rng_dtype::float64, {0.25, 0.5, 1}},
};

std::string name(const kind &k) {
  std::ostringstream s;
  s << to_string(k.distribution) << " " << to_string(k.dtype) << " (mean " << k.params.mean
    << ", stddev " << k.params.stddev << ")";
  return s.str();
}

void expect_same(const std::vector<std::uint8_t> &mine, const std::vector<std::uint8_t> &theirs,
                 const kind &k, const std::string &where) {
  BOOST_TEST(mine == theirs, name(k) << " " << where << ": first difference at "
                                     << first_difference(mine, theirs, size_of(k.dtype)));
}

} // namespace

BOOST_AUTO_TEST_SUITE(philox_versus_curand_host, *boost::unit_test::label("cpu"))

BOOST_AUTO_TEST_CASE(two_to_the_24_words_match_for_seeds_0_max_and_another) {
  for (std::uint64_t seed : {std::uint64_t{0}, max_u64, std::uint64_t{0x0123456789abcdefull}}) {
    auto mine = host_case().make();
    mine->seed(seed);
    curand_host theirs(seed);
    const kind raw = kinds[0];
    const std::size_t n = std::size_t{1} << 24;
    expect_same(draw(*mine, raw.distribution, raw.dtype, n, {}),
                theirs.draw(raw.distribution, raw.dtype, n, {}), raw,
                "seed " + std::to_string(seed));
    BOOST_TEST(mine->offset() == n);
  }
}

BOOST_AUTO_TEST_CASE(every_distribution_matches_from_chosen_offsets) {
  const std::uint64_t offsets[] = {0,
                                   3,
                                   4 * 65536 + 1,
                                   (std::uint64_t{1} << 34) + 7,
                                   (std::uint64_t{1} << 48) + 5,
                                   (std::uint64_t{1} << 62) + 2,
                                   max_u64 - (std::uint64_t{1} << 20)};
  for (std::uint64_t seed : {std::uint64_t{0}, max_u64}) {
    for (const kind &k : kinds) {
      for (std::uint64_t offset : offsets) {
        auto mine = host_case().make();
        mine->seed(seed);
        mine->set_offset(offset);
        curand_host theirs(seed);
        theirs.set_offset(offset);
        // Crosses a pass of cuRAND's 65536 streams, where float64 values change blocks.
        const std::size_t n = 4 * 65536 + 6;
        expect_same(draw(*mine, k.distribution, k.dtype, n, k.params),
                    theirs.draw(k.distribution, k.dtype, n, k.params), k,
                    "seed " + std::to_string(seed) + " offset " + std::to_string(offset));
        BOOST_TEST(mine->offset() == offset + n);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(split_calls_of_mixed_distributions_match) {
  // One stream, many calls: odd sizes, sizes across pass boundaries, distributions mixed.
  const std::size_t sizes[] = {1, 3, 4, 5, 2, 1000, 65537, 6, 262144, 10, 7, 262150, 2};
  for (std::uint64_t seed : {std::uint64_t{0}, max_u64}) {
    auto mine = host_case().make();
    mine->seed(seed);
    curand_host theirs(seed);
    std::size_t call = 0;
    for (std::size_t size : sizes) {
      for (const kind &k : kinds) {
        const bool pairs = k.distribution == rng_distribution::normal ||
                           k.distribution == rng_distribution::lognormal;
        const std::size_t n = pairs ? (size + 1) / 2 * 2 : size;
        expect_same(draw(*mine, k.distribution, k.dtype, n, k.params),
                    theirs.draw(k.distribution, k.dtype, n, k.params), k,
                    "call " + std::to_string(call++) + " of " + std::to_string(n));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_curand_plugin_with_philox_gives_the_same_values) {
  // What cuplug.use(rng="philox") versus "curand" means: both plugins, same calls, same values
  // (Poisson excepted: the philox plugin has its own).
  auto mine = host_case().make();
  auto other = rng_backend("curand", {{"memory", "host"}, {"generator", "philox"}})();
  mine->seed(2024);
  other->seed(2024);
  for (std::size_t size : {5, 8, 100001}) {
    for (const kind &k : kinds) {
      const std::size_t n = size % 2 == 0 || k.distribution == rng_distribution::raw_bits ||
                                    k.distribution == rng_distribution::uniform
                                ? size
                                : size + 1;
      expect_same(draw(*mine, k.distribution, k.dtype, n, k.params),
                  draw(*other, k.distribution, k.dtype, n, k.params), k,
                  "calls of " + std::to_string(n));
      BOOST_TEST(mine->offset() == other->offset());
    }
  }
}

BOOST_AUTO_TEST_CASE(poisson_values_follow_the_distribution_and_the_raw_stream) {
  // The philox plugin's Poisson value at position p comes from word p alone, so a Poisson call
  // moves the stream exactly as a raw one does, and values are reproducible from any offset.
  auto g = host_case().make();
  for (double lambda : {0.001, 0.5, 4.0, 37.5, 1000.0, 1e6}) {
    BOOST_TEST_CONTEXT("lambda " << lambda) {
      rng_params p;
      p.lambda = lambda;
      g->seed(5);
      const std::size_t n = 200000;
      const auto bytes = draw(*g, rng_distribution::poisson, rng_dtype::uint32, n, p);
      BOOST_TEST(g->offset() == n);
      std::vector<std::uint32_t> v(n);
      std::memcpy(v.data(), bytes.data(), bytes.size());
      double sum = 0, squares = 0;
      for (std::uint32_t x : v) {
        sum += x;
        squares += static_cast<double>(x) * x;
      }
      const double mean = sum / n, variance = squares / n - mean * mean;
      // Mean and variance (both lambda) within 5 standard errors: sqrt(lambda / n) and
      // sqrt((lambda + 2 lambda^2) / n).
      BOOST_TEST(std::abs(mean - lambda) < 5 * std::sqrt(lambda / n));
      BOOST_TEST(std::abs(variance - lambda) < 5 * std::sqrt((lambda + 2 * lambda * lambda) / n));
      g->set_offset(1234);
      const auto tail = draw(*g, rng_distribution::poisson, rng_dtype::uint32, 100, p);
      BOOST_TEST(std::memcmp(tail.data(), bytes.data() + 1234 * 4, tail.size()) == 0);
    }
  }
  rng_params huge;
  huge.lambda = 2e9;
  std::vector<std::uint32_t> out(2);
  BOOST_CHECK_THROW(g->generate(rng_distribution::poisson, rng_dtype::uint32,
                                reinterpret_cast<cuplug::device_ptr>(out.data()), 2, huge),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

// ---- on a GPU ---------------------------------------------------------------------------

namespace {

cuplug::test::rng_case device_case(const std::string &backend) {
  if (backend == "philox")
    return {rng_backend("philox"), true};
  return {rng_backend("curand", {{"generator", "philox"}}), true};
}

std::vector<std::uint8_t> draw_device(const std::string &backend, std::uint64_t seed,
                                      std::uint64_t offset, const kind &k, std::size_t n) {
  const auto c = device_case(backend);
  auto g = cuplug::test::rng_contract::make(c);
  g->seed(seed);
  g->set_offset(offset);
  return cuplug::test::rng_contract::draw(c, *g, k.distribution, k.dtype, n, k.params);
}

// Largest |a - b| / max(1, |b|) between two float arrays of the same size.
template <class F>
double max_difference(const std::vector<std::uint8_t> &a, const std::vector<std::uint8_t> &b) {
  double worst = 0;
  for (std::size_t i = 0; i + sizeof(F) <= a.size() && i + sizeof(F) <= b.size(); i += sizeof(F)) {
    F x, y;
    std::memcpy(&x, &a[i], sizeof x);
    std::memcpy(&y, &b[i], sizeof y);
    const double d = std::abs(static_cast<double>(x) - static_cast<double>(y)) /
                     std::max(1.0, std::abs(static_cast<double>(y)));
    worst = std::max(worst, std::isnan(d) ? std::numeric_limits<double>::infinity() : d);
  }
  return worst;
}

} // namespace

BOOST_AUTO_TEST_SUITE(philox_on_the_gpu,
                      *boost::unit_test::label("gpu") *
                          boost::unit_test::precondition(cuplug::test::gpu_present()))

BOOST_AUTO_TEST_CASE(kernels_match_curands_device_generator_bit_for_bit) {
  const std::uint64_t offsets[] = {0, 3, 4 * 65536 + 1, (std::uint64_t{1} << 34) + 7,
                                   max_u64 - (std::uint64_t{1} << 26)};
  for (std::uint64_t seed : {std::uint64_t{0}, max_u64, std::uint64_t{42}}) {
    for (const kind &k : kinds) {
      for (std::uint64_t offset : offsets) {
        const std::size_t n = (std::size_t{1} << 22) + 6;
        expect_same(draw_device("philox", seed, offset, k, n),
                    draw_device("curand", seed, offset, k, n), k,
                    "device, seed " + std::to_string(seed) + " offset " + std::to_string(offset));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(kernels_match_the_host_path) {
  // Raw, uniform and Poisson values bit for bit; normal and lognormal within the documented
  // ulps (the device's __sincosf and sincospi against the host's sinf/cosf and sin/cos).
  kind poisson{rng_distribution::poisson, rng_dtype::uint32, {}};
  poisson.params.lambda = 9.5;
  std::vector<kind> all(std::begin(kinds), std::end(kinds));
  all.push_back(poisson);
  for (const kind &k : all) {
    for (std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{5}, std::uint64_t{1} << 40}) {
      const std::size_t n = (std::size_t{1} << 20) + 2;
      const auto device = draw_device("philox", 77, offset, k, n);
      auto host_gen = host_case().make();
      host_gen->seed(77);
      host_gen->set_offset(offset);
      const auto host = draw(*host_gen, k.distribution, k.dtype, n, k.params);
      if (k.distribution == rng_distribution::normal ||
          k.distribution == rng_distribution::lognormal) {
        const bool f32 = k.dtype == rng_dtype::float32;
        const double worst =
            f32 ? max_difference<float>(device, host) : max_difference<double>(device, host);
        BOOST_TEST_MESSAGE(name(k) << ": device and host differ by at most " << worst
                                   << " (relative, absolute below 1)");
        // docs/rng.md: within 2^-16 for float32 (__sincosf), 2^-46 for float64.
        BOOST_TEST(worst <= (f32 ? std::ldexp(1.0, -16) : std::ldexp(1.0, -46)), name(k));
      } else {
        expect_same(device, host, k, "device vs host, offset " + std::to_string(offset));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(unaligned_outputs_and_streams_are_honoured) {
  // An output that starts off 16-byte alignment takes the scalar path; values stay the same.
  const kind k = kinds[1];
  const auto c = device_case("philox");
  auto g = cuplug::test::rng_contract::make(c);
  const std::size_t n = 100003;
  cuplug::test::rng_buffer b(c, (n + 3) * 4);
  CUstream s = nullptr;
  CUPLUG_CALL(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
  g->seed(3);
  g->set_offset(1);
  g->generate(k.distribution, k.dtype, b.ptr() + 4, n, {}, s);
  CUPLUG_CALL(cuStreamSynchronize, s);
  CUPLUG_CALL(cuStreamDestroy, s);
  auto all = b.read<std::uint8_t>((n + 1) * 4);
  std::vector<std::uint8_t> got(all.begin() + 4, all.end());
  auto host_gen = host_case().make();
  host_gen->seed(3);
  host_gen->set_offset(1);
  expect_same(got, draw(*host_gen, k.distribution, k.dtype, n, {}), k, "unaligned, own stream");
}

BOOST_AUTO_TEST_SUITE_END()
