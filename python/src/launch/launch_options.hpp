// LaunchConfig (a reusable launch configuration) and the cluster= / cooperative= keywords of
// Function.__call__ and prepared_call: launch attributes beyond PyCUDA (cuLaunchKernelEx).
#pragma once

#include "driver/context.hpp"

#include <cuplug/launcher.hpp>

namespace cuplug::python {

// What a LaunchConfig holds; geometry left unset comes from the call's own arguments.
struct launch_options {
  bool has_grid = false, has_block = false, has_shared = false;
  dim3 grid, block;
  unsigned shared_bytes = 0;
  launch_attributes attrs;
};

// cluster=: None (no clusters), an int n (n, 1, 1) or a tuple of 1 to 3 ints (missing are 1).
// ValueError naming the value otherwise.
void set_cluster(PyObject *value, launch_attributes &attrs);
// cooperative=: any truth value.
void set_cooperative(PyObject *value, launch_attributes &attrs);
// The LaunchConfig behind `value`; TypeError "config must be a LaunchConfig, got ..." otherwise.
const launch_options &as_launch_options(PyObject *value);

void init_launch_config(py::module_ &m); // launch/launch_options.cpp

} // namespace cuplug::python
