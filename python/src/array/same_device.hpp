// Mixed-device checks for array operations: errors that name both devices, and the cheap check.
#pragma once

#include "array/array_object.hpp"

#include <pybind11/pybind11.h>

#include <cuda.h>

#include <string>

namespace cuplug::python::array {
namespace py = pybind11;

// "device 1 (context 0x...)" for a context cuplug wraps (every context arrays allocate in), else
// "context 0x... (no longer wrapped: device unknown)". No driver call.
std::string describe_context(CUcontext c);

// ValueError "<routine>: argument '<argument>' is on device A (context ...), but the current
// context is on device B (context ...): make the array's device current (with
// Device(A).retain_primary_context():) or copy it there with copy_to(B)".
[[noreturn]] void throw_mixed_devices(const std::string &routine, const std::string &argument,
                                      CUcontext array_ctx, CUcontext here);

// Raises throw_mixed_devices for the first array in `args` whose context is known and is not
// `here`. Non-arrays are skipped. Pointer compares only: no driver call unless it raises.
void check_same_context(const std::string &routine, py::handle args, CUcontext here);

// Binds _check_same_device(routine, *arrays) on the _array module.
void init_same_device(py::module_ &m);

} // namespace cuplug::python::array
