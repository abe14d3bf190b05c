// cuplug._core._array: ArrayBase, the elementwise engine (ElementwiseCore), apply() and the
// layout planner, for cuplug.gpuarray and cuplug._array.
#include "array/array_memory.hpp"
#include "array/array_object.hpp"
#include "array/array_ops.hpp"
#include "array/elementwise_core.hpp"
#include "array/layout_plan.hpp"
#include "array/same_device.hpp"
#include "array/type_codes.hpp"
#include "bindings.hpp"
#include "hooks.hpp"
#include "support/convert.hpp"

#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cuplug::python {
namespace {

using namespace array;

std::vector<long long> shape_arg(py::handle shape) {
  std::vector<long long> out;
  if (shape.is_none())
    return out;
  if (PyLong_Check(shape.ptr())) {
    out.push_back(shape.cast<long long>());
    return out;
  }
  for (py::handle item : shape)
    out.push_back(py::int_(py::reinterpret_borrow<py::object>(item)).cast<long long>());
  return out;
}

// Operands of a Python-level call: one per argument.
std::vector<operand> operands_from(const elementwise_core &core, const py::args &args) {
  const auto &specs = core.args();
  if (args.size() != specs.size())
    throw py::type_error(core.name() + ": expected " + std::to_string(specs.size()) +
                         " arguments, got " + std::to_string(args.size()));
  std::vector<operand> ops(specs.size());
  for (std::size_t k = 0; k < specs.size(); ++k)
    fill_operand(specs[k], args[k], ops[k]);
  return ops;
}

py::dict plan_dict(const launch_plan &p, const std::vector<operand> &ops,
                   const elementwise_core &core) {
  py::dict d;
  d["classes"] = p.classes;
  d["ndim"] = p.ndim;
  d["vec"] = p.vec;
  d["index64"] = p.index64;
  d["n"] = p.n;
  d["shape"] = py::tuple(py::cast(p.shape));
  py::list strides;
  for (const auto &s : p.strides)
    strides.append(py::tuple(py::cast(s)));
  d["strides"] = strides;
  // Byte offset of each vector's first visited element from its array's element 0 (dims
  // walked backwards were flipped).
  py::list offsets;
  for (std::size_t k = 0; k < ops.size(); ++k)
    offsets.append(core.args()[k].vector && ops[k].array->size != 0
                       ? py::int_(static_cast<long long>(p.ptrs[k] - ops[k].array->ptr))
                       : py::int_(0));
  d["offsets"] = offsets;
  d["iter_shape"] = py::tuple(py::cast(p.iter_shape));
  return d;
}

void bind_core(py::module_ &m) {
  py::class_<elementwise_core>(m, "ElementwiseCore",
                               "One elementwise operation over fixed argument dtypes; compiles "
                               "a kernel per launch layout and context on first use.")
      .def(py::init([](py::list args, py::object generator, std::string name, bool keep_order,
                       bool vectorizable, bool any_layout) {
             std::vector<arg_spec> specs;
             for (py::handle item : args) {
               py::tuple t = py::reinterpret_borrow<py::tuple>(item);
               if (t.size() != 4 && t.size() != 5)
                 throw py::type_error(
                     "ElementwiseCore: args are (name, dtype, vector, written[, raw])");
               arg_spec s;
               s.name = t[0].cast<std::string>();
               s.dtype = py::module_::import("numpy").attr("dtype")(t[1]);
               s.vector = t[2].cast<bool>();
               s.written = t[3].cast<bool>();
               s.raw = t.size() == 5 && t[4].cast<bool>();
               s.code = code_of_dtype(s.dtype);
               s.itemsize = s.dtype.attr("itemsize").cast<long long>();
               if (!s.vector && s.written)
                 throw py::value_error("ElementwiseCore: scalar argument '" + s.name +
                                       "' cannot be written");
               specs.push_back(std::move(s));
             }
             plan_options o;
             o.keep_order = keep_order;
             o.vectorizable = vectorizable;
             o.any_layout = any_layout;
             return std::make_unique<elementwise_core>(std::move(specs), o, std::move(generator),
                                                       std::move(name));
           }),
           py::arg("args"), py::arg("generator"), py::arg("name"), py::arg("keep_order"),
           py::arg("vectorizable"), py::arg("any_layout"))
      .def(
          "__call__",
          [](elementwise_core &core, py::args args, py::kwargs kwargs) {
            py::object stream = py::none(), shape = py::none();
            for (auto item : kwargs) {
              std::string k = item.first.cast<std::string>();
              if (k == "stream")
                stream = py::reinterpret_borrow<py::object>(item.second);
              else if (k == "shape")
                shape = py::reinterpret_borrow<py::object>(item.second);
              else
                throw py::type_error(core.name() + "() got an unexpected keyword argument '" + k +
                                     "'");
            }
            std::vector<operand> ops = operands_from(core, args);
            std::vector<long long> sh = shape_arg(shape);
            core.launch(ops.data(), stream.is_none() ? nullptr : to_stream(stream),
                        shape.is_none() ? nullptr : &sh);
          },
          "core(*operands, stream=None, shape=None): launches over the operands (GPUArrays "
          "for vectors, numbers for scalars); shape= sets the iteration space.")
      .def(
          "plan",
          [](elementwise_core &core, py::args args, py::kwargs kwargs) {
            py::object shape = kwargs.contains("shape") ? py::object(kwargs["shape"]) : py::none();
            std::vector<operand> ops = operands_from(core, args);
            std::vector<long long> sh = shape_arg(shape);
            launch_plan p = core.plan(ops.data(), shape.is_none() ? nullptr : &sh);
            return plan_dict(p, ops, core);
          },
          "The launch layout core(*operands) would use, as a dict (no device needed).")
      .def("clear", &elementwise_core::clear, "Forgets the compiled kernels.")
      .def_property_readonly("cached_layouts", &elementwise_core::cached_layouts)
      .def_property_readonly("name", &elementwise_core::name);
}

} // namespace

