// Graph and GraphExec ownership: made and destroyed under their context, from any thread.
#include "driver/graph.hpp"
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
  graphs_.push_back(source);
}

graph_exec::~graph_exec() {
  release_under(get_context(), "cuGraphExecDestroy", [this] {
    return detail::entry(driver().cuGraphExecDestroy, "cuGraphExecDestroy")(handle_);
  });
  if (keep_.empty() && graphs_.empty())
    return;
  if (interpreter_finalizing()) {
    for (py::object &o : keep_)
      o.release();
    graphs_.clear(); // each graph leaks its own Python objects at exit
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
