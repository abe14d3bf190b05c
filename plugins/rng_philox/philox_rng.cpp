// The "philox" rng plugin: argument routing, the host reference path, and launches of the
// embedded kernels (philox_kernels.cu) through the core's driver table.
#include "philox_rng.hpp"

#include "philox.hpp"
#include "philox_launch.hpp"
#include "philox_module.hpp"

#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace cuplug::plugins {
namespace {

using philox::kernel_args;

enum kernel_id {
  raw_u32,
  uniform_f32,
  normal_f32,
  lognormal_f32,
  uniform_f64,
  normal_f64,
  lognormal_f64,
  poisson_u32,
  add_extra, // not a distribution: the float64 calls' e[z] update
};

kernel_id kernel_for(rng_distribution distribution, rng_dtype dtype) {
  const bool f64 = dtype == rng_dtype::float64;
  switch (distribution) {
  case rng_distribution::raw_bits:
    return raw_u32;
  case rng_distribution::uniform:
    return f64 ? uniform_f64 : uniform_f32;
  case rng_distribution::normal:
    return f64 ? normal_f64 : normal_f32;
  case rng_distribution::lognormal:
    return f64 ? lognormal_f64 : lognormal_f32;
  case rng_distribution::poisson:
    return poisson_u32;
  }
  throw std::invalid_argument("philox: unknown distribution");
}

constexpr std::size_t extra_bytes = std::size_t{philox::streams} * sizeof(std::uint64_t);

bool wide(rng_dtype dtype) { return dtype == rng_dtype::float64; }

// Writes the values of every group the call touches into out[0, count) on the host; `extra`
// is e[z], or null when all are 0.
template <class T, class Make>
void host_groups(T *out, std::uint64_t first, std::size_t count, const std::uint64_t *extra,
                 Make make) {
  const std::uint64_t q_first = first / 4, q_last = (first + count - 1) / 4;
  for (std::uint64_t q = q_first;; ++q) {
    T v[4];
    make(q, extra != nullptr ? extra[q % philox::streams] : 0, v);
    for (unsigned l = 0; l < 4; ++l) {
      const std::uint64_t p = 4 * q + l;
      if (p >= first && p - first < count)
        out[p - first] = v[l];
    }
    if (q == q_last)
      break;
  }
}

} // namespace

philox_rng::philox_rng(const options &opts) {
  seed_ = static_cast<std::uint64_t>(opts.get_int("seed", 0));
  const std::string memory = opts.get_string("memory", "device");
  if (memory != "device" && memory != "host")
    throw config_error("rng 'philox': option memory must be \"device\" or \"host\", got \"" +
                       memory + "\"");
  host_ = memory == "host";
}

philox_rng::~philox_rng() {
  if (device_extra_ != 0 && driver_available())
    (void)driver().cuMemFree(device_extra_); // its context may be gone: nothing to do then
}

void philox_rng::do_seed(std::uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
  extra_zero_ = true;
}

void philox_rng::do_set_offset(std::uint64_t offset) {
  offset_ = offset;
  extra_zero_ = true;
}

bool philox_rng::do_supports(rng_distribution distribution, rng_dtype dtype) const {
  switch (distribution) {
  case rng_distribution::raw_bits:
  case rng_distribution::poisson:
    return dtype == rng_dtype::uint32;
  case rng_distribution::uniform:
  case rng_distribution::normal:
  case rng_distribution::lognormal:
    return dtype == rng_dtype::float32 || dtype == rng_dtype::float64;
  }
  return false;
}

const philox::poisson_table &philox_rng::table_for(double lambda) {
  if (table_.lambda != lambda)
    table_ = philox::make_poisson_table(lambda);
  return table_;
}

void philox_rng::do_generate(rng_distribution distribution, rng_dtype dtype, device_ptr out,
                             std::size_t count, const rng_params &params, CUstream stream) {
  if (host_)
    generate_host(distribution, dtype, reinterpret_cast<void *>(out), count, params);
  else
    generate_device(distribution, dtype, out, count, params, stream);
  offset_ += count;
}

