// Graphs: nodes with their edges and parameters (cuGraphCreate, cuGraphAdd*Node, ...).
#include "fake_state.hpp"
#include "graph_model.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

namespace fake {

CUresult check_graph(CUgraph g) { return check_handle(state().graphs, g, "graph"); }

CUresult check_exec(CUgraphExec e) { return check_handle(state().graph_execs, e, "graph exec"); }

namespace {

CUresult check_node(CUgraph g, CUgraphNode n) {
  if (!n)
    return CUDA_ERROR_INVALID_VALUE;
  if (std::find(g->nodes.begin(), g->nodes.end(), n) == g->nodes.end())
    return CUDA_ERROR_INVALID_VALUE; // a node of another graph
  return CUDA_SUCCESS;
}

CUresult add_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n, graph_node node) {
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_graph(g));
  if (n && !deps)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; ++i) {
    FAKE_CHECK(check_node(g, deps[i]));
    if (std::count(deps, deps + n, deps[i]) > 1)
      return CUDA_ERROR_INVALID_VALUE; // a dependency given twice
  }
  node.deps.assign(deps, deps + n);
  auto *made = new CUgraphNode_st;
  made->graph = g;
  made->node = std::move(node);
  g->nodes.push_back(made);
  *out = made;
  return CUDA_SUCCESS;
}

} // namespace

CUresult kernel_node(const CUDA_KERNEL_NODE_PARAMS *p, graph_node &n) {
  if (!p)
    return CUDA_ERROR_INVALID_VALUE;
  if (p->kern || p->ctx)
    return CUDA_ERROR_NOT_SUPPORTED; // CUkernel nodes are not modelled
  const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
  const unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
  launch_record r;
  FAKE_CHECK(check_launch(p->func, grid, block, p->sharedMemBytes, p->kernelParams, p->extra, r));
  n.type = CU_GRAPH_NODE_TYPE_KERNEL;
  n.function = p->func;
  std::copy(grid, grid + 3, n.grid);
  std::copy(block, block + 3, n.block);
  n.shared_bytes = p->sharedMemBytes;
  n.params = std::move(r.params);
  return CUDA_SUCCESS;
}

void destroy_graph(CUgraph g) {
  for (CUgraphNode n : g->nodes)
    if (n->node.child)
      destroy_graph(n->node.child);
  state().graphs.erase(g); // nodes and graph stay as tombstones
}

CUgraph clone_graph(CUgraph source, std::map<CUgraphNode, CUgraphNode> *mapping, bool owned) {
  auto *g = new CUgraph_st;
  g->owned_by_node = owned;
  state().graphs.insert(g);
  std::map<CUgraphNode, CUgraphNode> local;
  auto &map = mapping ? *mapping : local;
  for (CUgraphNode n : source->nodes) { // edges may point forward (cuGraphAddDependencies)
    auto *copy = new CUgraphNode_st;
    copy->graph = g;
    copy->node = n->node;
    if (n->node.child)
      copy->node.child = clone_graph(n->node.child, nullptr, true);
    map[n] = copy;
    g->nodes.push_back(copy);
  }
  for (CUgraphNode copy : g->nodes)
    for (CUgraphNode &d : copy->node.deps)
      d = map.at(d);
  return g;
}

namespace {

CUresult fake_cuGraphCreate(CUgraph *phGraph, unsigned int flags) {
  FAKE_API(cuGraphCreate);
  if (!phGraph || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  auto *g = new CUgraph_st;
  state().graphs.insert(g);
  *phGraph = g;
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphDestroy(CUgraph hGraph) {
  FAKE_API(cuGraphDestroy);
  FAKE_CHECK(check_graph(hGraph));
  if (hGraph->owned_by_node)
    return CUDA_ERROR_INVALID_VALUE;
  destroy_graph(hGraph);
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph) {
  FAKE_API(cuGraphClone);
  if (!phGraphClone)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_graph(originalGraph));
  *phGraphClone = clone_graph(originalGraph, nullptr, false);
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                   const CUgraphNode *dependencies, size_t numDependencies,
                                   const CUDA_KERNEL_NODE_PARAMS *nodeParams) {
  FAKE_API(cuGraphAddKernelNode);
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  FAKE_CHECK(check_graph(hGraph));
  graph_node n;
  FAKE_CHECK(kernel_node(nodeParams, n));
  return add_node(phGraphNode, hGraph, dependencies, numDependencies, std::move(n));
}

CUresult fake_cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                   const CUgraphNode *dependencies, size_t numDependencies,
                                   const CUDA_MEMCPY3D *copyParams, CUcontext ctx) {
  FAKE_API(cuGraphAddMemcpyNode);
  FAKE_CHECK(check_context(ctx));
  if (!copyParams)
    return CUDA_ERROR_INVALID_VALUE;
  graph_node n;
  n.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  n.copy = *copyParams;
  return add_node(phGraphNode, hGraph, dependencies, numDependencies, std::move(n));
}

CUresult fake_cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                   const CUgraphNode *dependencies, size_t numDependencies,
                                   const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx) {
  FAKE_API(cuGraphAddMemsetNode);
  FAKE_CHECK(check_context(ctx));
  if (!memsetParams)
    return CUDA_ERROR_INVALID_VALUE;
  const unsigned e = memsetParams->elementSize;
  if (e != 1 && e != 2 && e != 4)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned char *bytes;
  const size_t rows = memsetParams->height;
  if (memsetParams->width == 0 || rows == 0)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(device_range(memsetParams->dst,
                          (rows - 1) * memsetParams->pitch + memsetParams->width * e, &bytes));
  graph_node n;
  n.type = CU_GRAPH_NODE_TYPE_MEMSET;
  n.fill = *memsetParams;
  return add_node(phGraphNode, hGraph, dependencies, numDependencies, std::move(n));
}

