// The pieces of the fake's graph model shared by graphs.cpp and graph_exec.cpp.
#pragma once

#include "fake_state.hpp"

#include <map>

namespace fake {

// Handle checks: null or a node of another graph is INVALID_VALUE, a dead graph or exec is
// undefined behaviour (INVALID_HANDLE).
CUresult check_graph(CUgraph g);
CUresult check_exec(CUgraphExec e);
// A kernel node's parameters, checked as cuLaunchKernel checks them.
CUresult kernel_node(const CUDA_KERNEL_NODE_PARAMS *p, graph_node &n);
// A copy of `source` (child graphs copied too); `mapping` receives source node -> copy.
CUgraph clone_graph(CUgraph source, std::map<CUgraphNode, CUgraphNode> *mapping, bool owned);
// Marks `g` and its child graphs destroyed (their records stay as tombstones).
void destroy_graph(CUgraph g);

void add_graph_exec_entries(entry_table &t);

} // namespace fake
