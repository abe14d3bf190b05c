// NVTX ranges (NVTX3: header-only, from the CUDA toolkit) for what cuplug does on the user's
// behalf, in a domain of its own ("cuplug") so that Nsight Systems shows them apart from the
// user's ranges (cuplug.profiler.time_range, the default domain). Without a tool attached, a
// range is a call through a pointer that does nothing (NVTX loads no injection library).
#pragma once

#include <nvtx3/nvtx3.hpp>

#include <cstddef>
#include <cstdint>

namespace cuplug::python {

struct nvtx_domain {
  static constexpr const char *name{"cuplug"};
};

// A range for the enclosing scope: `nvtx_range r{"compile"};` (the text is not copied: a
// literal, or a string that outlives the range).
using nvtx_range = nvtx3::scoped_range_in<nvtx_domain>;

// A byte count as a range's payload, which Nsight Systems shows with it (copies, allocations):
// `nvtx_range r{"cuplug htod", bytes_payload(n)};`.
inline nvtx3::payload bytes_payload(std::size_t bytes) noexcept {
  return nvtx3::payload{static_cast<std::uint64_t>(bytes)};
}

} // namespace cuplug::python
