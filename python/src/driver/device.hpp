// The Device class shared by the device and context bindings (Context.get_device returns one).
#pragma once

#include "driver/context.hpp"
#include "support/convert.hpp"

namespace cuplug::python {

// A CUDA device, compared and hashed by its CUdevice (PyCUDA's Device).
struct device {
  CUdevice handle;
};

} // namespace cuplug::python
