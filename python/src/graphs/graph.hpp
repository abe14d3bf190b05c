// CUDA graphs as C++ classes: Graph (cuGraph*), GraphNode and GraphExec (cuGraphExec*). A graph
// keeps alive the Python objects its nodes use (kernel arguments, host callables, copy
// descriptors); an executable graph keeps the graphs it was made or updated from.
#pragma once

#include "driver/context.hpp"

#include <cuplug/launcher.hpp>

#include <memory>
#include <vector>

namespace cuplug::python {

class graph;
using graph_ptr = std::shared_ptr<graph>;

// A graph made in (or captured on a stream of) a context; destroyed under it when the last
// reference goes (its nodes and executable graphs hold it).
class graph : public context_dependent {
public:
  // An empty graph of the current context (cuGraphCreate).
  graph();
  // Takes ownership of `handle` (a captured graph, a clone).
  graph(CUgraph handle, context_ptr ctx);
  ~graph();
  graph(const graph &) = delete;
  graph &operator=(const graph &) = delete;

  CUgraph handle() const noexcept { return handle_; }
  // Objects the nodes use, released with the graph.
  void keep(py::object obj) { keep_.push_back(std::move(obj)); }
  void keep_all_of(const graph &other) {
    keep_.insert(keep_.end(), other.keep_.begin(), other.keep_.end());
    host_nodes_ = host_nodes_ || other.host_nodes_;
  }
  // Host nodes run Python callables the graph keeps: its executable graphs must not let them go
  // while a launch may still call them.
  void add_host_callable(py::object fn) {
    keep(std::move(fn));
    host_nodes_ = true;
  }
  bool has_host_nodes() const noexcept { return host_nodes_; }

private:
  CUgraph handle_ = nullptr;
  std::vector<py::object> keep_;
  bool host_nodes_ = false;
};

// A node of a graph; holds the graph. Kernel nodes made by add_kernel_node remember their
// Function and geometry so that new arguments alone can be given later.
struct graph_node {
  graph_ptr owner;
  CUgraphNode handle = nullptr;
  py::object function; // kernel nodes from add_kernel_node: the Function; None otherwise
  dim3 grid, block;
  unsigned shared_bytes = 0;
};
using graph_node_ptr = std::shared_ptr<graph_node>;

// An executable graph (cuGraphInstantiateWithFlags); destroyed under its context. One with host
// nodes records an event after each launch and, when it goes, waits for the last launch (with the
// GIL released: the host nodes need it) before the Python callables are let go: the driver frees
// an in-flight executable graph only when it completes, and its host nodes would call freed
// objects. Launches of one executable graph run in order, so the last one finishes last.
class graph_exec : public context_dependent {
public:
  graph_exec(const graph_ptr &source, unsigned long long flags);
  ~graph_exec();
  graph_exec(const graph_exec &) = delete;
  graph_exec &operator=(const graph_exec &) = delete;

  CUgraphExec handle() const noexcept { return handle_; }
  void keep(py::object obj) { keep_.push_back(std::move(obj)); }
  void keep_graph(graph_ptr g) {
    host_nodes_ = host_nodes_ || g->has_host_nodes();
    graphs_.push_back(std::move(g));
  }
  // cuGraphLaunch on `stream` (GIL released), then the event record of graphs with host nodes.
  void launch(CUstream stream);

private:
  void wait_for_last_launch() noexcept;

  CUgraphExec handle_ = nullptr;
  CUevent last_launch_ = nullptr; // recorded after each launch of a graph with host nodes
  bool host_nodes_ = false;
  std::vector<graph_ptr> graphs_;
  std::vector<py::object> keep_;
};
using graph_exec_ptr = std::shared_ptr<graph_exec>;

// Whether this thread is running a graph's host node (a graph dropped there cannot wait for
// its own launch to end).
bool in_host_node() noexcept;
void set_in_host_node(bool inside) noexcept;

// A captured graph handle as a Python Graph (Stream.end_capture).
py::object wrap_graph(CUgraph handle, context_ptr ctx);

// Kernel node parameters from a Function and Python arguments (graphs/kernel_node_params.cpp):
// the prepared format when the Function was prepared, __call__'s type dispatch otherwise.
// In / Out / InOut arguments are refused (they need copies around a launch).
struct kernel_node_args {
  std::vector<unsigned char> buffer;
  std::vector<void *> pointers; // into buffer, one per kernel parameter; empty: use `extra`
  std::size_t size = 0;
  void *extra[5] = {};
  CUDA_KERNEL_NODE_PARAMS params{};
};
// Fills `out` for `function` (a Function) launched with `args` and the given geometry.
void pack_kernel_node(py::handle function, const py::args &args, const dim3 &grid,
                      const dim3 &block, unsigned shared_bytes, kernel_node_args &out);

} // namespace cuplug::python
