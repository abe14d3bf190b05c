// Building a Graph's nodes from Python arguments: keyword parsing, dependency lists, the 1D copy
// and fill descriptors, host-node trampolines and kernel-node parameter updates. The bindings in
// init_graphs.cpp call these; what they check is said in graph_nodes.hpp.
#include "graphs/graph_nodes.hpp"
#include "driver/activation.hpp"
#include "memory/held_buffer.hpp"
#include "memory/memory.hpp"
#include "memory/structured_copy.hpp"
#include "support/convert.hpp"

#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace cuplug::python {
namespace {

// A keyword of a (*args, **kwargs) method, removed from kwargs; null when absent.
py::object take(py::kwargs &kwargs, const char *name) {
  if (!kwargs.contains(name))
    return py::object();
  py::object value = kwargs[name];
  PyDict_DelItemString(kwargs.ptr(), name);
  return value;
}

// Refuses the keywords left once the known ones were taken (a misspelt one would be ignored).
void no_more(const py::kwargs &kwargs, const char *routine) {
  if (kwargs.size() != 0)
    throw py::type_error(std::string(routine) + ": unexpected keyword arguments " +
                         std::string(py::str(py::list(kwargs.attr("keys")()))));
}

// block= or grid=: 1 to 3 extents, the missing ones 1.
dim3 dims(py::handle obj, const char *what) {
  std::vector<unsigned> v;
  if (!py::isinstance<py::sequence>(obj) || py::len(obj) < 1 || py::len(obj) > 3)
    throw py::value_error(std::string(what) + " must be a tuple of 1 to 3 ints, got " +
                          std::string(py::repr(obj)));
  for (py::handle item : obj)
    v.push_back(static_cast<unsigned>(to_size(item, what)));
  v.resize(3, 1);
  return dim3{v[0], v[1], v[2]};
}

// One side of a 1D copy node: a host buffer or device memory.
struct copy_end {
  CUmemorytype type;
  void *host = nullptr;
  CUdeviceptr device = 0;
  std::size_t known = std::numeric_limits<std::size_t>::max(); // bytes it has, when known
};

copy_end copy_side_of(py::handle obj, bool writable, const char *role) {
  copy_end e;
  if (PyObject_CheckBuffer(obj.ptr()) && !as_device_allocation(obj)) {
    held_buffer buf(obj, PyBUF_ANY_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0),
                    "Graph.add_memcpy_node", role);
    e.type = CU_MEMORYTYPE_HOST;
    e.host = buf.data();
    e.known = buf.size();
    return e;
  }
  e.type = CU_MEMORYTYPE_DEVICE;
  e.device = to_devptr(obj);
  if (device_allocation *a = as_device_allocation(obj))
    e.known = a->size();
  return e;
}

// Host nodes run a Python callable on a driver thread; an exception cannot reach the caller
// and is reported as unraisable (printed), as the driver cannot stop the graph.
void CUDA_CB run_host_node(void *callable) {
  if (interpreter_finalizing())
    return;
  py::gil_scoped_acquire gil;
  set_in_host_node(true);
  try {
    py::handle(static_cast<PyObject *>(callable))();
  } catch (py::error_already_set &e) {
    e.discard_as_unraisable("cuplug graph host node");
  }
  set_in_host_node(false);
}

} // namespace

std::vector<CUgraphNode> node_list(py::handle deps, const graph_ptr &g, const char *routine) {
  std::vector<CUgraphNode> out;
  if (deps.is_none())
    return out;
  py::list items;
  if (py::isinstance<graph_node>(deps))
    items.append(deps);
  else
    items = py::list(py::reinterpret_borrow<py::object>(deps));
  for (py::handle item : items) {
    if (!py::isinstance<graph_node>(item))
      throw py::type_error(std::string(routine) + ": dependencies must be GraphNodes, got " +
                           type_name(item));
    const graph_node &n = item.cast<const graph_node &>();
    if (g && n.owner != g)
      throw py::value_error(std::string(routine) + ": a dependency belongs to another Graph");
    out.push_back(n.handle);
  }
  return out;
}

graph_node_ptr node_of(const graph_ptr &g, CUgraphNode handle) {
  auto n = std::make_shared<graph_node>();
  n->owner = g;
  n->handle = handle;
  return n;
}

