// Builds the numpy scalar table once, checking each type's in-place value against tobytes().
#include "launch/numpy_scalars.hpp"

#include <cstring>
#include <string>

namespace cuplug::python {

[[gnu::noinline]] const numpy_types &load_numpy() {
  auto *t = new numpy_types;
  py::module_ np = py::module_::import("numpy");
  t->ndarray = reinterpret_cast<PyTypeObject *>(py::object(np.attr("ndarray")).release().ptr());
  t->void_scalar = reinterpret_cast<PyTypeObject *>(py::object(np.attr("void")).release().ptr());
  t->generic = reinterpret_cast<PyTypeObject *>(py::object(np.attr("generic")).release().ptr());
  for (const char *c = "?bBhHiIlLqQefdFD"; *c != '\0'; ++c) {
    py::object dtype = np.attr("dtype")(std::string(1, *c));
    py::object sample = np.attr("array")(3, dtype);
    py::object scalar = sample[py::tuple()];
    std::string bytes = sample.attr("tobytes")().cast<py::bytes>();
    const auto *raw = reinterpret_cast<const char *>(scalar.ptr()) + scalar_value_offset;
    if (bytes.size() > 16 || std::memcmp(raw, bytes.data(), bytes.size()) != 0)
      continue;
    numpy_scalar &s = t->scalars[t->count++];
    s.type = Py_TYPE(scalar.ptr());
    Py_INCREF(s.type);
    s.code = *c;
    s.kind = dtype.attr("kind").cast<std::string>()[0];
    s.size = static_cast<std::uint8_t>(bytes.size());
    s.align = static_cast<std::uint8_t>(dtype.attr("alignment").cast<int>());
    t->index(s);
  }
  numpy_cache = t;
  return *t;
}

} // namespace cuplug::python
