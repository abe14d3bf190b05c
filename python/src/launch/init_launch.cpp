// Function's Python class: registration, prepare(), arg_format, attributes and properties. The
// launch methods themselves are in function_launch.cpp and timed_launch.cpp.
#include "bindings.hpp"
#include "driver/activation.hpp"
#include "launch/arg_packer.hpp"
#include "launch/function.hpp"
#include "launch/launch_args.hpp"
#include "launch/launch_entries.hpp"
#include "launch/launch_options.hpp"
#include "support/hints.hpp"
#include "support/host_buffer.hpp"

#include <cctype>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cuplug::python {
namespace hint {
// A kernel (methods returning self).
CUPLUG_HINT(function, "Function");
// prepared_timed_call's result: call it for the kernel's run time in seconds.
CUPLUG_HINT(timer, "collections.abc.Callable[[], float]");
} // namespace hint
namespace {

// ---- attributes ---------------------------------------------------------------------------------

int attribute_id(py::handle attr) {
  PyObject *index = PyNumber_Index(attr.ptr());
  if (index == nullptr) {
    PyErr_Clear();
    index = PyNumber_Long(attr.ptr());
  }
  if (index == nullptr) {
    PyErr_Clear();
    throw py::type_error("expected a function_attribute, got " + std::string(py::repr(attr)));
  }
  return py::reinterpret_steal<py::int_>(index).cast<int>();
}

// PyCUDA's Function.__getattr__ aliases (f.num_regs == f.get_attribute(NUM_REGS)) as one
// read-only property per function_attribute member: a __getattr__ hook would slow every
// attribute lookup on Function, the launch methods included.
void add_attribute_aliases(py::class_<function, function_ptr> &cls, py::module_ &m) {
  if (!py::hasattr(m, "function_attribute"))
    return;
  py::object members = m.attr("function_attribute").attr("__members__");
  for (auto item : py::reinterpret_borrow<py::dict>(members)) {
    std::string name = item.first.cast<std::string>();
    if (name == "MAX")
      continue; // a sentinel, not an attribute
    const int id = attribute_id(item.second);
    for (char &c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (py::hasattr(cls, name.c_str()))
      continue;
    // pybind11 keeps the docstring's pointer: one string per attribute, for the process.
    static std::vector<std::unique_ptr<std::string>> docs;
    docs.push_back(std::make_unique<std::string>("get_attribute(function_attribute." +
                                                 item.first.cast<std::string>() + ")."));
    cls.def_property_readonly(
        name.c_str(),
        [id](function &self) {
          const CUfunction f = self.live_handle("cuFuncGetAttribute");
          scoped_activation_if_none active(self.get_module()->get_context());
          return self.get_launcher().function_attribute(f, static_cast<CUfunction_attribute>(id));
        },
        docs.back()->c_str());
  }
}

// prepare()'s item rule (PyCUDA): numpy scalar type or dtype -> its char ("%ds" for void),
// str -> verbatim, anything else -> a pointer.
std::string format_of(py::handle arg_types) {
  std::string format;
  for (py::handle item : arg_types) {
    if (PyUnicode_Check(item.ptr())) {
      format += item.cast<std::string>();
      continue;
    }
    const std::string code = numpy_format_code(item);
    format += code.empty() ? std::string("P") : code;
  }
  return format;
}

} // namespace

void init_launch(py::module_ &m) {
  init_launch_config(m);
  auto cls = py::class_<function, function_ptr>(
      m, "Function", py::dynamic_attr(),
      "A kernel of a Module. Accepts arbitrary attributes (PyCUDA code stores its own).");
  function_type = reinterpret_cast<PyTypeObject *>(cls.ptr());
  add_launch_methods(cls);

  cls.def(
         "prepare",
         [](const hint::function &self, const hint::arg_types &arg_types,
            const hint::texrefs &texrefs) -> hint::function {
           if (!texrefs.is_none() && truthy(texrefs.ptr()))
             throw not_supported("prepare: texrefs: texture references were removed in CUDA "
                                 "12; use texture objects passed as kernel arguments");
           function &f = self_function(self.ptr());
           f.set_arg_format(format_of(arg_types), "prepare");
           f.texrefs = py::list();
           return self;
         },
         py::arg("arg_types"), py::arg("texrefs") = py::none(),
         "Fixes the argument types for prepared_call / prepared_async_call / "
         "prepared_timed_call; checks them against the kernel's parameters when the driver "
         "reports them." CUPLUG_DOC_PARAMS
         "arg_types : str | collections.abc.Sequence\n    One entry per kernel argument: a "
         "NumPy type or dtype, a struct format code ('i', 'P', ...), or anything else for a "
         "pointer; a str is a whole struct format.\n"
         "texrefs : list | None\n    Must be empty: texture references were removed in CUDA "
         "12.\n" CUPLUG_DOC_RETURNS "Function\n    self.\n")
      .def(
          "prepared_timed_call",
          [](const hint::function &self, py::args args, py::kwargs kwargs) -> hint::timer {
            return prepared_timed_call(self, std::move(args), std::move(kwargs));
          },
          "Launches the prepared kernel between two events on the default stream: "
          "f.prepared_timed_call(grid, block, *args, shared_size=0)." CUPLUG_DOC_PARAMS
          "*args\n    grid (blocks per dimension), block (threads per dimension), then the "
          "kernel's arguments as prepare() fixed them; shared_size: dynamic shared memory per "
          "block, in bytes.\n" CUPLUG_DOC_RETURNS
          "collections.abc.Callable[[], float]\n    Returns the kernel's run time, in seconds "
          "(waiting for it).\n")
      .def_property(
          "arg_format",
          [](const function &self) {
            if (self.prepared() == nullptr)
              throw py::attribute_error("'Function' object has no attribute 'arg_format'");
            return self.prepared()->format;
          },
          py::cpp_function(
              [](function &self, const std::string &format) {
                self.set_arg_format(format, "arg_format");
              },
              py::is_method(cls), py::arg("value")),
          "The struct format prepare() made (settable, as in PyCUDA).")
      .def(
          "get_attribute",
          [](function &self, const hint::enum_value &attr) {
            const CUfunction f = self.live_handle("cuFuncGetAttribute");
            scoped_activation_if_none active(self.get_module()->get_context());
            return self.get_launcher().function_attribute(
                f, static_cast<CUfunction_attribute>(attribute_id(attr)));
          },
          py::arg("attr"),
          "A kernel attribute (cuFuncGetAttribute)." CUPLUG_DOC_PARAMS
          "attr : function_attribute\n    Which one.\n" CUPLUG_DOC_RETURNS
          "int\n    Its value (bytes for the *_SIZE_BYTES attributes).\n")
      .def(
          "set_attribute",
          [](function &self, const hint::enum_value &attr, int value) {
            const CUfunction f = self.live_handle("cuFuncSetAttribute");
            scoped_activation_if_none active(self.get_module()->get_context());
            self.get_launcher().set_function_attribute(
                f, static_cast<CUfunction_attribute>(attribute_id(attr)), value);
          },
          py::arg("attr"), py::arg("value"),
          "Sets a kernel attribute (cuFuncSetAttribute)." CUPLUG_DOC_PARAMS
          "attr : function_attribute\n    Which one (MAX_DYNAMIC_SHARED_SIZE_BYTES, "
          "PREFERRED_SHARED_MEMORY_CARVEOUT, ...).\n"
          "value : int\n    Its new value (bytes for sizes, percent for the carveout).\n")
      .def(
          "set_cache_config",
          [](function &self, const hint::enum_value &config) {
            const CUfunction f = self.live_handle("cuFuncSetCacheConfig");
            scoped_activation_if_none active(self.get_module()->get_context());
            CUPLUG_CALL(cuFuncSetCacheConfig, f, static_cast<CUfunc_cache>(attribute_id(config)));
          },
          py::arg("config"),
          "Sets the kernel's preferred L1 / shared memory split "
          "(cuFuncSetCacheConfig)." CUPLUG_DOC_PARAMS "config : func_cache\n    The preference.\n")
      .def(
          "max_active_blocks_per_multiprocessor",
          [](function &self, int block_size, std::size_t dynamic_shared) {
            const CUfunction f = self.live_handle("cuOccupancyMaxActiveBlocksPerMultiprocessor");
            scoped_activation_if_none active(self.get_module()->get_context());
            return self.get_launcher().max_active_blocks_per_multiprocessor(f, block_size,
                                                                            dynamic_shared);
          },
          py::arg("block_size"), py::arg("dynamic_shared") = 0,
          "Occupancy: resident blocks per multiprocessor." CUPLUG_DOC_PARAMS
          "block_size : int\n    Threads per block.\n"
          "dynamic_shared : int\n    Dynamic shared memory per block, in "
          "bytes.\n" CUPLUG_DOC_RETURNS
          "int\n    Blocks of this size that fit on one multiprocessor.\n")
      .def_property_readonly(
          "num_params",
          [](function &self) -> hint::int_or_none {
            const param_layout *p = self.parameters();
            return p ? py::object(py::int_(p->size())) : py::object(py::none());
          },
          "Number of kernel parameters, or None if the launcher cannot tell.")
      .def_property_readonly(
          "param_layout",
          [](function &self) -> hint::param_layout {
            const param_layout *p = self.parameters();
            if (p == nullptr)
              return py::none();
            py::list out;
            for (const auto &[offset, size] : *p)
              out.append(py::make_tuple(offset, size));
            return out;
          },
          "[(offset, size)] of each kernel parameter, in bytes, or None if the launcher cannot "
          "tell.")
      .def_property_readonly("kernel_name", &function::name, "The kernel's (mangled) name.")
      .def_property_readonly(
          "handle",
          [](const function &self) { return reinterpret_cast<std::uintptr_t>(self.handle()); },
          "The CUfunction as an int.")
      .def_property_readonly("module", &function::get_module, "The Module it belongs to.")
      .def(
          "_set_block_shape",
          [](function &self, unsigned x, unsigned y, unsigned z) {
            self.last_block = dim3{x, y, z};
          },
          py::arg("x"), py::arg("y") = 1, py::arg("z") = 1)
      .def(
          "_launch_kernel",
          [](function &self, const hint::dims &grid, const hint::dims &block, py::buffer args,
             const hint::size &shared, const hint::stream &stream) {
            launch_config config;
            config.grid = parse_dims(grid.ptr(), "grid");
            config.block = parse_dims(block.ptr(), "block");
            config.shared_bytes = shared_bytes(shared.ptr(), "shared");
            config.stream = to_stream(stream);
            py::buffer_info info = args.request();
            check_plain_buffer(info, "_launch_kernel", "arg_buf");
            self.launch(config, info.ptr, static_cast<std::size_t>(info.size * info.itemsize));
          },
          py::arg("grid"), py::arg("block"), py::arg("arg_buf"), py::arg("shared") = 0,
          py::arg("stream") = py::none(), "PyCUDA's internal launch with a packed buffer.")
      .def_property(
          "texrefs", [](const function &self) -> hint::texrefs { return self.texrefs; },
          py::cpp_function([](function &self, const hint::texrefs &value) { self.texrefs = value; },
                           py::is_method(cls), py::arg("value")),
          "Always empty: texture references were removed in CUDA 12.")
      .def("__repr__",
           [](const function &self) { return "<cuplug Function '" + self.name() + "'>"; });
  add_attribute_aliases(cls, m);

  // Module.get_function is bound here, once Function exists (init_module runs first, as Function
  // names Module): pybind11 writes a signature's types when a method is bound.
  py::reinterpret_borrow<py::class_<module, module_ptr>>(m.attr("Module"))
      .def(
          "get_function",
          [](const module_ptr &self, const std::string &name) {
            const CUmodule handle = self->live_handle("module::get_function");
            scoped_activation_if_none active(self->get_context());
            CUfunction f = self->get_launcher().get_function(handle, name);
            return std::make_shared<function>(self, f, name);
          },
          py::arg("name"),
          "A new Function for a kernel; it keeps this module alive." CUPLUG_DOC_PARAMS
          "name : str\n    The kernel's (mangled, unless extern \"C\") name.\n");
}

} // namespace cuplug::python
