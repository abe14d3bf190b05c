// The Function methods that launch: vectorcall __call__ / prepared_*call, and the timed call.
#pragma once

#include "driver/context.hpp"
#include "support/convert.hpp"

namespace cuplug::python {

// Adds __call__, prepared_call and prepared_async_call (METH_FASTCALL, written against the C
// API: they are the hot path) to the Function class and gives it vectorcall. Once, at import.
void add_launch_methods(py::handle function_class);

// prepared_timed_call(grid, block, *args, shared_size=0): launches between two events on the
// default stream; returns a callable that waits for the second and gives the run time in seconds.
py::object prepared_timed_call(py::handle self, py::args args, py::kwargs kwargs);

} // namespace cuplug::python