void init_array(py::module_ &m) {
  py::module_ a = m.def_submodule("_array", "The array core: ArrayBase, elementwise engine");
  init_type_codes();
  init_array_object(a);
  bind_core(a);
  init_array_ops(a);
  init_reduce_launch(a);
  init_same_device(a);
  a.def(
      "allocator_name", [] { return array_allocator()->backend_name(); },
      "Name of the allocator backend arrays use now.");
  a.def(
      "fast_divmod_constants",
      [](unsigned d) {
        unsigned mul = 0, shr = 0;
        fast_divmod_constants(d, mul, shr);
        return py::make_tuple(mul, shr);
      },
      py::arg("divisor"));
  a.def(
      "allocator_id", [] { return reinterpret_cast<std::uintptr_t>(array_allocator().get()); },
      "Identity of the allocator object arrays use in the current context (one per context "
      "with the default pools).");
  a.def(
      "release_pools", [] { return release_array_pools(); },
      "Gives back the memory the per-context array pools hold and forgets the pools.");
  a.def(
      "clear_kernels",
      [] {
        elementwise_core::clear_all();
        clear_reduce_fast_plans();
      },
      "Every elementwise operation and the reductions' fast path forget their compiled kernels "
      "(and the contexts their modules keep alive).");
  a.def("pool_count", &array_pool_count,
        "Contexts with a default array pool (they go with their contexts).");
  // What was made in a context goes with it, before it is destroyed (context.hpp).
  add_context_destroy_listener(&elementwise_core::drop_context);
  add_context_destroy_listener(
      static_cast<void (*)(CUcontext, unsigned long long) noexcept>(&release_array_pools));
  hooks::on_register(hooks::hook::blocks_per_sm, &refresh_blocks_per_sm);
  a.def("get_blocks_per_sm", &get_blocks_per_sm,
        "The most blocks of 256 threads per multiprocessor an elementwise launch uses (the "
        "blocks_per_sm hook, from CUPLUG_ARRAY_TUNE).");
  a.def("double_to_half", &double_to_half, py::arg("value"),
        "IEEE binary16 bits of a double, rounded to nearest even (as NumPy).");
}

} // namespace cuplug::python
