// Prepared calls: parsing PyCUDA's struct-format strings and packing arguments by them.
#include "launch/arg_packer.hpp"
#include "launch/arg_values.hpp"
#include "launch/numpy_scalars.hpp"
#include "memory/memory.hpp"

#include <cstring>
#include <limits>
#include <string>

namespace cuplug::python {

arg_layout parse_arg_format(const std::string &format) {
  arg_layout layout;
  layout.format = format;
  std::size_t offset = 0;
  std::size_t i = 0;
  if (!format.empty() && format[0] == '@')
    ++i;
  while (i < format.size()) {
    const char ch = format[i];
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      ++i;
      continue;
    }
    std::size_t count = 1;
    bool counted = false;
    if (ch >= '0' && ch <= '9') {
      count = 0;
      while (i < format.size() && format[i] >= '0' && format[i] <= '9') {
        count = count * 10 + static_cast<std::size_t>(format[i] - '0');
        if (count > (1u << 20))
          throw py::value_error("kernel argument format '" + format + "': repeat count too large");
        ++i;
      }
      counted = true;
      if (i == format.size())
        throw py::value_error("kernel argument format '" + format +
                              "': repeat count given without format code");
    }
    const char code = format[i++];
    if (code == 's') {
      layout.slots.push_back({'s', static_cast<std::uint32_t>(offset),
                              static_cast<std::uint32_t>(counted ? count : 1)});
      offset += counted ? count : 1;
      continue;
    }
    const code_info *info = find_code(code);
    if (info == nullptr) {
      std::string why =
          "bad char '" + std::string(1, code) + "' in kernel argument format '" + format + "'";
      if (code == '<' || code == '>' || code == '=' || code == '!')
        why += ": kernel parameters use native byte order and alignment only";
      throw py::value_error(why + "; accepted: b B h H i I l L q Q n N e f d F D P ? c x and "
                                  "'<n>s'");
    }
    offset = align_up(offset, info->align);
    for (std::size_t k = 0; k < count; ++k) {
      if (code != 'x')
        layout.slots.push_back({code, static_cast<std::uint32_t>(offset), info->size});
      offset += info->size;
    }
  }
  layout.bytes = offset;
  return layout;
}

void pack_prepared(const arg_layout &layout, PyObject *const *args, std::size_t nargs,
                   arg_buffer &out, const std::string &kernel, const char *routine) {
  if (nargs != layout.slots.size())
    throw py::type_error(std::string(routine) + ": kernel '" + kernel +
                         "' was prepared with format '" + layout.format + "' (" +
                         std::to_string(layout.slots.size()) + " arguments), got " +
                         std::to_string(nargs) + " arguments");
  out.assign_zero(layout.bytes);
  unsigned char *base = out.data();
  for (std::size_t i = 0; i < nargs; ++i) {
    const arg_slot &slot = layout.slots[i];
    PyObject *v = args[i];
    unsigned char *dst = base + slot.offset;
    // The common cases inline: a pointer from an int or a DeviceAllocation, an int from a
    // Python int, an exact numpy scalar of the slot's own code.
    if (slot.code == 'P') {
      if (device_allocation *alloc = as_device_allocation(v)) {
        const CUdeviceptr p = allocation_pointer(*alloc); // freed / destroyed context: refused
        std::memcpy(dst, &p, sizeof p);
        continue;
      }
    } else if (slot.code == 'i' && PyLong_CheckExact(v)) {
      int overflow = 0;
      const long x = PyLong_AsLongAndOverflow(v, &overflow);
      if (overflow == 0 && x >= std::numeric_limits<int>::min() &&
          x <= std::numeric_limits<int>::max()) {
        const int y = static_cast<int>(x);
        std::memcpy(dst, &y, sizeof y);
        continue;
      }
    } else if (const numpy_scalar *s = find_scalar(Py_TYPE(v));
               s != nullptr && s->code == slot.code) {
      std::memcpy(dst, scalar_bytes(v), s->size);
      continue;
    }
    pack_value(slot, v, dst, arg_context{routine, kernel, i, slot.code, slot.size});
  }
}

std::string numpy_format_code(py::handle obj) {
  py::module_ np = py::module_::import("numpy");
  py::object dtype;
  if (PyType_Check(obj.ptr()) &&
      PyObject_IsSubclass(obj.ptr(), reinterpret_cast<PyObject *>(numpy().generic)) == 1)
    dtype = np.attr("dtype")(obj);
  else if (py::isinstance(obj, np.attr("dtype")))
    dtype = py::reinterpret_borrow<py::object>(obj);
  else
    return {};
  const std::string c = dtype.attr("char").cast<std::string>();
  if (c == "V")
    return std::to_string(dtype.attr("itemsize").cast<std::size_t>()) + "s";
  return c;
}

} // namespace cuplug::python