CUresult fake_cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                 const CUgraphNode *dependencies, size_t numDependencies,
                                 const CUDA_HOST_NODE_PARAMS *nodeParams) {
  FAKE_API(cuGraphAddHostNode);
  if (!nodeParams || !nodeParams->fn)
    return CUDA_ERROR_INVALID_VALUE;
  graph_node n;
  n.type = CU_GRAPH_NODE_TYPE_HOST;
  n.host = *nodeParams;
  return add_node(phGraphNode, hGraph, dependencies, numDependencies, std::move(n));
}

CUresult fake_cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                  const CUgraphNode *dependencies, size_t numDependencies) {
  FAKE_API(cuGraphAddEmptyNode);
  return add_node(phGraphNode, hGraph, dependencies, numDependencies, graph_node{});
}

CUresult fake_cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                       const CUgraphNode *dependencies, size_t numDependencies,
                                       CUgraph childGraph) {
  FAKE_API(cuGraphAddChildGraphNode);
  FAKE_CHECK(check_graph(hGraph));
  FAKE_CHECK(check_graph(childGraph));
  if (childGraph == hGraph)
    return CUDA_ERROR_INVALID_VALUE;
  graph_node n;
  n.type = CU_GRAPH_NODE_TYPE_GRAPH;
  n.child = clone_graph(childGraph, nullptr, true); // the node keeps a copy, as the driver does
  CUresult r = add_node(phGraphNode, hGraph, dependencies, numDependencies, n);
  if (r != CUDA_SUCCESS)
    destroy_graph(n.child);
  return r;
}

CUresult fake_cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                     const CUgraphEdgeData *edgeData, size_t numDependencies) {
  FAKE_API(cuGraphAddDependencies);
  FAKE_CHECK(check_graph(hGraph));
  if (numDependencies && (!from || !to))
    return CUDA_ERROR_INVALID_VALUE;
  if (edgeData)
    return CUDA_ERROR_NOT_SUPPORTED; // edge data (programmatic ports) is not modelled
  for (size_t i = 0; i < numDependencies; ++i) {
    FAKE_CHECK(check_node(hGraph, from[i]));
    FAKE_CHECK(check_node(hGraph, to[i]));
    auto &deps = to[i]->node.deps;
    if (from[i] == to[i] || std::count(deps.begin(), deps.end(), from[i]))
      return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t i = 0; i < numDependencies; ++i)
    to[i]->node.deps.push_back(from[i]);
  return CUDA_SUCCESS;
}

// cuGraphAddDependencies_v1 (CUDA 10.0), what drivers before 12.3 give: no edge data.
CUresult fake_cuGraphAddDependencies_v1(CUgraph hGraph, const CUgraphNode *from,
                                        const CUgraphNode *to, size_t numDependencies) {
  FAKE_API(cuGraphAddDependencies);
  count_form_call("cuGraphAddDependencies", 10000);
  return fake_cuGraphAddDependencies(hGraph, from, to, nullptr, numDependencies);
}

// Copies up to *count of `nodes` out and sets *count to how many there are.
CUresult list_nodes(const std::vector<CUgraphNode> &nodes, CUgraphNode *out, size_t *count) {
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  if (out)
    std::copy_n(nodes.begin(), std::min(*count, nodes.size()), out);
  *count = nodes.size();
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes) {
  FAKE_API(cuGraphGetNodes);
  FAKE_CHECK(check_graph(hGraph));
  return list_nodes(hGraph->nodes, nodes, numNodes);
}

