// The "curand" rng plugin: generator lifetime (per context), seed and offset bookkeeping, and the
// curandGenerate* call for each distribution.
#include "curand_rng.hpp"

#include <cuplug/context_events.hpp>
#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace cuplug::plugins {
namespace {

// The driver's unique id of a context (cuCtxGetId, CUDA 12), so a new context that got a
// destroyed one's handle is told apart; the handle when the driver lacks it.
unsigned long long context_key(CUcontext ctx) {
  using get_id_fn = CUresult (*)(CUcontext, unsigned long long *);
  static const auto get_id = reinterpret_cast<get_id_fn>(driver_symbol("cuCtxGetId", 12000));
  unsigned long long id = 0;
  if (get_id != nullptr && get_id(ctx, &id) == CUDA_SUCCESS)
    return id;
  return reinterpret_cast<unsigned long long>(ctx);
}

constexpr std::size_t sobol_dimensions = 20000; // of every direction-vector table

// Set by an atexit handler registered right after the first device generator is made, so it
// runs before the CUDA runtime inside libcurand tears itself down (atexit order is reverse
// registration). A generator still alive after that (the core's cache of shared backends is a
// static, destroyed last) is left to the process's end: curandDestroyGenerator then blocks
// forever in the runtime's locks (every pytest worker on the GPU machine hung at exit so).
std::atomic<bool> exiting{false};

void watch_exit() {
  static const bool registered = std::atexit([] { exiting.store(true); }) == 0;
  (void)registered;
}

// Every live device generator, so that the one of a context the host is destroying is released
// while that context lives: cuRAND destroying a generator after its context failed every later
// cuRAND call of the process (CURAND_STATUS_PREEXISTING_FAILURE, issue 24).
struct live_generators {
  std::mutex mutex;
  std::unordered_set<curand_rng *> all;
};
live_generators &live() {
  static auto *l = new live_generators(); // leaked: contexts may be destroyed during exit
  return *l;
}

// curandGetVersion of the cuRAND this process loaded.
int library_version() {
  static const int version = [] {
    int v = 0;
    curand::check(curandGetVersion(&v), "curandGetVersion");
    return v;
  }();
  return version;
}

} // namespace

void curand_rng::drop_context(CUcontext ctx) noexcept {
  const unsigned long long key = context_key(ctx);
  auto &l = live();
  std::lock_guard<std::mutex> lock(l.mutex);
  for (curand_rng *g : l.all)
    if (!g->host_ && g->gen_ != nullptr && g->context_ == key) {
      g->release();
      g->context_ = 0;
    }
}

curand_rng::curand_rng(const options &opts)
    : type_(curand::generator_named(opts.get_string("generator", "philox"))),
      ordering_(curand::ordering_named(opts.get_string("ordering", "default"), type_)),
      split_tails_(curand::tail_split_named(opts.get_string("split_tails", "auto"))) {
  seed_ = static_cast<std::uint64_t>(opts.get_int("seed", 0));
  const long long dims = opts.get_int("dimensions", 1);
  if (dims < 1 || dims > static_cast<long long>(sobol_dimensions) || (dims != 1 && !type_.quasi))
    throw config_error("rng 'curand': option dimensions must be 1" +
                       std::string(type_.quasi ? " to 20000" : " for generator ") +
                       (type_.quasi ? "" : type_.name) + ", got " + std::to_string(dims));
  dimensions_ = static_cast<unsigned>(dims);
  const std::string memory = opts.get_string("memory", "device");
  if (memory != "device" && memory != "host")
    throw config_error("rng 'curand': option memory must be \"device\" or \"host\", got \"" +
                       memory + "\"");
  host_ = memory == "host";
  if (host_) {
    make(0); // the host generator needs no GPU: make it now, so bad settings show at once
    return;
  }
  static const bool watching = (on_context_destroy(&curand_rng::drop_context), true);
  (void)watching;
  auto &l = live();
  std::lock_guard<std::mutex> lock(l.mutex);
  l.all.insert(this);
}

curand_rng::~curand_rng() {
  if (!host_) {
    auto &l = live();
    std::lock_guard<std::mutex> lock(l.mutex);
    l.all.erase(this);
  }
  release();
}

void curand_rng::release() noexcept {
  if (gen_ != nullptr && !exiting.load())
    (void)curandDestroyGenerator(gen_); // its context may be gone: nothing to do about it
  gen_ = nullptr;
}

