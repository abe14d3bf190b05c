// The random number generator interface: counter-based streams written into device memory.
#pragma once

#include <cuplug/plugin.hpp>
#include <cuplug/plugin_abi.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace cuplug {

enum class rng_distribution { raw_bits, uniform, normal, lognormal, poisson };
enum class rng_dtype { float32, float64, uint32, uint64 };

// Tables a backend publishes for generators that run on the device outside it (PyCUDA's
// curandom builds its Sobol states from cuRAND's). Entries are 32-bit words, 64-bit for the
// *64 tables; a direction-vector table holds 32 (or 64) entries per dimension.
enum class rng_table {
  sobol32_directions,
  scrambled_sobol32_directions,
  sobol64_directions,
  scrambled_sobol64_directions,
  scramble32_constants,
  scramble64_constants,
};

struct rng_params {
  double mean = 0.0;   // normal / lognormal
  double stddev = 1.0; // normal / lognormal
  double lambda = 1.0; // poisson
};

// A generator holds a seed and a position (its offset): every output value, whatever its type,
// takes one position, and each generate() starts where the last one ended. Optional
// distributions/dtypes throw not_supported; supports() says which exist. Every call goes through
// the core's door: bad arguments throw std::invalid_argument before the plugin runs, and whatever
// else a plugin throws that is not a cuplug::error arrives as plugin_error naming the backend and
// the call. One object is not for concurrent use from several threads.
class CUPLUG_API rng : public plugin_object {
public:
  // Sets the seed and restarts the stream at offset 0.
  void seed(std::uint64_t seed);
  // Moves to `offset`; not_supported when the generator cannot skip (!seekable()).
  void set_offset(std::uint64_t offset);
  // Where the next generate() starts.
  [[nodiscard]] std::uint64_t offset() const;
  [[nodiscard]] bool seekable() const;
  [[nodiscard]] bool supports(rng_distribution distribution, rng_dtype dtype) const;
  // Fills `count` elements of `dtype` at `out` on `stream` (0 = legacy default), ordered on that
  // stream. `out` is device memory (host memory for a backend created with memory=host). Normal
  // and lognormal take an even count (Box-Muller makes values in pairs); offset() + count must
  // stay within 2^64.
  void generate(rng_distribution distribution, rng_dtype dtype, device_ptr out, std::size_t count,
                const rng_params &params = {}, CUstream stream = nullptr);

  // Entries of `table` this backend publishes; 0 when it publishes none.
  [[nodiscard]] std::size_t table_size(rng_table table) const;
  // Copies entries [first, first + count) of `table` into host memory at `out`.
  void copy_table(rng_table table, std::size_t first, std::size_t count, void *out) const;
  // The version of the library behind the backend in that library's encoding (cuRAND's
  // curandGetVersion: 10400 for 10.4.0); 0 when it has none.
  [[nodiscard]] std::uint32_t library_version() const;

private:
  virtual void do_seed(std::uint64_t seed) = 0;
  virtual void do_set_offset(std::uint64_t offset) = 0;
  virtual std::uint64_t do_offset() const = 0;
  virtual bool do_supports(rng_distribution, rng_dtype) const = 0;
  virtual void do_generate(rng_distribution distribution, rng_dtype dtype, device_ptr out,
                           std::size_t count, const rng_params &params, CUstream stream) = 0;
  virtual bool do_seekable() const { return true; }
  virtual std::size_t do_table_size(rng_table) const { return 0; }
  virtual void do_copy_table(rng_table, std::size_t, std::size_t, void *) const;
  virtual std::uint32_t do_library_version() const { return 0; }
};

[[nodiscard]] const char *to_string(rng_distribution distribution) noexcept;
[[nodiscard]] const char *to_string(rng_dtype dtype) noexcept;
[[nodiscard]] const char *to_string(rng_table table) noexcept;
// Bytes per element of `dtype` / per entry of `table`.
[[nodiscard]] std::size_t size_of(rng_dtype dtype) noexcept;
[[nodiscard]] std::size_t entry_size(rng_table table) noexcept;

} // namespace cuplug