void philox_rng::generate_host(rng_distribution distribution, rng_dtype dtype, void *out,
                               std::size_t count, const rng_params &params) {
  using namespace philox;
  const std::uint64_t seed = seed_, first = offset_, q0 = offset_ / 4;
  const float mean_f = static_cast<float>(params.mean);
  const float stddev_f = static_cast<float>(params.stddev);
  const double mean = params.mean, stddev = params.stddev;
  const std::uint64_t *extra = extra_zero_ ? nullptr : host_extra_.data();
  switch (kernel_for(distribution, dtype)) {
  case raw_u32:
    host_groups(
        static_cast<std::uint32_t *>(out), first, count, extra,
        [&](std::uint64_t q, std::uint64_t e, std::uint32_t *v) { group_raw(seed, q, e, v); });
    break;
  case uniform_f32:
    host_groups(static_cast<float *>(out), first, count, extra,
                [&](std::uint64_t q, std::uint64_t e, float *v) { group_uniform(seed, q, e, v); });
    break;
  case normal_f32:
    host_groups(static_cast<float *>(out), first, count, extra,
                [&](std::uint64_t q, std::uint64_t e, float *v) {
                  group_normal(seed, q, e, mean_f, stddev_f, v);
                });
    break;
  case lognormal_f32:
    host_groups(static_cast<float *>(out), first, count, extra,
                [&](std::uint64_t q, std::uint64_t e, float *v) {
                  group_lognormal(seed, q, e, mean_f, stddev_f, v);
                });
    break;
  case uniform_f64:
    host_groups(
        static_cast<double *>(out), first, count, extra,
        [&](std::uint64_t q, std::uint64_t e, double *v) { group_uniform(seed, q, q0, e, v); });
    break;
  case normal_f64:
    host_groups(static_cast<double *>(out), first, count, extra,
                [&](std::uint64_t q, std::uint64_t e, double *v) {
                  group_normal(seed, q, q0, e, mean, stddev, v);
                });
    break;
  case lognormal_f64:
    host_groups(static_cast<double *>(out), first, count, extra,
                [&](std::uint64_t q, std::uint64_t e, double *v) {
                  group_lognormal(seed, q, q0, e, mean, stddev, v);
                });
    break;
  case poisson_u32: {
    const poisson_table &t = table_for(params.lambda);
    const std::uint32_t *thresholds = t.thresholds.data();
    const auto n = static_cast<std::uint32_t>(t.thresholds.size());
    host_groups(static_cast<std::uint32_t *>(out), first, count, extra,
                [&](std::uint64_t q, std::uint64_t e, std::uint32_t *v) {
                  group_poisson(seed, q, e, thresholds, n, t.base, v);
                });
    break;
  }
  }
  if (wide(dtype)) {
    if (extra_zero_)
      host_extra_.assign(streams, 0);
    extra_zero_ = false;
    for (std::uint32_t z = 0; z < streams; ++z)
      host_extra_[z] += extra_added(z, first, count);
  }
}

device_ptr philox_rng::device_extra(unsigned long long context) {
  if (device_extra_ != 0 && device_extra_context_ == context)
    return device_extra_;
  // First use, or this generator moved to another context: carry e[z] over through the host.
  std::vector<std::uint64_t> carried;
  if (device_extra_ != 0 && !extra_zero_) {
    carried.resize(philox::streams);
    CUPLUG_CALL(cuCtxSynchronize, nullptr);
    const CUresult copied = driver().cuMemcpyDtoH(carried.data(), device_extra_, extra_bytes);
    if (copied != CUDA_SUCCESS)
      throw cuda_error("cuMemcpyDtoH", copied,
                       "rng 'philox' kept the state of its float64 stream in a CUDA context it "
                       "cannot read now (destroyed?): seed() or set_offset() to go on");
  }
  if (device_extra_ != 0)
    (void)driver().cuMemFree(device_extra_);
  device_extra_ = 0;
  CUPLUG_CALL(cuMemAlloc, &device_extra_, extra_bytes);
  device_extra_context_ = context;
  if (!carried.empty())
    CUPLUG_CALL(cuMemcpyHtoD, device_extra_, carried.data(), extra_bytes);
  return device_extra_;
}