graph_node_ptr add_kernel_node(const graph_ptr &g, py::handle fn, py::args args,
                               py::kwargs kwargs) {
  const char *routine = "Graph.add_kernel_node";
  py::object block = take(kwargs, "block"), grid = take(kwargs, "grid");
  py::object shared = take(kwargs, "shared"), deps = take(kwargs, "dependencies");
  no_more(kwargs, routine);
  if (!block)
    throw py::value_error(std::string(routine) + ": must specify block size");
  auto node = std::make_shared<graph_node>();
  node->owner = g;
  node->function = py::reinterpret_borrow<py::object>(fn);
  node->block = dims(block, "block");
  node->grid = grid ? dims(grid, "grid") : dim3{};
  node->shared_bytes = shared ? static_cast<unsigned>(to_size(shared, "shared")) : 0;
  kernel_node_args packed;
  pack_kernel_node(fn, args, node->grid, node->block, node->shared_bytes, packed);
  const std::vector<CUgraphNode> d = node_list(deps ? deps : py::none(), g, routine);
  scoped_activation_if_none active(g->get_context());
  CUPLUG_CALL(cuGraphAddKernelNode, &node->handle, g->handle(), d.data(), d.size(), &packed.params);
  g->keep(node->function);
  g->keep(args); // device memory and texture objects the kernel reads
  return node;
}

graph_node_ptr add_memcpy_node(const graph_ptr &g, py::handle dest, py::handle src, py::handle size,
                               py::handle deps) {
  const char *routine = "Graph.add_memcpy_node";
  CUDA_MEMCPY3D desc;
  std::memset(&desc, 0, sizeof desc);
  if (py::isinstance<memcpy_3d>(dest)) {
    if (!src.is_none() || !size.is_none())
      throw py::type_error(std::string(routine) + ": a Memcpy3D describes the whole copy; pass "
                                                  "it alone");
    memcpy_3d &c = dest.cast<memcpy_3d &>();
    c.check_extents(routine);
    desc = c.desc;
  } else {
    const copy_end d = copy_side_of(dest, true, "dest"), s = copy_side_of(src, false, "src");
    std::size_t bytes = std::min(d.known, s.known);
    if (!size.is_none())
      bytes = to_size(size, "size");
    else if (bytes == std::numeric_limits<std::size_t>::max())
      throw py::type_error(std::string(routine) + ": size= is needed between two device pointers");
    if (bytes > d.known || bytes > s.known)
      throw py::value_error(std::string(routine) + ": the copy is " + std::to_string(bytes) +
                            " bytes, more than its " +
                            (bytes > d.known ? "destination" : "source") + " has (" +
                            std::to_string(std::min(d.known, s.known)) + ")");
    desc.dstMemoryType = d.type, desc.dstHost = d.host, desc.dstDevice = d.device;
    desc.srcMemoryType = s.type, desc.srcHost = s.host, desc.srcDevice = s.device;
    desc.WidthInBytes = desc.srcPitch = desc.dstPitch = bytes;
    desc.Height = desc.Depth = 1;
  }
  const std::vector<CUgraphNode> dl = node_list(deps, g, routine);
  scoped_activation_if_none active(g->get_context());
  CUgraphNode handle;
  CUPLUG_CALL(cuGraphAddMemcpyNode, &handle, g->handle(), dl.data(), dl.size(), &desc,
              g->get_context()->handle());
  g->keep(py::reinterpret_borrow<py::object>(dest));
  g->keep(py::reinterpret_borrow<py::object>(src));
  return node_of(g, handle);
}

