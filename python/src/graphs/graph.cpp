// Graph and GraphExec ownership: made and destroyed under their context, from any thread.
#include "graphs/graph.hpp"
#include "driver/activation.hpp"

namespace cuplug::python {

graph::graph() { CUPLUG_CALL(cuGraphCreate, &handle_, 0); }

graph::graph(CUgraph handle, context_ptr ctx)
    : context_dependent(std::move(ctx)), handle_(handle) {}

graph::~graph() {
  release_under(get_context(), "cuGraphDestroy", [this] {
    return detail::entry(driver().cuGraphDestroy, "cuGraphDestroy")(handle_);
  });
  if (keep_.empty())
    return;
  if (interpreter_finalizing()) {
    for (py::object &o : keep_)
      o.release();
  } else {
    py::gil_scoped_acquire gil;
    keep_.clear();
  }
}

graph_exec::graph_exec(const graph_ptr &source, unsigned long long flags)
    : context_dependent(source->get_context()) {
  scoped_activation_if_none active(get_context());
  CUPLUG_CALL(cuGraphInstantiateWithFlags, &handle_, source->handle(), flags);
  keep_graph(source);
}

namespace {
thread_local bool inside_host_node = false;
} // namespace

bool in_host_node() noexcept { return inside_host_node; }
void set_in_host_node(bool inside) noexcept { inside_host_node = inside; }

void graph_exec::launch(CUstream stream) {
  scoped_activation_if_none active(get_context());
  if (host_nodes_ && !last_launch_)
    CUPLUG_CALL(cuEventCreate, &last_launch_, CU_EVENT_DISABLE_TIMING);
  CUPLUG_CALL_NOGIL(cuGraphLaunch, handle_, stream);
  if (last_launch_)
    CUPLUG_CALL(cuEventRecord, last_launch_, stream);
}

void graph_exec::wait_for_last_launch() noexcept {
  release_under(get_context(), "cuEventSynchronize", [this] {
    const auto sync = detail::entry(driver().cuEventSynchronize, "cuEventSynchronize");
    if (PyGILState_Check() == 0)
      return sync(last_launch_);
    py::gil_scoped_release nogil;
    return sync(last_launch_);
  });
  release_under(get_context(), "cuEventDestroy", [this] {
    return detail::entry(driver().cuEventDestroy, "cuEventDestroy")(last_launch_);
  });
}

graph_exec::~graph_exec() {
  // Dropped inside one of its own host nodes, it cannot wait for itself: its callables leak.
  const bool leak_callables = last_launch_ && in_host_node();
  if (last_launch_ && !leak_callables)
    wait_for_last_launch();
  release_under(get_context(), "cuGraphExecDestroy", [this] {
    return detail::entry(driver().cuGraphExecDestroy, "cuGraphExecDestroy")(handle_);
  });
  if (keep_.empty() && graphs_.empty())
    return;
  if (interpreter_finalizing() || leak_callables) {
    for (py::object &o : keep_)
      o.release();
    if (leak_callables)
      for (graph_ptr &g : graphs_)
        new graph_ptr(std::move(g)); // NOLINT: kept for good, with the callables it holds
    graphs_.clear();                 // each graph leaks its own Python objects at exit
  } else {
    py::gil_scoped_acquire gil;
    keep_.clear();
    graphs_.clear();
  }
}

py::object wrap_graph(CUgraph handle, context_ptr ctx) {
  return py::cast(std::make_shared<graph>(handle, std::move(ctx)));
}

} // namespace cuplug::python