void philox_rng::generate_device(rng_distribution distribution, rng_dtype dtype, device_ptr out,
                                 std::size_t count, const rng_params &params, CUstream stream) {
  const philox::loaded_module &m = philox::module_for_current_context();
  const kernel_id id = kernel_for(distribution, dtype);
  kernel_args a{};
  a.seed = seed_;
  a.first = offset_;
  a.count = count;
  a.out = reinterpret_cast<void *>(out);
  a.mean = params.mean;
  a.stddev = params.stddev;
  a.extra = extra_zero_ ? nullptr : reinterpret_cast<std::uint64_t *>(device_extra(m.context));
  const std::size_t element = size_of(dtype);
  const std::size_t head = (4 - offset_ % 4) % 4; // outputs before the first whole group
  // Whole groups are stored 16 bytes at a time (one store of four words, two of two doubles).
  a.vector = (out + head * element) % 16 == 0 ? 1u : 0u;

  device_ptr table = 0;
  if (id == poisson_u32) {
    const philox::poisson_table &t = table_for(params.lambda);
    const std::size_t bytes = std::max<std::size_t>(t.thresholds.size(), 1) * 4;
    CUPLUG_CALL(cuMemAllocAsync, &table, bytes, stream);
    // From pageable memory: the call returns once the bytes are staged, so the vector may change.
    if (!t.thresholds.empty())
      CUPLUG_CALL(cuMemcpyHtoDAsync, table, t.thresholds.data(), bytes, stream);
    a.thresholds = reinterpret_cast<const std::uint32_t *>(table);
    a.threshold_count = static_cast<std::uint32_t>(t.thresholds.size());
    a.base = t.base;
  }
  const std::uint64_t groups = (offset_ + count - 1) / 4 - offset_ / 4 + 1;
  const std::uint64_t wanted = (groups + philox::threads_per_block - 1) / philox::threads_per_block;
  const unsigned blocks = static_cast<unsigned>(std::min<std::uint64_t>(wanted, m.max_blocks));
  void *args[] = {&a};
  const CUresult launched = detail::entry(driver().cuLaunchKernel, "cuLaunchKernel")(
      m.kernels[id], blocks, 1, 1, philox::threads_per_block, 1, 1, 0, stream, args, nullptr);
  if (table != 0)
    CUPLUG_CALL(cuMemFreeAsync, table, stream);
  check(launched, "cuLaunchKernel");
  if (wide(dtype)) {
    // e[z] += what this call added, after it ran (same stream); zeroed first if it was clear.
    kernel_args e{};
    e.first = offset_;
    e.count = count;
    e.extra = reinterpret_cast<std::uint64_t *>(device_extra(m.context));
    if (extra_zero_)
      CUPLUG_CALL(cuMemsetD32Async, device_extra_, 0, extra_bytes / 4, stream);
    void *update[] = {&e};
    CUPLUG_CALL(cuLaunchKernel, m.kernels[add_extra], philox::streams / philox::threads_per_block,
                1, 1, philox::threads_per_block, 1, 1, 0, stream, update, nullptr);
    extra_zero_ = false;
  }
}

} // namespace cuplug::plugins

CUPLUG_PLUGIN(rng, cuplug::plugins::philox_rng, "philox",
              "Philox4x32-10 kernels, bit-identical to cuRAND's PHILOX4_32_10 (no cuRAND needed)",
              CUPLUG_PLUGIN_VERSION)
