// LaunchConfig and the launch-attribute keywords (cluster=, cooperative=, config=).
#include "launch/launch_options.hpp"
#include "launch/launch_args.hpp"
#include "support/convert.hpp"

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
      .def(py::init([](py::handle grid, py::handle block, py::handle shared, py::handle cluster,
                       bool cooperative, py::handle priority, bool programmatic_serialization) {
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
           py::arg("programmatic_serialization") = false)
      .def_property_readonly("grid",
                             [](const launch_options &o) -> py::object {
                               if (!o.has_grid)
                                 return py::none();
                               return py::make_tuple(o.grid.x, o.grid.y, o.grid.z);
                             })
      .def_property_readonly("block",
                             [](const launch_options &o) -> py::object {
                               if (!o.has_block)
                                 return py::none();
                               return py::make_tuple(o.block.x, o.block.y, o.block.z);
                             })
      .def_property_readonly("cluster",
                             [](const launch_options &o) -> py::object {
                               if (!o.attrs.has_cluster())
                                 return py::none();
                               const dim3 &k = o.attrs.cluster;
                               return py::make_tuple(k.x, k.y, k.z);
                             })
      .def_property_readonly("cooperative",
                             [](const launch_options &o) { return o.attrs.cooperative; })
      .def_property_readonly("priority", [](const launch_options &o) -> py::object {
        if (!o.attrs.has_priority)
          return py::none();
        return py::int_(o.attrs.priority);
      });
}

} // namespace cuplug::python