CUresult fake_cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes) {
  FAKE_API(cuGraphGetRootNodes);
  FAKE_CHECK(check_graph(hGraph));
  std::vector<CUgraphNode> roots;
  for (CUgraphNode n : hGraph->nodes)
    if (n->node.deps.empty())
      roots.push_back(n);
  return list_nodes(roots, rootNodes, numRootNodes);
}

CUresult fake_cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type) {
  FAKE_API(cuGraphNodeGetType);
  if (!hNode || !type)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_graph(hNode->graph));
  *type = hNode->node.type;
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *nodeParams) {
  FAKE_API(cuGraphKernelNodeGetParams);
  if (!hNode || !nodeParams)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_graph(hNode->graph));
  graph_node &n = hNode->node;
  if (n.type != CU_GRAPH_NODE_TYPE_KERNEL)
    return CUDA_ERROR_INVALID_VALUE;
  std::memset(nodeParams, 0, sizeof *nodeParams);
  nodeParams->func = n.function;
  nodeParams->gridDimX = n.grid[0], nodeParams->gridDimY = n.grid[1];
  nodeParams->gridDimZ = n.grid[2];
  nodeParams->blockDimX = n.block[0], nodeParams->blockDimY = n.block[1];
  nodeParams->blockDimZ = n.block[2];
  nodeParams->sharedMemBytes = n.shared_bytes;
  n.param_pointers.clear();
  for (const kernel_param &p : n.function->info.params)
    n.param_pointers.push_back(n.params.data() + p.offset);
  nodeParams->kernelParams = n.param_pointers.data();
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphKernelNodeSetParams(CUgraphNode hNode,
                                         const CUDA_KERNEL_NODE_PARAMS *nodeParams) {
  FAKE_API(cuGraphKernelNodeSetParams);
  if (!hNode)
    return CUDA_ERROR_INVALID_VALUE;
  FAKE_CHECK(check_graph(hNode->graph));
  if (hNode->node.type != CU_GRAPH_NODE_TYPE_KERNEL)
    return CUDA_ERROR_INVALID_VALUE;
  graph_node n = hNode->node;
  FAKE_CHECK(kernel_node(nodeParams, n));
  hNode->node = std::move(n);
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int) {
  FAKE_API(cuGraphDebugDotPrint);
  FAKE_CHECK(check_graph(hGraph));
  if (!path)
    return CUDA_ERROR_INVALID_VALUE;
  std::FILE *f = std::fopen(path, "w");
  if (!f)
    return CUDA_ERROR_OPERATING_SYSTEM;
  std::fprintf(f, "digraph fake {\n");
  for (CUgraphNode n : hGraph->nodes) {
    std::fprintf(f, "  n%p [label=\"type %d\"];\n", static_cast<void *>(n), int(n->node.type));
    for (CUgraphNode d : n->node.deps)
      std::fprintf(f, "  n%p -> n%p;\n", static_cast<void *>(d), static_cast<void *>(n));
  }
  std::fprintf(f, "}\n");
  std::fclose(f);
  return CUDA_SUCCESS;
}

} // namespace

void add_graph_entries(entry_table &t) {
  add_stream_capture_entries(t);
  add_graph_exec_entries(t);
  FAKE_REGISTER(t, cuGraphCreate);
  FAKE_REGISTER(t, cuGraphDestroy);
  FAKE_REGISTER(t, cuGraphClone);
  FAKE_REGISTER(t, cuGraphAddKernelNode);
  FAKE_REGISTER(t, cuGraphAddMemcpyNode);
  FAKE_REGISTER(t, cuGraphAddMemsetNode);
  FAKE_REGISTER(t, cuGraphAddHostNode);
  FAKE_REGISTER(t, cuGraphAddEmptyNode);
  FAKE_REGISTER(t, cuGraphAddChildGraphNode);
  FAKE_REGISTER_VERSION(t, cuGraphAddDependencies, 10000, fake_cuGraphAddDependencies_v1);
  FAKE_REGISTER_VERSION(t, cuGraphAddDependencies, 12030, fake_cuGraphAddDependencies);
  FAKE_REGISTER(t, cuGraphGetNodes);
  FAKE_REGISTER(t, cuGraphGetRootNodes);
  FAKE_REGISTER(t, cuGraphNodeGetType);
  FAKE_REGISTER(t, cuGraphKernelNodeGetParams);
  FAKE_REGISTER(t, cuGraphKernelNodeSetParams);
  FAKE_REGISTER(t, cuGraphDebugDotPrint);
}

} // namespace fake
