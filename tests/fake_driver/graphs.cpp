// Graphs and executable graphs: nodes with their edges and parameters; a launch runs the nodes
// in dependency order at once (copies and fills move bytes, host nodes call their function,
// kernel nodes are recorded as launches on the launch stream).
#include "fake_state.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

namespace fake {
namespace {

CUresult check_graph(CUgraph g) { return check_handle(state().graphs, g, "graph"); }

CUresult check_exec(CUgraphExec e) { return check_handle(state().graph_execs, e, "graph exec"); }

CUresult check_node(CUgraph g, CUgraphNode n) {
  if (!n)
    return CUDA_ERROR_INVALID_VALUE;
  if (std::find(g->nodes.begin(), g->nodes.end(), n) == g->nodes.end())
    return CUDA_ERROR_INVALID_VALUE; // a node of another graph
  return CUDA_SUCCESS;
}

CUgraph clone_graph(CUgraph source, std::map<CUgraphNode, CUgraphNode> *mapping, bool owned);

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

CUresult fake_cuGraphCreate(CUgraph *phGraph, unsigned int flags) {
  FAKE_API(cuGraphCreate);
  if (!phGraph || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  auto *g = new CUgraph_st;
  state().graphs.insert(g);
  *phGraph = g;
  return CUDA_SUCCESS;
}

void destroy_graph(CUgraph g) {
  for (CUgraphNode n : g->nodes)
    if (n->node.child)
      destroy_graph(n->node.child);
  state().graphs.erase(g); // nodes and graph stay as tombstones
}

CUresult fake_cuGraphDestroy(CUgraph hGraph) {
  FAKE_API(cuGraphDestroy);
  FAKE_CHECK(check_graph(hGraph));
  if (hGraph->owned_by_node)
    return CUDA_ERROR_INVALID_VALUE;
  destroy_graph(hGraph);
  return CUDA_SUCCESS;
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

// Executable graphs ----------------------------------------------------------------------------

// `g`'s nodes with every node after its dependencies; false when they form a cycle.
bool in_order(CUgraph g, std::vector<CUgraphNode> &order) {
  std::map<CUgraphNode, size_t> waiting;
  for (CUgraphNode n : g->nodes)
    waiting[n] = n->node.deps.size();
  order.clear();
  for (size_t done = 0; order.size() < g->nodes.size(); ++done) {
    for (CUgraphNode n : g->nodes)
      if (waiting[n] == 0 && std::find(order.begin(), order.end(), n) == order.end())
        order.push_back(n);
    if (done >= order.size())
      return false;
    for (CUgraphNode n : g->nodes)
      for (CUgraphNode d : n->node.deps)
        if (d == order[done])
          --waiting[n];
  }
  return true;
}

CUresult fake_cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                          unsigned long long flags) {
  FAKE_API(cuGraphInstantiateWithFlags);
  if (!phGraphExec)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  FAKE_CHECK(current_context(&ctx));
  FAKE_CHECK(check_graph(hGraph));
  if (flags & ~(unsigned long long)(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                    CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY))
    return CUDA_ERROR_INVALID_VALUE;
  std::vector<CUgraphNode> order;
  if (!in_order(hGraph, order))
    return CUDA_ERROR_INVALID_VALUE; // a cycle
  auto *e = new CUgraphExec_st;
  e->ctx = ctx;
  e->graph = clone_graph(hGraph, &e->from, true);
  state().graph_execs.insert(e);
  *phGraphExec = e;
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphExecDestroy(CUgraphExec hGraphExec) {
  FAKE_API(cuGraphExecDestroy);
  FAKE_CHECK(check_exec(hGraphExec));
  destroy_graph(hGraphExec->graph);
  state().graph_execs.erase(hGraphExec);
  return CUDA_SUCCESS;
}

CUresult run_graph(CUgraph g, CUstream stream) {
  std::vector<CUgraphNode> order;
  in_order(g, order);
  for (CUgraphNode node : order) {
    graph_node &n = node->node;
    switch (n.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      launch_record r;
      r.function = n.function->info.name;
      std::copy(n.grid, n.grid + 3, r.grid);
      std::copy(n.block, n.block + 3, r.block);
      r.shared_bytes = n.shared_bytes;
      r.stream = stream;
      r.params = n.params;
      record_launch(std::move(r));
      break;
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      FAKE_CHECK(run_copy_3d(&n.copy));
      break;
    case CU_GRAPH_NODE_TYPE_MEMSET:
      FAKE_CHECK(run_fill(&n.fill));
      break;
    case CU_GRAPH_NODE_TYPE_HOST:
      n.host.fn(n.host.userData);
      break;
    case CU_GRAPH_NODE_TYPE_GRAPH:
      FAKE_CHECK(run_graph(n.child, stream));
      break;
    default:
      break;
    }
  }
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  FAKE_API(cuGraphLaunch);
  FAKE_CHECK(check_exec(hGraphExec));
  CUcontext ctx;
  FAKE_CHECK(stream_context(hStream, &ctx));
  if (ctx != hGraphExec->ctx)
    return CUDA_ERROR_INVALID_CONTEXT;
  return run_graph(hGraphExec->graph, hStream);
}

CUresult fake_cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
  FAKE_API(cuGraphUpload);
  FAKE_CHECK(check_exec(hGraphExec));
  CUcontext ctx;
  FAKE_CHECK(stream_context(hStream, &ctx));
  return ctx == hGraphExec->ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// Whether `b` has `a`'s shape: the same node kinds in the same order with the same edges (by
// position), and kernels of the same context.
bool same_topology(CUgraph a, CUgraph b) {
  if (a->nodes.size() != b->nodes.size())
    return false;
  auto index = [](CUgraph g, CUgraphNode n) {
    return std::find(g->nodes.begin(), g->nodes.end(), n) - g->nodes.begin();
  };
  for (size_t i = 0; i < a->nodes.size(); ++i) {
    const graph_node &x = a->nodes[i]->node, &y = b->nodes[i]->node;
    if (x.type != y.type || x.deps.size() != y.deps.size())
      return false;
    for (size_t d = 0; d < x.deps.size(); ++d)
      if (index(a, x.deps[d]) != index(b, y.deps[d]))
        return false;
    if (x.type == CU_GRAPH_NODE_TYPE_KERNEL && x.function->module->ctx != y.function->module->ctx)
      return false;
    if (x.type == CU_GRAPH_NODE_TYPE_GRAPH && !same_topology(x.child, y.child))
      return false;
  }
  return true;
}

CUresult fake_cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                CUgraphExecUpdateResultInfo *resultInfo) {
  FAKE_API(cuGraphExecUpdate);
  FAKE_CHECK(check_exec(hGraphExec));
  FAKE_CHECK(check_graph(hGraph));
  if (!resultInfo)
    return CUDA_ERROR_INVALID_VALUE;
  std::memset(resultInfo, 0, sizeof *resultInfo);
  CUgraph mine = hGraphExec->graph;
  if (!same_topology(mine, hGraph)) {
    resultInfo->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  }
  for (size_t i = 0; i < mine->nodes.size(); ++i) {
    graph_node &to = mine->nodes[i]->node;
    const graph_node &from = hGraph->nodes[i]->node;
    to.function = from.function;
    std::copy(from.grid, from.grid + 3, to.grid);
    std::copy(from.block, from.block + 3, to.block);
    to.shared_bytes = from.shared_bytes;
    to.params = from.params;
    to.copy = from.copy;
    to.fill = from.fill;
    to.host = from.host;
    hGraphExec->from[hGraph->nodes[i]] = mine->nodes[i];
  }
  resultInfo->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult fake_cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                             const CUDA_KERNEL_NODE_PARAMS *nodeParams) {
  FAKE_API(cuGraphExecKernelNodeSetParams);
  FAKE_CHECK(check_exec(hGraphExec));
  auto it = hGraphExec->from.find(hNode);
  if (it == hGraphExec->from.end() || it->second->node.type != CU_GRAPH_NODE_TYPE_KERNEL)
    return CUDA_ERROR_INVALID_VALUE;
  graph_node n = it->second->node;
  FAKE_CHECK(kernel_node(nodeParams, n));
  if (n.function->module->ctx != it->second->node.function->module->ctx)
    return CUDA_ERROR_INVALID_VALUE; // the function must stay in the same context
  it->second->node = std::move(n);
  return CUDA_SUCCESS;
}

} // namespace

void add_graph_entries(entry_table &t) {
  add_stream_capture_entries(t);
  FAKE_REGISTER(t, cuGraphCreate);
  FAKE_REGISTER(t, cuGraphDestroy);
  FAKE_REGISTER(t, cuGraphClone);
  FAKE_REGISTER(t, cuGraphAddKernelNode);
  FAKE_REGISTER(t, cuGraphAddMemcpyNode);
  FAKE_REGISTER(t, cuGraphAddMemsetNode);
  FAKE_REGISTER(t, cuGraphAddHostNode);
  FAKE_REGISTER(t, cuGraphAddEmptyNode);
  FAKE_REGISTER(t, cuGraphAddChildGraphNode);
  FAKE_REGISTER(t, cuGraphAddDependencies);
  FAKE_REGISTER(t, cuGraphGetNodes);
  FAKE_REGISTER(t, cuGraphGetRootNodes);
  FAKE_REGISTER(t, cuGraphNodeGetType);
  FAKE_REGISTER(t, cuGraphKernelNodeGetParams);
  FAKE_REGISTER(t, cuGraphKernelNodeSetParams);
  FAKE_REGISTER(t, cuGraphDebugDotPrint);
  FAKE_REGISTER(t, cuGraphInstantiateWithFlags);
  FAKE_REGISTER(t, cuGraphExecDestroy);
  FAKE_REGISTER(t, cuGraphLaunch);
  FAKE_REGISTER(t, cuGraphUpload);
  FAKE_REGISTER(t, cuGraphExecUpdate);
  FAKE_REGISTER(t, cuGraphExecKernelNodeSetParams);
}

} // namespace fake