graph_node_ptr add_memset_node(const graph_ptr &g, py::handle dest, py::handle value,
                               py::handle width, unsigned element_size, py::handle height,
                               py::handle pitch, py::handle deps) {
  const char *routine = "Graph.add_memset_node";
  if (element_size != 1 && element_size != 2 && element_size != 4)
    throw py::value_error(std::string(routine) + ": element_size must be 1, 2 or 4, got " +
                          std::to_string(element_size));
  CUDA_MEMSET_NODE_PARAMS p{};
  p.dst = to_devptr(dest);
  p.elementSize = element_size;
  p.width = to_size(width, "width");
  p.height = to_size(height, "height");
  p.pitch = pitch.is_none() ? p.width * element_size : to_size(pitch, "pitch");
  const long long v = py::int_(py::reinterpret_borrow<py::object>(value)).cast<long long>();
  const long long bits = 8LL * element_size;
  if (v < -(1LL << (bits - 1)) || v >= (1LL << bits))
    throw py::value_error(std::string(routine) + ": value " + std::to_string(v) +
                          " does not fit in " + std::to_string(bits) + " bits");
  p.value = static_cast<unsigned>(static_cast<unsigned long long>(v) &
                                  ((bits == 32) ? 0xffffffffULL : ((1ULL << bits) - 1)));
  if (device_allocation *a = as_device_allocation(dest))
    if (p.height && p.width && (p.height - 1) * p.pitch + p.width * element_size > a->size())
      throw py::value_error(std::string(routine) + ": the fill reaches past the " +
                            std::to_string(a->size()) + "-byte DeviceAllocation");
  const std::vector<CUgraphNode> dl = node_list(deps, g, routine);
  scoped_activation_if_none active(g->get_context());
  CUgraphNode handle;
  CUPLUG_CALL(cuGraphAddMemsetNode, &handle, g->handle(), dl.data(), dl.size(), &p,
              g->get_context()->handle());
  g->keep(py::reinterpret_borrow<py::object>(dest));
  return node_of(g, handle);
}

graph_node_ptr add_host_node(const graph_ptr &g, py::object fn, py::handle deps) {
  if (!PyCallable_Check(fn.ptr()))
    throw py::type_error("Graph.add_host_node: expected a callable, got " + type_name(fn));
  CUDA_HOST_NODE_PARAMS p{};
  p.fn = run_host_node;
  p.userData = fn.ptr();
  const std::vector<CUgraphNode> dl = node_list(deps, g, "Graph.add_host_node");
  scoped_activation_if_none active(g->get_context());
  CUgraphNode handle;
  CUPLUG_CALL(cuGraphAddHostNode, &handle, g->handle(), dl.data(), dl.size(), &p);
  g->add_host_callable(std::move(fn));
  return node_of(g, handle);
}

std::vector<graph_node_ptr> list_nodes(const graph_ptr &g, bool roots) {
  scoped_activation_if_none active(g->get_context());
  std::size_t n = 0;
  if (roots)
    CUPLUG_CALL(cuGraphGetRootNodes, g->handle(), nullptr, &n);
  else
    CUPLUG_CALL(cuGraphGetNodes, g->handle(), nullptr, &n);
  std::vector<CUgraphNode> handles(n);
  if (roots)
    CUPLUG_CALL(cuGraphGetRootNodes, g->handle(), handles.data(), &n);
  else
    CUPLUG_CALL(cuGraphGetNodes, g->handle(), handles.data(), &n);
  std::vector<graph_node_ptr> out;
  for (std::size_t i = 0; i < n; ++i)
    out.push_back(node_of(g, handles[i]));
  return out;
}

void kernel_update(graph_node &node, const py::args &args, py::kwargs kwargs, const char *routine,
                   kernel_node_args &out) {
  py::object fn = take(kwargs, "function"), block = take(kwargs, "block");
  py::object grid = take(kwargs, "grid"), shared = take(kwargs, "shared");
  no_more(kwargs, routine);
  if (fn && (!node.function || node.function.is_none())) {
    // A captured node: start from the geometry the driver recorded.
    CUDA_KERNEL_NODE_PARAMS now{};
    scoped_activation_if_none active(node.owner->get_context());
    CUPLUG_CALL(cuGraphKernelNodeGetParams, node.handle, &now);
    node.grid = dim3{now.gridDimX, now.gridDimY, now.gridDimZ};
    node.block = dim3{now.blockDimX, now.blockDimY, now.blockDimZ};
    node.shared_bytes = now.sharedMemBytes;
  }
  if (fn)
    node.function = fn;
  if (!node.function || node.function.is_none())
    throw py::type_error(std::string(routine) + ": this node was not made by add_kernel_node; "
                                                "pass function=<the Function it launches>");
  if (block)
    node.block = dims(block, "block");
  if (grid)
    node.grid = dims(grid, "grid");
  if (shared)
    node.shared_bytes = static_cast<unsigned>(to_size(shared, "shared"));
  pack_kernel_node(node.function, args, node.grid, node.block, node.shared_bytes, out);
}

} // namespace cuplug::python
