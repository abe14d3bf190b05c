// LaunchConfig and the launch-attribute keywords (cluster=, cooperative=, config=).
#include "launch/launch_options.hpp"
#include "launch/launch_args.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"

#include <string>

namespace cuplug::python {

void set_cluster(PyObject *value, launch_attributes &attrs) {
  if (value == Py_None) {
    attrs.cluster = dim3{0, 0, 0};
    return;
  }
  if (PyLong_Check(value)) {
    const std::size_t n = to_size(value, "cluster");
    if (n == 0 || n > 0xffffffffu)
      throw py::value_error("cluster must be at least 1 block, got " + std::to_string(n));
    attrs.cluster = dim3{static_cast<unsigned>(n), 1, 1};
    return;
  }
  attrs.cluster = parse_dims(value, "cluster");
  if (!attrs.has_cluster())
    throw py::value_error("cluster must be at least 1 block along each axis");
}

void set_cooperative(PyObject *value, launch_attributes &attrs) {
  attrs.cooperative = truthy(value);
}

const launch_options &as_launch_options(PyObject *value) {
  try {
    return py::handle(value).cast<const launch_options &>();
  } catch (const py::cast_error &) {
    throw py::type_error("config must be a LaunchConfig, got " + type_name(value));
  }
}

void init_launch_config(py::module_ &m) {
  py::class_<launch_options>(
      m, "LaunchConfig",
      "A reusable launch configuration (beyond PyCUDA; cuda.core has one): grid, block, shared "
      "and launch attributes: cluster (thread-block cluster shape, compute capability 9.0+), "
      "cooperative (grid-wide synchronisation), priority, programmatic_serialization. Pass it as "
      "config= to Function.__call__ / prepared_call / prepared_async_call; keywords of the call "
      "override its grid, block and shared. Checked against the device before each launch.")
      .def(py::init([](const hint::dims_or_none &grid, const hint::dims_or_none &block,
                       const hint::int_or_none &shared, const hint::dims_or_none &cluster,
                       bool cooperative, const hint::int_or_none &priority,
                       bool programmatic_serialization) {
             launch_options o;
             if (!grid.is_none()) {
               o.grid = parse_dims(grid.ptr(), "grid");
               o.has_grid = true;
             }
             if (!block.is_none()) {
               o.block = parse_dims(block.ptr(), "block");
               o.has_block = true;
             }
             if (!shared.is_none()) {
               o.shared_bytes = shared_bytes(shared.ptr(), "shared");
               o.has_shared = true;
             }
             set_cluster(cluster.ptr(), o.attrs);
             o.attrs.cooperative = cooperative;
             if (!priority.is_none()) {
               o.attrs.has_priority = true;
               o.attrs.priority = priority.cast<int>();
             }
             o.attrs.programmatic_serialization = programmatic_serialization;
             return o;
           }),
           py::kw_only(), py::arg("grid") = py::none(), py::arg("block") = py::none(),
           py::arg("shared") = py::none(), py::arg("cluster") = py::none(),
           py::arg("cooperative") = false, py::arg("priority") = py::none(),
           py::arg("programmatic_serialization") = false,
           "A configuration; what is left None comes from the call." CUPLUG_DOC_PARAMS
           "grid : int | tuple[int, ...] | None\n    Blocks in the grid, per dimension.\n"
           "block : int | tuple[int, ...] | None\n    Threads in a block, per dimension.\n"
           "shared : int | None\n    Dynamic shared memory per block, in bytes.\n"
           "cluster : int | tuple[int, ...] | None\n    Blocks in a thread-block cluster, per "
           "dimension (compute capability 9.0+).\n"
           "cooperative : bool\n    A cooperative launch (grid-wide synchronisation).\n"
           "priority : int | None\n    The launch's priority (lower runs first); None: the "
           "stream's.\n"
           "programmatic_serialization : bool\n    Lets the kernel overlap the previous one on "
           "the stream (programmatic dependent launch).\n")
      .def_property_readonly(
          "grid",
          [](const launch_options &o) -> hint::dim3_or_none {
            if (!o.has_grid)
              return py::none();
            return py::make_tuple(o.grid.x, o.grid.y, o.grid.z);
          },
          "Blocks in the grid (x, y, z), or None when the call gives it.")
      .def_property_readonly(
          "block",
          [](const launch_options &o) -> hint::dim3_or_none {
            if (!o.has_block)
              return py::none();
            return py::make_tuple(o.block.x, o.block.y, o.block.z);
          },
          "Threads in a block (x, y, z), or None when the call gives it.")
      .def_property_readonly(
          "cluster",
          [](const launch_options &o) -> hint::dim3_or_none {
            if (!o.attrs.has_cluster())
              return py::none();
            const dim3 &k = o.attrs.cluster;
            return py::make_tuple(k.x, k.y, k.z);
          },
          "Blocks in a cluster (x, y, z), or None for no cluster.")
      .def_property_readonly(
          "cooperative", [](const launch_options &o) { return o.attrs.cooperative; },
          "Whether the launch is cooperative.")
      .def_property_readonly(
          "priority",
          [](const launch_options &o) -> hint::int_or_none {
            if (!o.attrs.has_priority)
              return py::none();
            return py::int_(o.attrs.priority);
          },
          "The launch's priority, or None for the stream's.");
}

} // namespace cuplug::python
