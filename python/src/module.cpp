// The extension module cuplug._core: one init_<area>() per file.
#include "bindings.hpp"
#include "driver/context.hpp"
#include "hooks.hpp"
#include "support/convert.hpp"

namespace cuplug::python {
void init_gl(py::module_ &m);             // gl/init_gl.cpp: cuplug._core.gl (declared here, not in
                                          // bindings.hpp, whose every includer would rebuild)
void init_memory_history(py::module_ &m); // memory/init_memory_history.cpp: cuplug._core.
                                          // _memory_history (declared here, as init_gl)
} // namespace cuplug::python

PYBIND11_MODULE(_core, m) {
  using namespace cuplug::python;
  m.doc() = "cuplug's C++ core: driver objects, memory, launch, backends";
  init_python_log(m);
  init_nvtx(m);
  hooks::init_hooks(m); // _register_hooks: the package's modules hand theirs over at import
  init_errors(m);
  init_enums(m);
  init_device(m);
  init_context(m);
  init_graphs(m);
  init_stream(m);
  init_memory(m);
  init_host_memory(m);
  init_memcpy(m);
  init_structured_copies(m);
  init_arrays(m);
  init_textures(m);
  init_module(m);
  init_launch(m);
  init_backends(m);
  init_compiler(m);
  init_pools(m);
  init_python_allocators(m);
  init_memory_history(m);
  init_array(m);
  init_dlpack(m);
  init_rng(m);
  init_gl(m);
}