void curand_rng::make(unsigned long long context) {
  release();
  curandGenerator_t g = nullptr;
  if (host_)
    curand::check(curandCreateGeneratorHost(&g, type_.type), "curandCreateGeneratorHost");
  else
    curand::check(curandCreateGenerator(&g, type_.type), "curandCreateGenerator");
  if (!host_)
    watch_exit(); // after the runtime's own atexit registration (curandCreateGenerator made it)
  try {
    curand::check(curandSetGeneratorOrdering(g, ordering_), "curandSetGeneratorOrdering");
    if (type_.quasi)
      curand::check(curandSetQuasiRandomGeneratorDimensions(g, dimensions_),
                    "curandSetQuasiRandomGeneratorDimensions");
    else
      curand::check(curandSetPseudoRandomGeneratorSeed(g, seed_),
                    "curandSetPseudoRandomGeneratorSeed");
    if (type_.seekable)
      curand::check(curandSetGeneratorOffset(g, offset_), "curandSetGeneratorOffset");
  } catch (...) {
    (void)curandDestroyGenerator(g);
    throw;
  }
  gen_ = g;
  context_ = context;
}

curandGenerator_t curand_rng::generator() {
  if (host_)
    return gen_;
  CUcontext ctx = nullptr;
  CUPLUG_CALL(cuCtxGetCurrent, &ctx);
  if (ctx == nullptr)
    throw cuda_error("cuCtxGetCurrent", CUDA_ERROR_INVALID_CONTEXT,
                     "rng 'curand' needs a current CUDA context to generate into device memory");
  const unsigned long long key = context_key(ctx);
  if (gen_ != nullptr && key == context_)
    return gen_;
  if (!type_.seekable && offset_ != 0)
    throw not_supported(std::string("rng 'curand': generator ") + type_.name +
                        " cannot carry its position into another CUDA context; seed it again");
  make(key);
  return gen_;
}

void curand_rng::do_seed(std::uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
  if (gen_ == nullptr)
    return; // made with these settings on first use
  if (!type_.seekable) {
    // cuRAND keeps a Mersenne twister's position across a new seed: make it anew (on the
    // device, in the context that next generates).
    release();
    if (host_)
      make(0);
    return;
  }
  if (!type_.quasi)
    curand::check(curandSetPseudoRandomGeneratorSeed(gen_, seed_),
                  "curandSetPseudoRandomGeneratorSeed");
  curand::check(curandSetGeneratorOffset(gen_, 0), "curandSetGeneratorOffset");
}

void curand_rng::do_set_offset(std::uint64_t offset) {
  if (gen_ != nullptr)
    curand::check(curandSetGeneratorOffset(gen_, offset), "curandSetGeneratorOffset");
  offset_ = offset;
}

void curand_rng::do_generate(rng_distribution distribution, rng_dtype dtype, device_ptr out,
                             std::size_t count, const rng_params &params, CUstream stream) {
  if (type_.quasi && count % dimensions_ != 0)
    throw std::invalid_argument("rng 'curand': a " + std::string(type_.name) + " generator of " +
                                std::to_string(dimensions_) +
                                " dimensions makes whole points: the count must be a multiple "
                                "of " +
                                std::to_string(dimensions_) + ", got " + std::to_string(count));
  curandGenerator_t g = generator();
  if (!host_)
    curand::check(curandSetStream(g, reinterpret_cast<cudaStream_t>(stream)), "curandSetStream");
  if (!curand::works_around_tails(split_tails_, library_version(), type_)) {
    generate_into(g, distribution, dtype, out, count, params);
  } else {
    // cuRAND's own position may be off after the last call: set it (curand_generators.hpp).
    curand::check(curandSetGeneratorOffset(g, offset_), "curandSetGeneratorOffset");
    if (curand::splits_tail(split_tails_, offset_, count))
      generate_rounded(g, distribution, dtype, out, count, params, stream);
    else
      generate_into(g, distribution, dtype, out, count, params);
  }
  const bool pairs =
      distribution == rng_distribution::normal || distribution == rng_distribution::lognormal;
  // cuRAND's positions: points for a quasi generator (a point is `dimensions` values, stored
  // dimension by dimension in each call), pairs for XORWOW / MRG32k3a normals.
  if (type_.quasi)
    offset_ += count / dimensions_;
  else
    offset_ += pairs && type_.pairs_advance ? count / 2 : count;
}

void curand_rng::generate_into(curandGenerator_t g, rng_distribution distribution, rng_dtype dtype,
                               device_ptr out, std::size_t count, const rng_params &params) {
  const bool f64 = dtype == rng_dtype::float64;
  const auto mean_f = static_cast<float>(params.mean);
  const auto stddev_f = static_cast<float>(params.stddev);
  switch (distribution) {
  case rng_distribution::raw_bits:
    if (dtype == rng_dtype::uint64)
      curand::check(curandGenerateLongLong(g, reinterpret_cast<unsigned long long *>(out), count),
                    "curandGenerateLongLong");
    else
      curand::check(curandGenerate(g, reinterpret_cast<unsigned *>(out), count), "curandGenerate");
    break;
  case rng_distribution::uniform:
    if (f64)
      curand::check(curandGenerateUniformDouble(g, reinterpret_cast<double *>(out), count),
                    "curandGenerateUniformDouble");
    else
      curand::check(curandGenerateUniform(g, reinterpret_cast<float *>(out), count),
                    "curandGenerateUniform");
    break;
  case rng_distribution::normal:
    if (f64)
      curand::check(curandGenerateNormalDouble(g, reinterpret_cast<double *>(out), count,
                                               params.mean, params.stddev),
                    "curandGenerateNormalDouble");
    else
      curand::check(
          curandGenerateNormal(g, reinterpret_cast<float *>(out), count, mean_f, stddev_f),
          "curandGenerateNormal");
    break;
  case rng_distribution::lognormal:
    if (f64)
      curand::check(curandGenerateLogNormalDouble(g, reinterpret_cast<double *>(out), count,
                                                  params.mean, params.stddev),
                    "curandGenerateLogNormalDouble");
    else
      curand::check(
          curandGenerateLogNormal(g, reinterpret_cast<float *>(out), count, mean_f, stddev_f),
          "curandGenerateLogNormal");
    break;
  case rng_distribution::poisson:
    curand::check(curandGeneratePoisson(g, reinterpret_cast<unsigned *>(out), count, params.lambda),
                  "curandGeneratePoisson");
    break;
  }
}

