// Function bindings: __call__, prepare / prepared_*call, attributes. The launch entry points are
// METH_FASTCALL methods written against the C API: they are the hot path (design.md's launch row).
#include "arg_packer.hpp"
#include "function.hpp"

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace cuplug::python {

// ---- function -----------------------------------------------------------------------------------

namespace {

} // namespace

const param_layout *function::parameters() {
  if (!params_asked_) {
    params_asked_ = true;
    try {
      if (auto layout = launcher_->parameter_layout(handle_)) {
        params_ = std::move(*layout);
        params_known_ = true;
      }
    } catch (const std::exception &) {
      // a failed query only costs the checks, never the launch
    }
  }
  return params_known_ ? &params_ : nullptr;
}

void function::set_arg_format(const std::string &format, const char *routine) {
  arg_layout layout = parse_arg_format(format);
  if (const param_layout *params = parameters())
    fit_to_kernel(layout, *params, name_, routine);
  prepared_ = std::move(layout);
}

void function::prepared_launch(const launch_config &config, PyObject *const *args,
                               std::size_t nargs, arg_buffer &buffer, const char *routine) {
  if (!prepared_)
    throw py::attribute_error(std::string(routine) + ": kernel '" + name_ +
                              "' has no arg_format; call prepare(arg_types) first");
  pack_prepared(*prepared_, args, nargs, buffer, name_, routine);
  launch(config, buffer.data(), buffer.size());
}

namespace {

// ---- argument parsing helpers -------------------------------------------------------------------

PyTypeObject *function_type = nullptr;

function &self_function(PyObject *self) {
  if (Py_TYPE(self) == function_type) {
    auto *inst = reinterpret_cast<py::detail::instance *>(self);
    if (inst->simple_layout && inst->simple_value_holder[0] != nullptr)
      return *static_cast<function *>(inst->simple_value_holder[0]);
  }
  return py::handle(self).cast<function &>();
}

[[noreturn]] void bad_dims(PyObject *obj, const char *what) {
  throw py::value_error(std::string(what) + " must be a tuple of 1 to 3 ints in [0, 2**32), got " +
                        std::string(py::repr(obj)));
}

// A grid or block: a tuple (or list) of 1 to 3 ints; missing entries are 1.
dim3 parse_dims(PyObject *obj, const char *what) {
  PyObject *const *items;
  Py_ssize_t n;
  if (PyTuple_Check(obj)) {
    items = reinterpret_cast<PyTupleObject *>(obj)->ob_item;
    n = PyTuple_GET_SIZE(obj);
  } else if (PyList_Check(obj)) {
    items = reinterpret_cast<PyListObject *>(obj)->ob_item;
    n = PyList_GET_SIZE(obj);
  } else {
    bad_dims(obj, what);
  }
  if (n < 1 || n > 3)
    bad_dims(obj, what);
  unsigned v[3] = {1, 1, 1};
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *item = items[i];
    py::object index;
    if (!PyLong_Check(item)) {
      if (PyFloat_Check(item) || !PyIndex_Check(item))
        bad_dims(obj, what);
      index = py::reinterpret_steal<py::object>(PyNumber_Index(item));
      if (!index) {
        PyErr_Clear();
        bad_dims(obj, what);
      }
      item = index.ptr();
    }
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(item, &overflow);
    if (overflow != 0 || x < 0 || x > 0xffffffffLL) {
      PyErr_Clear();
      bad_dims(obj, what);
    }
    v[i] = static_cast<unsigned>(x);
  }
  return dim3{v[0], v[1], v[2]};
}

// parse_dims with the function's memo of the last tuple (see function::dims_memo).
dim3 memo_dims(PyObject *obj, function::dims_memo &memo, const char *what) {
  if (obj == memo.key.ptr())
    return memo.value;
  const dim3 value = parse_dims(obj, what);
  if (PyTuple_CheckExact(obj)) {
    bool exact = true;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(obj); ++i)
      exact = exact && PyLong_CheckExact(PyTuple_GET_ITEM(obj, i));
    if (exact) {
      memo.key = py::reinterpret_borrow<py::object>(obj);
      memo.value = value;
    }
  }
  return value;
}

