// Python objects into driver values: device pointers, streams, sizes, and type names for
// error messages. One definition of each for the whole extension.
#pragma once

#include <pybind11/pybind11.h>

#include <cuda.h>

#include <cstddef>
#include <string>

namespace cuplug::python {
namespace py = pybind11;

// Device pointer from anything PyCUDA accepts: int, DeviceAllocation (and pooled / managed /
// IPC handles), objects with __index__ / __int__, __cuda_array_interface__, or .gpudata.
// TypeError naming the type otherwise.
CUdeviceptr to_devptr(py::handle obj);
// Stream from None (legacy default stream 0), Stream, int handle, or an object with
// __cuda_stream__. TypeError otherwise.
CUstream to_stream(py::handle obj);
// Makes later work on `consumer` wait for the work issued so far on `producer` (streams as
// to_stream takes them; the ints 1 and 2 are the driver's legacy and per-thread default streams,
// as in DLPack and the CUDA Array Interface), through an event, without blocking the host
// (array/dlpack.cpp).
void stream_wait(py::handle producer, py::handle consumer);

// A non-negative integer from int or any object with __index__ (not float): TypeError naming the
// type, ValueError "must not be negative" / "too large" naming `what` and the value.
std::size_t to_size(py::handle value, const char *what);
// The one spelling of an object's type in messages (a PyObject * converts to the handle):
// "numpy.ndarray"; builtins and cuplug's classes unqualified ("int", "Event").
std::string type_name(py::handle obj);

} // namespace cuplug::python
