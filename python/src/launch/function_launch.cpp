// Function's C++ methods and its launch entry points: prepared_call / prepared_async_call and
// __call__ as METH_FASTCALL methods, and the vectorcall slot that makes f(...) one of them.
#include "launch/arg_packer.hpp"
#include "launch/function.hpp"
#include "launch/launch_args.hpp"
#include "launch/launch_entries.hpp"
#include "launch/launch_options.hpp"

#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace cuplug::python {

const param_layout *function::parameters() {
  if (!params_asked_) {
    const CUfunction f = live_handle("cuFuncGetParamInfo");
    params_asked_ = true;
    try {
      scoped_activation_if_none active(module_->get_context());
      if (auto layout = launcher_->parameter_layout(f)) {
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

void function::pack_prepared_args(PyObject *const *args, std::size_t nargs, arg_buffer &buffer,
                                  const char *routine) const {
  if (!prepared_)
    throw py::attribute_error(std::string(routine) + ": kernel '" + name_ +
                              "' has no arg_format; call prepare(arg_types) first");
  pack_prepared(*prepared_, args, nargs, buffer, name_, routine);
}

namespace {

// ---- prepared_call / prepared_async_call --------------------------------------------------------

// Both: (grid, block, [stream,] *args, shared_size=0). `with_stream` selects the async form.
PyObject *prepared_entry(PyObject *self, PyObject *const *args, Py_ssize_t nargsf,
                         PyObject *kwnames, bool with_stream) noexcept {
  const char *routine = with_stream ? "prepared_async_call" : "prepared_call";
  try {
    function &f = self_function(self);
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    launch_config config;
    launch_attributes attrs;
    if (kwnames != nullptr) {
      const interned_names &n = names();
      PyObject *shared = nullptr;
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i), *value = args[nargs + i];
        if (name_is(name, n.shared_size, "shared_size"))
          shared = value;
        else if (name_is(name, n.cluster, "cluster"))
          set_cluster(value, attrs);
        else if (name_is(name, n.cooperative, "cooperative"))
          set_cooperative(value, attrs);
        else if (name_is(name, n.config, "config")) {
          const launch_options &o = as_launch_options(value);
          attrs = o.attrs;
          if (o.has_shared)
            config.shared_bytes = o.shared_bytes;
        } else
          throw py::type_error(std::string(routine) +
                               ": unknown keyword arguments: " + joined_names(kwnames));
      }
      if (shared != nullptr)
        config.shared_bytes = shared_bytes(shared, "shared_size");
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
                      routine, attrs);
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
    // Before any argument is looked at: a detached context destroyed the function. A thread
    // without a context runs the whole call (In/Out allocations included) in the function's.
    f.get_module()->check_alive("Function.__call__");
    scoped_activation_if_none active(f.get_module()->get_context());
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    const interned_names &n = names();
    PyObject *block = nullptr, *grid = nullptr, *stream = Py_None, *shared = nullptr,
             *texrefs = nullptr, *time_kernel = nullptr, *cluster = nullptr, *cooperative = nullptr,
             *config_obj = nullptr;
    if (kwnames != nullptr) {
      // Keyword names are interned: compare pointers first, text only for the odd caller.
      constexpr int nknown = 9;
      PyObject *const known[nknown] = {n.block,       n.grid,    n.stream,      n.shared, n.texrefs,
                                       n.time_kernel, n.cluster, n.cooperative, n.config};
      PyObject **slots[nknown] = {&block,       &grid,    &stream,      &shared,    &texrefs,
                                  &time_kernel, &cluster, &cooperative, &config_obj};
      std::string unknown;
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        int which = -1;
        for (int k = 0; k < nknown && which < 0; ++k)
          if (name == known[k])
            which = k;
        for (int k = 0; k < nknown && which < 0; ++k)
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
    launch_config config;
    launch_attributes attrs;
    const launch_options *opts = config_obj ? &as_launch_options(config_obj) : nullptr;
    if (opts != nullptr) { // the call's own keywords override it
      if (opts->has_grid)
        config.grid = opts->grid;
      if (opts->has_block)
        config.block = opts->block;
      config.shared_bytes = opts->shared_bytes;
      attrs = opts->attrs;
    }
    const bool has_block = block != nullptr && block != Py_None;
    if (!has_block && !(opts != nullptr && opts->has_block))
      throw py::value_error("must specify block size");
    if (texrefs != nullptr && truthy(texrefs))
      throw not_supported("Function.__call__: texrefs: texture references were removed in CUDA "
                          "12; use texture objects passed as kernel arguments");
    if (has_block)
      config.block = memo_dims(block, f.block_memo, "block");
    if (grid != nullptr)
      config.grid = memo_dims(grid, f.grid_memo, "grid");
    if (shared != nullptr)
      config.shared_bytes = shared_bytes(shared, "shared");
    if (cluster != nullptr)
      set_cluster(cluster, attrs);
    if (cooperative != nullptr)
      set_cooperative(cooperative, attrs);
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
    pack_call(args, static_cast<std::size_t>(nargs), f.parameters(), buffer, handlers, f.name(),
              py::handle(stream), f.get_module()->get_context()->handle());

    if (handlers.empty() && !timed) { // the common case
      f.launch(config, attrs, buffer.data(), buffer.size());
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
    f.launch(config, attrs, buffer.data(), buffer.size());
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

void add_launch_methods(py::handle function_class) {
  add_method(function_class, call_def);
  add_method(function_class, prepared_call_def);
  add_method(function_class, prepared_async_call_def);
  // after __call__ is set: setting it resets tp_call
  enable_vectorcall(reinterpret_cast<PyTypeObject *>(function_class.ptr()));
}

} // namespace cuplug::python
