// Kernel-node parameters for graphs: a Function's arguments packed as its launches pack them.
#include "graphs/graph.hpp"
#include "launch/arg_packer.hpp"
#include "launch/function.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace cuplug::python {

void pack_kernel_node(py::handle fobj, const py::args &args, const dim3 &grid, const dim3 &block,
                      unsigned shared_bytes, kernel_node_args &out) {
  function *f = nullptr;
  try {
    f = &fobj.cast<function &>();
  } catch (const py::cast_error &) {
    throw py::type_error("kernel node: the kernel must be a Function (module.get_function), got " +
                         type_name(fobj));
  }
  const char *routine = "Graph.add_kernel_node";
  const CUfunction handle = f->live_handle(routine);
  std::vector<PyObject *> raw;
  for (py::handle a : args)
    raw.push_back(a.ptr());
  arg_buffer buffer;
  if (f->prepared() != nullptr) {
    f->pack_prepared_args(raw.data(), raw.size(), buffer, routine);
  } else {
    std::vector<py::object> handlers;
    pack_call(raw.data(), raw.size(), f->parameters(), buffer, handlers, f->name());
    if (!handlers.empty())
      throw py::type_error("kernel node of '" + f->name() +
                           "': In / Out / InOut arguments copy around a launch, which a graph "
                           "node cannot; pass device memory (GPUArray, DeviceAllocation)");
  }
  out.buffer.assign(buffer.data(), buffer.data() + buffer.size());
  const param_layout *params = f->parameters();
  if (params != nullptr) {
    std::size_t end = out.buffer.size();
    for (const auto &p : *params)
      end = std::max(end, p.first + p.second);
    out.buffer.resize(end, 0);
    out.pointers.clear();
    for (const auto &p : *params)
      out.pointers.push_back(out.buffer.data() + p.first);
    out.params.kernelParams = out.pointers.empty() ? nullptr : out.pointers.data();
  } else {
    // The driver could not say where each parameter lies: hand it the packed buffer.
    out.size = out.buffer.size();
    out.extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
    out.extra[1] = out.buffer.data();
    out.extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
    out.extra[3] = &out.size;
    out.extra[4] = CU_LAUNCH_PARAM_END;
    out.params.extra = out.extra;
  }
  out.params.func = handle;
  out.params.gridDimX = grid.x, out.params.gridDimY = grid.y, out.params.gridDimZ = grid.z;
  out.params.blockDimX = block.x, out.params.blockDimY = block.y, out.params.blockDimZ = block.z;
  out.params.sharedMemBytes = shared_bytes;
}

} // namespace cuplug::python