bool truthy(PyObject *obj) {
  const int truth = PyObject_IsTrue(obj);
  if (truth < 0)
    throw py::error_already_set();
  return truth != 0;
}

bool is_block(PyObject *obj) noexcept { return PyTuple_Check(obj) || PyList_Check(obj); }

unsigned shared_bytes(PyObject *obj, const char *what) {
  if (obj == Py_None)
    return 0;
  int overflow = 0;
  const long long x = PyLong_Check(obj) ? PyLong_AsLongLongAndOverflow(obj, &overflow) : -1;
  if (overflow != 0 || x < 0 || x > 0xffffffffLL) {
    PyErr_Clear();
    throw py::value_error(std::string(what) + " must be a number of bytes in [0, 2**32), got " +
                          std::string(py::repr(obj)));
  }
  return static_cast<unsigned>(x);
}

bool name_is(PyObject *name, PyObject *interned, const char *text) {
  return name == interned || PyUnicode_CompareWithASCIIString(name, text) == 0;
}

std::string joined_names(PyObject *kwnames) {
  std::string names;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i)
    names += (i ? ", " : "") + py::handle(PyTuple_GET_ITEM(kwnames, i)).cast<std::string>();
  return names;
}

void deprecated_signature(const char *routine) {
  const std::string message = std::string("Not passing the block size to ") + routine +
                              " is deprecated as of version 2011.1.";
  if (PyErr_WarnEx(PyExc_DeprecationWarning, message.c_str(), 1) != 0)
    throw py::error_already_set();
}

struct interned_names {
  PyObject *shared_size, *block, *grid, *stream, *shared, *texrefs, *time_kernel, *pre_call,
      *post_call;
};

const interned_names &names() {
  static const interned_names n = {
      PyUnicode_InternFromString("shared_size"), PyUnicode_InternFromString("block"),
      PyUnicode_InternFromString("grid"),        PyUnicode_InternFromString("stream"),
      PyUnicode_InternFromString("shared"),      PyUnicode_InternFromString("texrefs"),
      PyUnicode_InternFromString("time_kernel"), PyUnicode_InternFromString("pre_call"),
      PyUnicode_InternFromString("post_call")};
  return n;
}

// The deprecated signatures pass no block: use the shape of the previous launch (PyCUDA's
// cuFuncSetBlockShape state).
dim3 remembered_block(const function &f) {
  if (!f.last_block)
    throw py::value_error("must specify block size: kernel '" + f.name() +
                          "' has not been launched with a block yet");
  return *f.last_block;
}

// ---- prepared_call / prepared_async_call --------------------------------------------------------

