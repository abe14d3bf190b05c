// The embedded kernel image, loaded once per CUDA context.
#pragma once

#include "philox_launch.hpp"

#include <cuda.h>

#include <cstddef>

namespace cuplug::philox {

struct loaded_module {
  unsigned long long context = 0; // the driver's unique id of its context
  CUmodule module = nullptr;
  CUfunction kernels[kernel_count] = {};
  unsigned max_blocks = 0; // a grid that fills the device: 8 blocks per multiprocessor
};

// The module for the calling thread's current context, loading it on first use. Modules stay
// loaded until their context is destroyed (like cuRAND's): a context gets a fresh one even when
// the driver gives it a destroyed context's handle. Throws cuda_error without a current context.
const loaded_module &module_for_current_context();
// Contexts with a loaded module (each is unloaded when the host destroys its context).
std::size_t loaded_module_count();

} // namespace cuplug::philox
