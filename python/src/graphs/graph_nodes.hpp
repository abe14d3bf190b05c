// The nodes of a Graph made from Python arguments (graph_nodes.cpp), for the bindings in
// init_graphs.cpp. Each add_* checks its arguments before the driver call, so that a bad one is
// a Python error naming the routine instead of a CUresult; each keeps alive what its node uses.
#pragma once

#include "graphs/graph.hpp"

#include <vector>

namespace cuplug::python {

// dependencies=: None, one GraphNode or a sequence of them, all of graph `g` (checked: a node of
// another graph would make the driver fail without saying which).
std::vector<CUgraphNode> node_list(py::handle deps, const graph_ptr &g, const char *routine);
// A GraphNode for a node the driver made in `g`.
graph_node_ptr node_of(const graph_ptr &g, CUgraphNode handle);

// g.add_kernel_node(function, *args, block, grid=(1, 1), shared=0, dependencies=None).
graph_node_ptr add_kernel_node(const graph_ptr &g, py::handle fn, py::args args, py::kwargs kwargs);
// A 1D copy between a host buffer and device memory (size: the smaller known size when None),
// or the copy a Memcpy3D describes.
graph_node_ptr add_memcpy_node(const graph_ptr &g, py::handle dest, py::handle src, py::handle size,
                               py::handle deps);
// Fills `height` rows of `width` elements of 1, 2 or 4 bytes with `value`.
graph_node_ptr add_memset_node(const graph_ptr &g, py::handle dest, py::handle value,
                               py::handle width, unsigned element_size, py::handle height,
                               py::handle pitch, py::handle deps);
// Calls fn() on a driver thread when the graph reaches the node; its exceptions are reported as
// unraisable (the driver cannot stop the graph).
graph_node_ptr add_host_node(const graph_ptr &g, py::object fn, py::handle deps);
// Every node of `g`, or only those that wait for none (`roots`).
std::vector<graph_node_ptr> list_nodes(const graph_ptr &g, bool roots);

// New kernel arguments (and optionally block=, grid=, shared=, function=) for a kernel node, as
// cuGraph*KernelNodeSetParams want them. The node's Function is used unless function= names one
// (captured nodes have none); `node` remembers what changed.
void kernel_update(graph_node &node, const py::args &args, py::kwargs kwargs, const char *routine,
                   kernel_node_args &out);

} // namespace cuplug::python