// Both: (grid, block, [stream,] *args, shared_size=0). `with_stream` selects the async form.
PyObject *prepared_entry(PyObject *self, PyObject *const *args, Py_ssize_t nargsf,
                         PyObject *kwnames, bool with_stream) noexcept {
  const char *routine = with_stream ? "prepared_async_call" : "prepared_call";
  try {
    function &f = self_function(self);
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    launch_config config;
    if (kwnames != nullptr) {
      const Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
      if (nkw != 1 || !name_is(PyTuple_GET_ITEM(kwnames, 0), names().shared_size, "shared_size"))
        throw py::type_error(std::string(routine) +
                             ": unknown keyword arguments: " + joined_names(kwnames));
      config.shared_bytes = shared_bytes(args[nargs], "shared_size");
    }
    if (nargs < 1)
      throw py::type_error(std::string(routine) + "() takes (grid, block, " +
                           (with_stream ? "stream, " : "") + "*args), got no grid");
    config.grid = memo_dims(args[0], f.grid_memo, "grid");
    Py_ssize_t first;
    PyObject *stream = Py_None;
    if (nargs >= 2 && is_block(args[1])) {
      config.block = memo_dims(args[1], f.block_memo, "block");
      first = 2;
    } else {
      // Old signature (grid, [stream,] *args): PyCUDA warns and shifts the arguments.
      deprecated_signature(routine);
      config.block = remembered_block(f);
      first = 1;
    }
    if (with_stream) {
      if (nargs <= first)
        throw py::type_error(std::string(routine) + "() takes (grid, block, stream, *args), " +
                             "got no stream");
      stream = args[first++];
    }
    if (stream != Py_None)
      config.stream = to_stream(stream);
    arg_buffer buffer;
    f.prepared_launch(config, args + first, static_cast<std::size_t>(nargs - first), buffer,
                      routine);
    Py_RETURN_NONE;
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

PyObject *prepared_call(PyObject *self, PyObject *const *args, Py_ssize_t nargsf,
                        PyObject *kwnames) noexcept {
  return prepared_entry(self, args, nargsf, kwnames, false);
}

PyObject *prepared_async_call(PyObject *self, PyObject *const *args, Py_ssize_t nargsf,
                              PyObject *kwnames) noexcept {
  return prepared_entry(self, args, nargsf, kwnames, true);
}

// ---- __call__ -----------------------------------------------------------------------------------

void context_synchronize() { CUPLUG_CALL_NOGIL(cuCtxSynchronize, nullptr); }

PyObject *call(PyObject *self, PyObject *const *args, std::size_t nargsf,
               PyObject *kwnames) noexcept {
  try {
    function &f = self_function(self);
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    const interned_names &n = names();
    PyObject *block = nullptr, *grid = nullptr, *stream = Py_None, *shared = nullptr,
             *texrefs = nullptr, *time_kernel = nullptr;
    if (kwnames != nullptr) {
      // Keyword names are interned: compare pointers first, text only for the odd caller.
      PyObject *const known[] = {n.block, n.grid, n.stream, n.shared, n.texrefs, n.time_kernel};
      PyObject **slots[] = {&block, &grid, &stream, &shared, &texrefs, &time_kernel};
      std::string unknown;
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        int which = -1;
        for (int k = 0; k < 6 && which < 0; ++k)
          if (name == known[k])
            which = k;
        for (int k = 0; k < 6 && which < 0; ++k)
          if (PyUnicode_Compare(name, known[k]) == 0)
            which = k;
        if (which >= 0)
          *slots[which] = args[nargs + i];
        else
          unknown += (unknown.empty() ? "" : ",") + py::handle(name).cast<std::string>();
      }
      if (!unknown.empty())
        throw py::value_error("extra keyword arguments: " + unknown);
    }
    if (block == nullptr || block == Py_None)
      throw py::value_error("must specify block size");
    if (texrefs != nullptr && truthy(texrefs))
      throw not_supported("Function.__call__: texrefs: texture references were removed in CUDA "
                          "12; use texture objects passed as kernel arguments");
    launch_config config;
    config.block = memo_dims(block, f.block_memo, "block");
    if (grid != nullptr)
      config.grid = memo_dims(grid, f.grid_memo, "grid");
    if (shared != nullptr)
      config.shared_bytes = shared_bytes(shared, "shared");
    const bool timed = time_kernel != nullptr && truthy(time_kernel);
    if (stream != Py_None) {
      if (timed) {
        PyErr_SetString(PyExc_AssertionError,
                        "Can't time the kernel on an asynchronous invocation");
        return nullptr;
      }
      config.stream = to_stream(stream);
    }

    std::vector<py::object> handlers;
    arg_buffer buffer;
    pack_call(args, static_cast<std::size_t>(nargs), f.parameters(), buffer, handlers, f.name());

    if (handlers.empty() && !timed) { // the common case
      f.launch(config, buffer.data(), buffer.size());
      Py_RETURN_NONE;
    }
    py::handle stream_obj(stream);
    for (py::object &h : handlers)
      h.attr(n.pre_call)(stream_obj);
    std::vector<py::object> post;
    for (py::object &h : handlers)
      if (py::hasattr(h, n.post_call))
        post.push_back(h);

    using clock = std::chrono::steady_clock;
    clock::time_point start;
    if (timed) {
      context_synchronize();
      start = clock::now();
    }
    f.launch(config, buffer.data(), buffer.size());
    double seconds = 0;
    if (stream == Py_None && (timed || !post.empty())) {
      context_synchronize();
      seconds = std::chrono::duration<double>(clock::now() - start).count();
    }
    for (py::object &h : post)
      h.attr(n.post_call)(stream_obj);
    if (timed)
      return PyFloat_FromDouble(seconds);
    Py_RETURN_NONE;
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

// Function.__call__ as a method (explicit Function.__call__(f, ...) and introspection).
PyObject *call_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames) noexcept {
  return call(self, args, static_cast<std::size_t>(nargs), kwnames);
}

// f(...) itself goes through vectorcall: without it CPython packs the arguments into a tuple
// and a dict and unpacks them again (about half of __call__'s cost). pybind11 instances have no
// room for the vectorcall pointer, so the type gets one more pointer at its end, filled in when
// an instance is allocated.
Py_ssize_t vectorcall_offset = 0;

PyObject *alloc_with_vectorcall(PyTypeObject *type, Py_ssize_t items) {
  PyObject *self = PyType_GenericAlloc(type, items);
  if (self != nullptr) {
    vectorcallfunc entry = &call;
    std::memcpy(reinterpret_cast<char *>(self) + vectorcall_offset, &entry, sizeof entry);
  }
  return self;
}

// tp_call for the callers that do not use vectorcall (PyObject_Call with a tuple and a dict).
PyObject *call_from_tuple(PyObject *self, PyObject *args, PyObject *kwargs) noexcept {
  const Py_ssize_t nargs = PyTuple_GET_SIZE(args);
  const Py_ssize_t nkw = kwargs != nullptr ? PyDict_GET_SIZE(kwargs) : 0;
  std::vector<PyObject *> stack(static_cast<std::size_t>(nargs + nkw) + 1);
  for (Py_ssize_t i = 0; i < nargs; ++i)
    stack[i] = PyTuple_GET_ITEM(args, i);
  if (nkw == 0)
    return call(self, stack.data(), static_cast<std::size_t>(nargs), nullptr);
  PyObject *kwnames = PyTuple_New(nkw);
  if (kwnames == nullptr)
    return nullptr;
  Py_ssize_t pos = 0, i = 0;
  PyObject *key, *value;
  while (PyDict_Next(kwargs, &pos, &key, &value)) {
    Py_INCREF(key);
    PyTuple_SET_ITEM(kwnames, i, key);
    stack[nargs + i++] = value;
  }
  PyObject *result = call(self, stack.data(), static_cast<std::size_t>(nargs), kwnames);
  Py_DECREF(kwnames);
  return result;
}

void enable_vectorcall(PyTypeObject *type) {
  vectorcall_offset = type->tp_basicsize;
  if (vectorcall_offset % alignof(vectorcallfunc) != 0)
    vectorcall_offset += alignof(vectorcallfunc) - vectorcall_offset % alignof(vectorcallfunc);
  type->tp_basicsize = vectorcall_offset + static_cast<Py_ssize_t>(sizeof(vectorcallfunc));
  type->tp_vectorcall_offset = vectorcall_offset;
  type->tp_alloc = &alloc_with_vectorcall;
  type->tp_call = &call_from_tuple;
  type->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
  PyType_Modified(type);
}

// ---- prepared_timed_call ------------------------------------------------------------------------

// Two events around one launch on the default stream; the callable waits for the second.
class timed_launch {
public:
  timed_launch() : ctx_(context::current_or_throw()) {
    CUPLUG_CALL(cuEventCreate, &start_, CU_EVENT_DEFAULT);
    try {
      CUPLUG_CALL(cuEventCreate, &end_, CU_EVENT_DEFAULT);
    } catch (...) {
      cleanup_call(driver().cuEventDestroy(start_), "cuEventDestroy");
      throw;
    }
  }
  ~timed_launch() {
    release_under(ctx_, "cuEventDestroy", [this] { return driver().cuEventDestroy(start_); });
    release_under(ctx_, "cuEventDestroy", [this] { return driver().cuEventDestroy(end_); });
  }
  timed_launch(const timed_launch &) = delete;
  timed_launch &operator=(const timed_launch &) = delete;

  CUevent start() const noexcept { return start_; }
  CUevent end() const noexcept { return end_; }
  double seconds() const {
    CUPLUG_CALL_NOGIL(cuEventSynchronize, end_);
    float ms = 0;
    CUPLUG_CALL(cuEventElapsedTime, &ms, start_, end_);
    return ms * 1e-3;
  }

private:
  context_ptr ctx_;
  CUevent start_ = nullptr;
  CUevent end_ = nullptr;
};

py::object prepared_timed_call(py::handle self, py::args args, py::kwargs kwargs) {
  function &f = self_function(self.ptr());
  launch_config config;
  for (auto item : kwargs) {
    if (item.first.cast<std::string>() != "shared_size")
      throw py::type_error("prepared_timed_call: unknown keyword arguments: " +
                           item.first.cast<std::string>());
    config.shared_bytes = shared_bytes(item.second.ptr(), "shared_size");
  }
  if (args.size() < 1)
    throw py::type_error("prepared_timed_call() takes (grid, block, *args)");
  PyObject *const *items = reinterpret_cast<PyTupleObject *>(args.ptr())->ob_item;
  config.grid = parse_dims(items[0], "grid");
  std::size_t first = 2;
  if (args.size() >= 2 && is_block(items[1])) {
    config.block = parse_dims(items[1], "block");
  } else {
    deprecated_signature("prepared_timed_call");
    config.block = remembered_block(f);
    first = 1;
  }
  auto timing = std::make_shared<timed_launch>();
  CUPLUG_CALL(cuEventRecord, timing->start(), nullptr);
  arg_buffer buffer;
  f.prepared_launch(config, items + first, args.size() - first, buffer, "prepared_timed_call");
  CUPLUG_CALL(cuEventRecord, timing->end(), nullptr);
  return py::cpp_function([timing]() { return timing->seconds(); });
}

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
    cls.def_property_readonly(name.c_str(), [id](function &self) {
      return self.get_launcher().function_attribute(self.handle(),
                                                    static_cast<CUfunction_attribute>(id));
    });
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

PyMethodDef call_def = {"__call__",
                        reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&call_method)),
                        METH_FASTCALL | METH_KEYWORDS,
                        "__call__(*args, block, grid=(1, 1), stream=None, shared=0, texrefs=[], "
                        "time_kernel=False)\n\nLaunches with PyCUDA's argument type dispatch; "
                        "returns the run time in seconds with time_kernel=True."};
