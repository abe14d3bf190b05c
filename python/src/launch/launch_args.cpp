// The launch arguments' error paths: bad dims, unknown keywords, the deprecated signatures.
#include "launch/launch_args.hpp"

#include <string>

namespace cuplug::python {

[[noreturn]] void bad_dims(PyObject *obj, const char *what) {
  throw py::value_error(std::string(what) + " must be a tuple of 1 to 3 ints in [0, 2**32), got " +
                        std::string(py::repr(obj)));
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

dim3 remembered_block(const function &f) {
  if (!f.last_block)
    throw py::value_error("must specify block size: kernel '" + f.name() +
                          "' has not been launched with a block yet");
  return *f.last_block;
}

} // namespace cuplug::python
