// PyCUDA's exception classes (spec §1.1) and the translation of the core's C++ errors into them.
#include "bindings.hpp"
#include "driver/context.hpp"
#include "support/convert.hpp"

#include <pybind11/eval.h>

namespace cuplug::python {
namespace {

// Created once at import and never freed: translators run until the interpreter is gone.
struct exception_types {
  PyObject *error, *logic, *launch, *memory, *runtime, *compile, *plugin, *not_supported, *config;
};
exception_types types{};

PyObject *new_exception(py::module_ &m, const char *name, PyObject *bases, const char *doc) {
  std::string qualified = std::string("cuplug._core.") + name;
  PyObject *type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (type == nullptr)
    throw py::error_already_set();
  m.add_object(name, py::reinterpret_borrow<py::object>(type));
  return type;
}

// CompileError keeps PyCUDA's constructor and __str__ (a Python class in PyCUDA's driver.py);
// command_line may be a list of arguments (nvcc) or one string (NVRTC options).
constexpr const char *compile_error_source = R"PY(
class CompileError(Error):
    """A compiler rejected the source. msg, command_line, stdout, stderr as in PyCUDA."""

    def __init__(self, msg, command_line=None, stdout=None, stderr=None):
        super().__init__(msg)
        self.msg = msg
        self.command_line = command_line
        self.stdout = stdout
        self.stderr = stderr

    def __str__(self):
        result = str(self.msg)
        if self.command_line:
            command = self.command_line
            if not isinstance(command, str):
                command = " ".join(str(part) for part in command)
            result += "\n[command: %s]" % command
        if self.stdout:
            result += "\n[stdout:\n%s]" % self.stdout
        if self.stderr:
            result += "\n[stderr:\n%s]" % self.stderr
        return result
)PY";

PyObject *class_for(error_class c) {
  switch (c) {
  case error_class::logic:
    return types.logic;
  case error_class::memory:
    return types.memory;
  case error_class::launch:
    return types.launch;
  case error_class::runtime:
    return types.runtime;
  case error_class::unknown:
    break;
  }
  return types.error;
}

// Raises `type(e.what())` carrying the failed routine and its CUresult.
void raise_cuda_error(PyObject *type, const cuda_error &e) {
  py::object exc = py::reinterpret_borrow<py::object>(type)(e.what());
  exc.attr("code") = e.code();
  exc.attr("routine") = e.routine();
  if (auto *oom = dynamic_cast<const out_of_memory *>(&e))
    exc.attr("requested") = oom->requested();
  PyErr_SetObject(type, exc.ptr());
}

void translate(std::exception_ptr p) {
  try {
    std::rethrow_exception(p);
  } catch (const out_of_memory &e) {
    raise_cuda_error(types.memory, e);
  } catch (const cuda_error &e) {
    raise_cuda_error(class_for(e.classification()), e);
  } catch (const compile_error &e) {
    py::object exc = py::reinterpret_borrow<py::object>(types.compile)(
        e.what(), py::arg("command_line") = e.command(), py::arg("stderr") = e.log());
    PyErr_SetObject(types.compile, exc.ptr());
  } catch (const plugin_error &e) {
    PyErr_SetString(types.plugin, e.what());
  } catch (const not_supported &e) {
    PyErr_SetString(types.not_supported, e.what());
  } catch (const config_error &e) {
    PyErr_SetString(types.config, e.what());
  } catch (const error &e) {
    PyErr_SetString(types.error, e.what());
  }
}

} // namespace

void init_errors(py::module_ &m) {
  types.error = new_exception(m, "Error", PyExc_Exception,
                              "Base of every cuplug error. Errors from a driver call carry "
                              ".code (the CUresult) and .routine (the call that failed).");
  // Errors that did not come from a driver call have no code or routine.
  PyObject_SetAttrString(types.error, "code", Py_None);
  PyObject_SetAttrString(types.error, "routine", Py_None);

  // PyCUDA derives these from its Error only. Here they also derive from the builtin that fits,
  // as CuPy's and PyTorch's errors do, so that `except RuntimeError` / `except MemoryError`
  // catch them; `except cuplug.driver.RuntimeError` still catches only cuplug's own. LogicError
  // (bad value, context or handle, or no driver call made right) has no builtin that fits.
  auto with_builtin = [](PyObject *builtin) {
    return py::make_tuple(py::handle(types.error), py::handle(builtin));
  };
  types.logic = new_exception(m, "LogicError", types.error,
                              "Invalid use: bad value, context or handle; not initialized.");
  types.launch = new_exception(m, "LaunchError", with_builtin(PyExc_RuntimeError).ptr(),
                               "A kernel launch failed, ran out of resources or timed out. "
                               "Often reported by the call after the launch. Also a builtin "
                               "RuntimeError.");
  types.memory = new_exception(m, "MemoryError", with_builtin(PyExc_MemoryError).ptr(),
                               "Out of device (or pinned host) memory. Also a builtin "
                               "MemoryError, so `except MemoryError` catches it.");
  types.runtime = new_exception(m, "RuntimeError", with_builtin(PyExc_RuntimeError).ptr(),
                                "No device or driver, no binary for this GPU, file not found, not "
                                "ready, ECC error. Also a builtin RuntimeError, so `except "
                                "RuntimeError` catches it.");

  py::dict scope;
  scope["__name__"] = "cuplug._core";
  scope["Error"] = m.attr("Error");
  py::exec(compile_error_source, scope);
  m.attr("CompileError") = scope["CompileError"];
  types.compile = scope["CompileError"].ptr();
  Py_INCREF(types.compile);

  types.plugin = new_exception(m, "PluginError", types.error,
                               "A backend plugin could not be found, loaded, trusted or created.");
  types.not_supported = new_exception(m, "NotSupportedError", types.error,
                                      "The selected backend (or this CUDA) does not provide "
                                      "this operation.");
  py::tuple config_bases = py::make_tuple(m.attr("Error"), py::handle(PyExc_ValueError));
  types.config = new_exception(m, "ConfigError", config_bases.ptr(),
                               "Unknown backend name, bad option value or unreadable "
                               "configuration.");

  py::register_exception_translator(&translate);
}

} // namespace cuplug::python