PyMethodDef prepared_call_def = {
    "prepared_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&prepared_call)),
    METH_FASTCALL | METH_KEYWORDS,
    "prepared_call(grid, block, *args, shared_size=0)\n\nLaunches on the default stream with "
    "the format given to prepare()."};
PyMethodDef prepared_async_call_def = {
    "prepared_async_call",
    reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&prepared_async_call)),
    METH_FASTCALL | METH_KEYWORDS,
    "prepared_async_call(grid, block, stream, *args, shared_size=0)\n\nLaunches on `stream` "
    "with the format given to prepare()."};

void add_method(py::handle cls, PyMethodDef &def) {
  PyObject *descr = PyDescr_NewMethod(reinterpret_cast<PyTypeObject *>(cls.ptr()), &def);
  if (descr == nullptr)
    throw py::error_already_set();
  py::setattr(cls, def.ml_name, py::reinterpret_steal<py::object>(descr));
}

} // namespace

void init_launch(py::module_ &m) {
  auto cls = py::class_<function, function_ptr>(
      m, "Function", py::dynamic_attr(),
      "A kernel of a Module. Accepts arbitrary attributes (PyCUDA code stores its own).");
  function_type = reinterpret_cast<PyTypeObject *>(cls.ptr());
  add_method(cls, call_def);
  add_method(cls, prepared_call_def);
  add_method(cls, prepared_async_call_def);
  enable_vectorcall(function_type); // after __call__ is set: setting it resets tp_call

  cls.def(
         "prepare",
         [](py::object self, py::handle arg_types, py::handle texrefs) {
           if (!texrefs.is_none() && truthy(texrefs.ptr()))
             throw not_supported("prepare: texrefs: texture references were removed in CUDA "
                                 "12; use texture objects passed as kernel arguments");
           function &f = self_function(self.ptr());
           f.set_arg_format(format_of(arg_types), "prepare");
           f.texrefs = py::list();
           return self;
         },
         py::arg("arg_types"), py::arg("texrefs") = py::none(),
         "Fixes the argument types (numpy types/dtypes, struct codes, anything else = "
         "pointer) for prepared_*call; checks them against the kernel's parameters when the "
         "driver reports them. Returns self.")
      .def("prepared_timed_call", &prepared_timed_call,
           "prepared_timed_call(grid, block, *args, shared_size=0) -> callable returning the "
           "kernel's run time in seconds (events on the default stream).")
      .def_property(
          "arg_format",
          [](const function &self) {
            if (self.prepared() == nullptr)
              throw py::attribute_error("'Function' object has no attribute 'arg_format'");
            return self.prepared()->format;
          },
          [](function &self, const std::string &format) {
            self.set_arg_format(format, "arg_format");
          },
          "The struct format prepare() made (settable, as in PyCUDA).")
      .def(
          "get_attribute",
          [](function &self, py::handle attr) {
            return self.get_launcher().function_attribute(
                self.handle(), static_cast<CUfunction_attribute>(attribute_id(attr)));
          },
          py::arg("attr"))
      .def(
          "set_attribute",
          [](function &self, py::handle attr, int value) {
            self.get_launcher().set_function_attribute(
                self.handle(), static_cast<CUfunction_attribute>(attribute_id(attr)), value);
          },
          py::arg("attr"), py::arg("value"))
      .def(
          "set_cache_config",
          [](function &self, py::handle config) {
            CUPLUG_CALL(cuFuncSetCacheConfig, self.handle(),
                        static_cast<CUfunc_cache>(attribute_id(config)));
          },
          py::arg("config"))
      .def(
          "max_active_blocks_per_multiprocessor",
          [](function &self, int block_size, std::size_t dynamic_shared) {
            return self.get_launcher().max_active_blocks_per_multiprocessor(
                self.handle(), block_size, dynamic_shared);
          },
          py::arg("block_size"), py::arg("dynamic_shared") = 0,
          "Occupancy: resident blocks per multiprocessor for this block size.")
      .def_property_readonly(
          "num_params",
          [](function &self) -> py::object {
            const param_layout *p = self.parameters();
            return p ? py::object(py::int_(p->size())) : py::object(py::none());
          },
          "Number of kernel parameters, or None if the launcher cannot tell.")
      .def_property_readonly(
          "param_layout",
          [](function &self) -> py::object {
            const param_layout *p = self.parameters();
            if (p == nullptr)
              return py::none();
            py::list out;
            for (const auto &[offset, size] : *p)
              out.append(py::make_tuple(offset, size));
            return out;
          },
          "[(offset, size)] of each kernel parameter, or None if the launcher cannot tell.")
      .def_property_readonly("kernel_name", &function::name)
      .def_property_readonly(
          "handle",
          [](const function &self) { return reinterpret_cast<std::uintptr_t>(self.handle()); },
          "The CUfunction as an int.")
      .def_property_readonly("module", &function::get_module)
      .def(
          "_set_block_shape",
          [](function &self, unsigned x, unsigned y, unsigned z) {
            self.last_block = dim3{x, y, z};
          },
          py::arg("x"), py::arg("y") = 1, py::arg("z") = 1)
      .def(
          "_launch_kernel",
          [](function &self, py::handle grid, py::handle block, py::buffer args, py::handle shared,
             py::handle stream) {
            launch_config config;
            config.grid = parse_dims(grid.ptr(), "grid");
            config.block = parse_dims(block.ptr(), "block");
            config.shared_bytes = shared_bytes(shared.ptr(), "shared");
            config.stream = to_stream(stream);
            py::buffer_info info = args.request();
            self.launch(config, info.ptr, static_cast<std::size_t>(info.size * info.itemsize));
          },
          py::arg("grid"), py::arg("block"), py::arg("arg_buf"), py::arg("shared") = 0,
          py::arg("stream") = py::none(), "PyCUDA's internal launch with a packed buffer.")
      .def_property(
          "texrefs", [](const function &self) { return self.texrefs; },
          [](function &self, py::object value) { self.texrefs = std::move(value); },
          "Always empty: texture references were removed in CUDA 12.")
      .def("__repr__",
           [](const function &self) { return "<cuplug Function '" + self.name() + "'>"; });
  add_attribute_aliases(cls, m);
}

} // namespace cuplug::python