void curand_rng::generate_rounded(curandGenerator_t g, rng_distribution distribution,
                                  rng_dtype dtype, device_ptr out, std::size_t count,
                                  const rng_params &params, CUstream stream) {
  const std::size_t rounded = count + (4 - count % 4) % 4;
  const std::size_t item = size_of(dtype);
  if (host_) {
    std::vector<unsigned char> all(rounded * item);
    generate_into(g, distribution, dtype, reinterpret_cast<std::uintptr_t>(all.data()), rounded,
                  params);
    std::memcpy(reinterpret_cast<unsigned char *>(out), all.data(), count * item);
    return;
  }
  CUdeviceptr all = 0;
  CUPLUG_CALL(cuMemAllocAsync, &all, rounded * item, stream);
  try {
    generate_into(g, distribution, dtype, static_cast<device_ptr>(all), rounded, params);
    CUPLUG_CALL(cuMemcpyDtoDAsync, static_cast<CUdeviceptr>(out), all, count * item, stream);
  } catch (...) {
    (void)driver().cuMemFreeAsync(all, stream);
    throw;
  }
  CUPLUG_CALL(cuMemFreeAsync, all, stream);
}

std::size_t curand_rng::do_table_size(rng_table table) const {
  switch (table) {
  case rng_table::sobol32_directions:
  case rng_table::scrambled_sobol32_directions:
    return sobol_dimensions * 32;
  case rng_table::sobol64_directions:
  case rng_table::scrambled_sobol64_directions:
    return sobol_dimensions * 64;
  case rng_table::scramble32_constants:
  case rng_table::scramble64_constants:
    return sobol_dimensions;
  }
  return 0;
}

void curand_rng::do_copy_table(rng_table table, std::size_t first, std::size_t count,
                               void *out) const {
  const void *source = nullptr;
  switch (table) {
  case rng_table::sobol32_directions:
  case rng_table::scrambled_sobol32_directions: {
    curandDirectionVectors32_t *v = nullptr;
    curand::check(
        curandGetDirectionVectors32(&v, table == rng_table::sobol32_directions
                                            ? CURAND_DIRECTION_VECTORS_32_JOEKUO6
                                            : CURAND_SCRAMBLED_DIRECTION_VECTORS_32_JOEKUO6),
        "curandGetDirectionVectors32");
    source = v;
    break;
  }
  case rng_table::sobol64_directions:
  case rng_table::scrambled_sobol64_directions: {
    curandDirectionVectors64_t *v = nullptr;
    curand::check(
        curandGetDirectionVectors64(&v, table == rng_table::sobol64_directions
                                            ? CURAND_DIRECTION_VECTORS_64_JOEKUO6
                                            : CURAND_SCRAMBLED_DIRECTION_VECTORS_64_JOEKUO6),
        "curandGetDirectionVectors64");
    source = v;
    break;
  }
  case rng_table::scramble32_constants: {
    unsigned *c = nullptr;
    curand::check(curandGetScrambleConstants32(&c), "curandGetScrambleConstants32");
    source = c;
    break;
  }
  case rng_table::scramble64_constants: {
    unsigned long long *c = nullptr;
    curand::check(curandGetScrambleConstants64(&c), "curandGetScrambleConstants64");
    source = c;
    break;
  }
  }
  const std::size_t entry = entry_size(table);
  std::memcpy(out, static_cast<const char *>(source) + first * entry, count * entry);
}

std::uint32_t curand_rng::do_library_version() const {
  int version = 0;
  curand::check(curandGetVersion(&version), "curandGetVersion");
  return static_cast<std::uint32_t>(version);
}

} // namespace cuplug::plugins

CUPLUG_PLUGIN(rng, cuplug::plugins::curand_rng, "curand",
              "cuRAND's generators (Philox by default; XORWOW, MRG32k3a, MTGP32, MT19937, Sobol)",
              CUPLUG_PLUGIN_VERSION)
