// The extension's registration functions, one per init_<area>.cpp; module.cpp calls them in order.
#pragma once

#include <pybind11/pybind11.h>

namespace cuplug::python {
namespace py = pybind11;

// Registration functions, one per file.
void init_python_log(py::module_ &m); // support/python_log.cpp: the core log to `cuplug`
void init_nvtx(py::module_ &m);       // support/init_nvtx.cpp: cuplug._core._nvtx
// Passes on what the core logged while this thread ran without the GIL (call with the GIL).
void flush_pending_log() noexcept;
void init_errors(py::module_ &m);
void init_enums(py::module_ &m);
void init_device(py::module_ &m);
void init_context(py::module_ &m);
void init_graphs(py::module_ &m); // graphs/init_graphs.cpp, before init_stream (end_capture)
void init_stream(py::module_ &m);
void init_memory(py::module_ &m);
void init_host_memory(py::module_ &m);
void init_memcpy(py::module_ &m);
void init_structured_copies(py::module_ &m);
void init_arrays(py::module_ &m);   // memory/init_arrays.cpp
void init_textures(py::module_ &m); // memory/init_textures.cpp
void init_module(py::module_ &m);
void init_launch(py::module_ &m);
void init_backends(py::module_ &m);
void init_compiler(py::module_ &m);
void init_pools(py::module_ &m);
void init_python_allocators(py::module_ &m);
void init_array(py::module_ &m);
void init_dlpack(py::module_ &m); // array/dlpack.cpp: cuplug._core._dlpack
void init_rng(py::module_ &m);    // rng/init_rng.cpp: cuplug._core.rng

} // namespace cuplug::python
