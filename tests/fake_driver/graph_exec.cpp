// Executable graphs: instantiation (cycles refused), update (same topology only), kernel-node
// parameter changes; a launch runs the nodes in dependency order at once (copies and fills move
// bytes, host nodes call their function, kernel nodes are recorded as launches on the stream).
#include "fake_state.hpp"
#include "graph_model.hpp"

#include <algorithm>
#include <cstring>
#include <map>

namespace fake {
namespace {

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

void add_graph_exec_entries(entry_table &t) {
  FAKE_REGISTER(t, cuGraphInstantiateWithFlags);
  FAKE_REGISTER(t, cuGraphExecDestroy);
  FAKE_REGISTER(t, cuGraphLaunch);
  FAKE_REGISTER(t, cuGraphUpload);
  FAKE_REGISTER(t, cuGraphExecUpdate);
  FAKE_REGISTER(t, cuGraphExecKernelNodeSetParams);
}

} // namespace fake
