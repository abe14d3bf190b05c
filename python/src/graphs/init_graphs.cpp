// CUDA graphs (beyond PyCUDA): Graph with kernel, memcpy, memset, host, empty and child-graph
// nodes and their dependencies; GraphExec with launch, upload, update and kernel-node parameter
// changes; the capture_mode and graph_node_type enums. Stream capture is in driver/init_stream.cpp;
// the nodes are made in graph_nodes.cpp.
#include "bindings.hpp"
#include "driver/activation.hpp"
#include "graphs/graph_nodes.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"

#include <string>

namespace cuplug::python {
namespace {

// Why cuGraphExecUpdate refused a graph, in words.
std::string update_failure(CUgraphExecUpdateResult r) {
  switch (r) {
  case CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED:
    return "the graph's topology (nodes or edges) differs from the executable graph's";
  case CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED:
    return "a node's type changed";
  case CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED:
    return "a kernel node's function changed in a way update cannot follow";
  case CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED:
    return "a node's parameters changed in a way update cannot follow";
  case CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED:
    return "the change is not supported by update";
  default:
    return "update result " + std::to_string(static_cast<int>(r));
  }
}

} // namespace

void init_graphs(py::module_ &m) {
  py::enum_<CUstreamCaptureMode>(m, "capture_mode", py::arithmetic(),
                                 "Stream capture modes for Stream.begin_capture.")
      .value("GLOBAL", CU_STREAM_CAPTURE_MODE_GLOBAL)
      .value("THREAD_LOCAL", CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
      .value("RELAXED", CU_STREAM_CAPTURE_MODE_RELAXED);
  py::enum_<CUgraphNodeType>(m, "graph_node_type", py::arithmetic(), "Kinds of graph nodes.")
      .value("KERNEL", CU_GRAPH_NODE_TYPE_KERNEL)
      .value("MEMCPY", CU_GRAPH_NODE_TYPE_MEMCPY)
      .value("MEMSET", CU_GRAPH_NODE_TYPE_MEMSET)
      .value("HOST", CU_GRAPH_NODE_TYPE_HOST)
      .value("GRAPH", CU_GRAPH_NODE_TYPE_GRAPH)
      .value("EMPTY", CU_GRAPH_NODE_TYPE_EMPTY)
      .value("WAIT_EVENT", CU_GRAPH_NODE_TYPE_WAIT_EVENT)
      .value("EVENT_RECORD", CU_GRAPH_NODE_TYPE_EVENT_RECORD)
      .value("MEM_ALLOC", CU_GRAPH_NODE_TYPE_MEM_ALLOC)
      .value("MEM_FREE", CU_GRAPH_NODE_TYPE_MEM_FREE);

  // All three classes exist before any method is bound: pybind11 writes a signature's types
  // when the method is bound, and would otherwise name the C++ types.
  py::class_<graph_node, graph_node_ptr> node_class(m, "GraphNode",
                                                    "A node of a Graph (holds the Graph).");
  py::class_<graph, graph_ptr> graph_class(m, "Graph",
                                           "A CUDA graph of the current context, built node by "
                                           "node or captured from a stream (Stream.end_capture).");
  py::class_<graph_exec, graph_exec_ptr> exec_class(m, "GraphExec",
                                                    "An executable graph (Graph.instantiate).");
  node_class
      .def_property_readonly(
          "type",
          [](const graph_node &n) {
            CUgraphNodeType t;
            scoped_activation_if_none active(n.owner->get_context());
            CUPLUG_CALL(cuGraphNodeGetType, n.handle, &t);
            return t;
          },
          "Its graph_node_type.")
      .def_property_readonly(
          "handle", [](const graph_node &n) { return reinterpret_cast<std::uintptr_t>(n.handle); },
          "The CUgraphNode as an int.")
      .def_property_readonly(
          "graph", [](const graph_node &n) { return n.owner; }, "The Graph it belongs to.")
      .def(
          "__eq__", [](const graph_node &a, const graph_node &b) { return a.handle == b.handle; },
          py::arg("other"))
      .def("__hash__", [](const graph_node &n) { return std::hash<const void *>()(n.handle); })
      .def(
          "set_kernel_params",
          [](graph_node &n, py::args args, py::kwargs kwargs) {
            kernel_node_args packed;
            kernel_update(n, args, std::move(kwargs), "GraphNode.set_kernel_params", packed);
            scoped_activation_if_none active(n.owner->get_context());
            CUPLUG_CALL(cuGraphKernelNodeSetParams, n.handle, &packed.params);
            n.owner->keep(args);
          },
          "New arguments for this kernel node of its Graph; executable graphs made before keep "
          "the old ones (see GraphExec)." CUPLUG_DOC_PARAMS
          "*args\n    The kernel's new arguments.\n"
          "**kwargs\n    block=, grid=, shared= (bytes), function=: what else changes.\n");

  graph_class.def(py::init([] { return std::make_shared<graph>(); }), "An empty graph.")
      .def("add_kernel_node", &add_kernel_node, py::arg("function"),
           "A kernel launch: g.add_kernel_node(function, *args, block, grid=(1, 1), shared=0, "
           "dependencies=None)." CUPLUG_DOC_PARAMS "function : Function\n    The kernel.\n"
           "*args\n    Its arguments, packed as its __call__ (or prepared_call, when prepared) "
           "would pack them.\n"
           "block, grid : tuple[int, ...]\n    Threads per block and blocks per grid.\n"
           "shared : int\n    Dynamic shared memory per block, in bytes.\n"
           "dependencies : collections.abc.Sequence[GraphNode] | None\n    The nodes it waits "
           "for.\n" CUPLUG_DOC_RETURNS "GraphNode\n    The node.\n")
      .def("add_memcpy_node", &add_memcpy_node, py::arg("dest"), py::arg("src") = py::none(),
           py::arg("size") = py::none(), py::arg("dependencies") = py::none(),
           "A 1D copy between host buffers and device memory, or the copy a Memcpy3D "
           "describes." CUPLUG_DOC_PARAMS
           "dest : DeviceAllocation | int | collections.abc.Buffer | "
           "Memcpy3D\n    The destination, or a Memcpy3D alone.\n"
           "src : DeviceAllocation | int | collections.abc.Buffer | None\n    The source.\n"
           "size : int | None\n    Bytes; None: the smaller known size.\n"
           "dependencies : collections.abc.Sequence[GraphNode] | None\n    The nodes it waits "
           "for.\n" CUPLUG_DOC_RETURNS "GraphNode\n    The node.\n")
      .def("add_memset_node", &add_memset_node, py::arg("dest"), py::arg("value"), py::arg("width"),
           py::arg("element_size") = 4, py::arg("height") = 1, py::arg("pitch") = py::none(),
           py::arg("dependencies") = py::none(),
           "Fills `height` rows of `width` elements." CUPLUG_DOC_PARAMS
           "dest : DeviceAllocation | int\n    The first row.\n"
           "value : int\n    Each element's value.\n"
           "width : int\n    Elements per row.\n"
           "element_size : int\n    Bytes per element: 1, 2 or 4.\n"
           "height : int\n    Rows.\n"
           "pitch : int | None\n    Bytes from one row to the next; None: width * element_size.\n"
           "dependencies : collections.abc.Sequence[GraphNode] | None\n    The nodes it waits "
           "for.\n" CUPLUG_DOC_RETURNS "GraphNode\n    The node.\n")
      .def("add_host_node", &add_host_node, py::arg("fn"), py::arg("dependencies") = py::none(),
           "Calls fn() (no CUDA calls in it) when the graph reaches the node." CUPLUG_DOC_PARAMS
           "fn : collections.abc.Callable[[], None]\n    The host function.\n"
           "dependencies : collections.abc.Sequence[GraphNode] | None\n    The nodes it waits "
           "for.\n" CUPLUG_DOC_RETURNS "GraphNode\n    The node.\n")
      .def(
          "add_empty_node",
          [](const graph_ptr &g, const hint::nodes &deps) {
            const auto d = node_list(deps, g, "Graph.add_empty_node");
            scoped_activation_if_none active(g->get_context());
            CUgraphNode h;
            CUPLUG_CALL(cuGraphAddEmptyNode, &h, g->handle(), d.data(), d.size());
            return node_of(g, h);
          },
          py::arg("dependencies") = py::none(),
          "A node that does nothing: a join point for dependencies." CUPLUG_DOC_PARAMS
          "dependencies : collections.abc.Sequence[GraphNode] | None\n    The nodes it waits "
          "for.\n")
      .def(
          "add_child_graph_node",
          [](const graph_ptr &g, const graph_ptr &child, const hint::nodes &deps) {
            const auto d = node_list(deps, g, "Graph.add_child_graph_node");
            scoped_activation_if_none active(g->get_context());
            CUgraphNode h;
            CUPLUG_CALL(cuGraphAddChildGraphNode, &h, g->handle(), d.data(), d.size(),
                        child->handle());
            g->keep_all_of(*child);
            return node_of(g, h);
          },
          py::arg("graph"), py::arg("dependencies") = py::none(),
          "Runs a copy of `graph` (taken now) as one node." CUPLUG_DOC_PARAMS
          "graph : Graph\n    The child graph.\n"
          "dependencies : collections.abc.Sequence[GraphNode] | None\n    The nodes it waits "
          "for.\n")
      .def(
          "add_dependencies",
          [](const graph_ptr &g, const hint::node_or_nodes &from, const hint::node_or_nodes &to) {
            auto f = node_list(from, g, "Graph.add_dependencies");
            auto t = node_list(to, g, "Graph.add_dependencies");
            if (f.size() != t.size())
              throw py::value_error("Graph.add_dependencies: " + std::to_string(f.size()) +
                                    " 'from' nodes for " + std::to_string(t.size()) +
                                    " 'to' nodes; pair them one to one");
            scoped_activation_if_none active(g->get_context());
            CUPLUG_CALL(cuGraphAddDependencies, g->handle(), f.data(), t.data(), nullptr, f.size());
          },
          py::arg("from_nodes"), py::arg("to_nodes"),
          "Makes each `to` node wait for its `from` node." CUPLUG_DOC_PARAMS
          "from_nodes, to_nodes : GraphNode | collections.abc.Sequence[GraphNode]\n    Nodes, "
          "or sequences of equal length paired one to one.\n")
      .def_property_readonly(
          "nodes", [](const graph_ptr &g) { return list_nodes(g, false); }, "Every node.")
      .def_property_readonly(
          "root_nodes", [](const graph_ptr &g) { return list_nodes(g, true); },
          "The nodes that wait for none.")
      .def(
          "clone",
          [](const graph_ptr &g) {
            scoped_activation_if_none active(g->get_context());
            CUgraph h;
            CUPLUG_CALL(cuGraphClone, &h, g->handle());
            auto copy = std::make_shared<graph>(h, g->get_context());
            copy->keep_all_of(*g);
            return copy;
          },
          "A copy of the graph (cuGraphClone).")
      .def(
          "instantiate",
          [](const graph_ptr &g, unsigned long long flags) {
            return std::make_shared<graph_exec>(g, flags);
          },
          py::arg("flags") = 0,
          "An executable GraphExec of the graph as it is now." CUPLUG_DOC_PARAMS
          "flags : int\n    cuGraphInstantiateWithFlags' flags.\n")
      .def(
          "debug_dot_print",
          [](const graph_ptr &g, const std::string &path, unsigned flags) {
            scoped_activation_if_none active(g->get_context());
            CUPLUG_CALL(cuGraphDebugDotPrint, g->handle(), path.c_str(), flags);
          },
          py::arg("path"), py::arg("flags") = 0,
          "Writes the graph as Graphviz DOT." CUPLUG_DOC_PARAMS
          "path : str\n    The file to write.\n"
          "flags : int\n    cuGraphDebugDotPrint's flags (0: the default detail).\n")
      .def_property_readonly(
          "handle", [](const graph &g) { return reinterpret_cast<std::uintptr_t>(g.handle()); },
          "The CUgraph as an int.");

  exec_class
      .def(
          "launch", [](graph_exec &e, const hint::stream &stream) { e.launch(to_stream(stream)); },
          py::arg("stream") = py::none(),
          "Runs the graph (cuGraphLaunch)." CUPLUG_DOC_PARAMS CUPLUG_DOC_STREAM_PARAM)
      .def(
          "upload",
          [](const graph_exec &e, const hint::stream &stream) {
            CUstream s = to_stream(stream);
            scoped_activation_if_none active(e.get_context());
            CUPLUG_CALL_NOGIL(cuGraphUpload, e.handle(), s);
          },
          py::arg("stream") = py::none(),
          "Prepares the first launch ahead of time (cuGraphUpload)." CUPLUG_DOC_PARAMS
              CUPLUG_DOC_STREAM_PARAM)
      .def(
          "update",
          [](graph_exec &e, const graph_ptr &g) {
            CUgraphExecUpdateResultInfo info{};
            scoped_activation_if_none active(e.get_context());
            const CUresult r = detail::entry(driver().cuGraphExecUpdate,
                                             "cuGraphExecUpdate")(e.handle(), g->handle(), &info);
            if (r != CUDA_SUCCESS)
              throw cuda_error("cuGraphExecUpdate", r, update_failure(info.result));
            e.keep_graph(g);
          },
          py::arg("graph"),
          "Takes the parameters of `graph`, which must have the same nodes and "
          "edges." CUPLUG_DOC_PARAMS "graph : Graph\n    The changed graph.\n")
      .def(
          "set_kernel_node_params",
          [](graph_exec &e, graph_node &node, py::args args, py::kwargs kwargs) {
            kernel_node_args packed;
            graph_node copy = node; // the node of the Graph keeps its own arguments
            kernel_update(copy, args, std::move(kwargs), "GraphExec.set_kernel_node_params",
                          packed);
            scoped_activation_if_none active(e.get_context());
            CUPLUG_CALL(cuGraphExecKernelNodeSetParams, e.handle(), node.handle, &packed.params);
            e.keep(args);
          },
          py::arg("node"),
          "New arguments for a kernel node of this executable graph only." CUPLUG_DOC_PARAMS
          "node : GraphNode\n    A kernel node of the graph it was made from.\n"
          "*args\n    The kernel's new arguments.\n"
          "**kwargs\n    block=, grid=, shared= (bytes), function=: what else changes.\n")
      .def_property_readonly(
          "handle",
          [](const graph_exec &e) { return reinterpret_cast<std::uintptr_t>(e.handle()); },
          "The CUgraphExec as an int.");
}

} // namespace cuplug::python
