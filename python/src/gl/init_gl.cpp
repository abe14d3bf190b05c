// Bindings for graphics interop (cuplug._core.gl): the selected interop backend's registrations,
// mappings, mapped pointers and mapped CUDA arrays, for cuplug.gl; and what the GL window helper
// of this build can do (the helper itself is the separate module cuplug._gl_window, so that
// importing cuplug never needs GL's libraries).
#include "bindings.hpp"
#include "memory/cuda_array.hpp"
#include "support/convert.hpp"

#include <cuplug/backends.hpp>
#include <cuplug/config.hpp>
#include <cuplug/interop.hpp>

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#ifndef CUPLUG_GL_WINDOW_BUILT
#define CUPLUG_GL_WINDOW_BUILT 0
#endif
#ifndef CUPLUG_GL_MISSING
#define CUPLUG_GL_MISSING ""
#endif

namespace cuplug::python {
namespace {

CUgraphicsResource to_resource(std::uintptr_t handle) {
  return reinterpret_cast<CUgraphicsResource>(handle);
}

std::vector<CUgraphicsResource> to_resources(const std::vector<std::uintptr_t> &handles) {
  std::vector<CUgraphicsResource> out;
  out.reserve(handles.size());
  for (std::uintptr_t h : handles)
    out.push_back(to_resource(h));
  return out;
}

// The interop backend `name` (empty: the selected one), initialised once per object.
std::shared_ptr<interop> make_interop(const std::string &name) {
  const std::string chosen =
      name.empty() ? config::instance().selected(plugin_kind::interop).name : name;
  auto object = std::static_pointer_cast<interop>(backend(plugin_kind::interop, chosen));
  object->initialize();
  return object;
}

} // namespace

void init_gl(py::module_ &m) {
  py::module_ sub = m.def_submodule(
      "gl", "Graphics interop backends from Python (cuplug.gl sits on them): GL buffers and images "
            "registered with CUDA, mapped on a stream, seen as device memory or CUDA arrays.");
  sub.attr("WINDOW_BUILT") = py::bool_(CUPLUG_GL_WINDOW_BUILT != 0);
  sub.attr("WINDOW_MISSING") = py::str(CUPLUG_GL_MISSING);

  py::class_<interop, std::shared_ptr<interop>>(
      sub, "Interop",
      "An interop backend. Resources are ints (the driver's CUgraphicsResource); the GL context "
      "that owns the objects must be current on the calling thread, and a CUDA context too.")
      .def(py::init(&make_interop), py::arg("name") = "",
           "The backend `name` (default: the one selected for kind 'interop'); ConfigError "
           "listing what exists when it is not available.")
      .def_property_readonly("name", &plugin_object::backend_name)
      .def(
          "register_buffer",
          [](interop &i, std::uint32_t buffer, unsigned flags) {
            return reinterpret_cast<std::uintptr_t>(
                i.register_buffer(buffer, static_cast<interop_flags>(flags)));
          },
          py::arg("gl_buffer"), py::arg("flags") = 0)
      .def(
          "register_image",
          [](interop &i, std::uint32_t image, std::uint32_t target, unsigned flags) {
            return reinterpret_cast<std::uintptr_t>(i.register_image(
                {static_cast<gl_image_target>(target), image}, static_cast<interop_flags>(flags)));
          },
          py::arg("gl_image"), py::arg("target"), py::arg("flags") = 0)
      .def(
          "unregister",
          [](interop &i, std::uintptr_t resource) { i.unregister(to_resource(resource)); },
          py::arg("resource"), "Never raises: a failure is printed once on stderr.")
      .def(
          "map",
          [](interop &i, const std::vector<std::uintptr_t> &resources, py::handle stream) {
            const CUstream s = to_stream(stream);
            const auto list = to_resources(resources);
            py::gil_scoped_release nogil; // the driver waits for GL's work on them
            i.map(list, s);
          },
          py::arg("resources"), py::arg("stream") = py::none())
      .def(
          "unmap",
          [](interop &i, const std::vector<std::uintptr_t> &resources, py::handle stream) {
            const CUstream s = to_stream(stream);
            const auto list = to_resources(resources);
            py::gil_scoped_release nogil;
            i.unmap(list, s);
          },
          py::arg("resources"), py::arg("stream") = py::none())
      .def(
          "mapped_pointer",
          [](interop &i, std::uintptr_t resource) {
            const mapped_buffer b = i.mapped_pointer(to_resource(resource));
            return py::make_tuple(static_cast<std::uint64_t>(b.ptr), b.bytes);
          },
          py::arg("resource"), "(device address, bytes) of a mapped buffer.")
      .def(
          "mapped_array",
          [](interop &i, std::uintptr_t resource, unsigned index, unsigned level,
             py::object owner) {
            const CUarray a = i.mapped_array(to_resource(resource), index, level);
            // The Array holds `owner` (the mapping) so the mapping outlives it; released with
            // the GIL, which the last reference may not hold.
            std::shared_ptr<void> keep(new py::object(std::move(owner)), [](void *p) {
              py::gil_scoped_acquire gil;
              delete static_cast<py::object *>(p);
            });
            return cuda_array::borrowed(a, std::move(keep));
          },
          py::arg("resource"), py::arg("index") = 0, py::arg("level") = 0,
          py::arg("owner") = py::none(),
          "The CUDA array of a mapped image at array index `index` and mip level `level`, as an "
          "Array that does not own it (valid until the resource is unmapped).");
}

} // namespace cuplug::python
