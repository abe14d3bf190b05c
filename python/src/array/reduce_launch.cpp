// The one-launch case of cuplug's axis reductions (cuplug._kernels.axis_reduction.reduce): the
// plan (kernel, grid, the parameter block's tail) comes from Python's per-context plan cache; the
// result array, the two pointers and the launch are done here, as the elementwise engine does
// them, instead of in Python (a GPUArray constructed from Python, a struct pack and
// prepared_async_call's argument parsing cost about 2 us of a 6.6 us small sum on an H200).
#include "array/array_args.hpp"
#include "array/array_object.hpp"
#include "array/type_codes.hpp"
#include "launch/launch_args.hpp"
#include "support/convert.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace cuplug::python::array {
namespace {

array_object *array_arg(py::handle obj, const char *what) {
  if (!is_array(obj.ptr()))
    throw py::type_error(std::string("reduce_launch: ") + what + " must be a GPUArray, not " +
                         Py_TYPE(obj.ptr())->tp_name);
  array_object *a = as_array(obj.ptr());
  require_ready(a);
  return a;
}

// reduce_launch(fn, grid, block, stream, a, out, shape, dtype, strides, allocator, src_off,
// dst_off, tail): launches `fn` once over (grid, 1, 1) x (block, 1, 1) with the parameter block
// [out + dst_off, a + src_off, *tail]; out=None makes the result (the registered result class,
// `shape`, `dtype`, `strides` in bytes) from `allocator`, else from a's allocator, ordered on
// `stream`. Returns the result. Freed memory and arrays of a destroyed context are refused before
// anything is allocated or launched.
py::object reduce_launch(py::handle fn, unsigned grid, unsigned block, py::handle stream,
                         py::handle a_obj, py::handle out_obj, py::handle shape, py::handle dtype,
                         py::handle strides, py::handle allocator, long long src_off,
                         long long dst_off, py::bytes tail) {
  // The caller checked the devices (_check_same_device); data_ptr refuses freed memory and a
  // destroyed context.
  array_object *a = array_arg(a_obj, "a");
  array_object *out = out_obj.is_none() ? nullptr : array_arg(out_obj, "out");
  const CUdeviceptr src = data_ptr(a);
  function &f = self_function(fn.ptr());

  char *tail_bytes = nullptr;
  Py_ssize_t tail_size = 0;
  if (PyBytes_AsStringAndSize(tail.ptr(), &tail_bytes, &tail_size) != 0)
    throw py::error_already_set();
  // The kernel takes one struct by value; 8-byte aligned as its pointer members need.
  alignas(16) unsigned char params[1024];
  if (static_cast<std::size_t>(tail_size) + 16 > sizeof(params))
    throw py::value_error("reduce_launch: parameter block of " + std::to_string(tail_size + 16) +
                          " bytes is larger than " + std::to_string(sizeof(params)));

  const CUstream s = stream.is_none() ? nullptr : to_stream(stream);
  py::object result;
  if (out == nullptr) {
    const std::vector<Py_ssize_t> dims = parse_shape(shape);
    const std::vector<Py_ssize_t> steps = parse_strides(strides, dims.size());
    const int code = code_of_dtype(dtype);
    const Py_ssize_t itemsize = code != t_other
                                    ? static_cast<Py_ssize_t>(itemsize_of(code))
                                    : checked_itemsize(py::reinterpret_borrow<py::object>(dtype));
    result = new_array(default_result_type(), static_cast<int>(dims.size()), dims.data(),
                       steps.data(), dtype, code, itemsize);
    out = as_array(result.ptr());
    PyObject *alloc = !allocator.is_none() ? allocator.ptr() : a->allocator;
    allocate_memory(out, alloc != nullptr ? py::handle(alloc) : py::none(), s, stream);
    if (alloc != nullptr) {
      Py_INCREF(alloc);
      out->allocator = alloc;
    }
  } else {
    result = py::reinterpret_borrow<py::object>(out_obj);
  }
  const std::uint64_t ptrs[2] = {static_cast<std::uint64_t>(data_ptr(out) + dst_off),
                                 static_cast<std::uint64_t>(src + src_off)};
  std::memcpy(params, ptrs, sizeof(ptrs));
  std::memcpy(params + sizeof(ptrs), tail_bytes, static_cast<std::size_t>(tail_size));

  launch_config config;
  config.grid = dim3{grid, 1, 1};
  config.block = dim3{block, 1, 1};
  config.stream = s;
  f.launch(config, params, sizeof(ptrs) + static_cast<std::size_t>(tail_size));
  return result;
}

} // namespace

void init_reduce_launch(py::module_ &m) {
  m.def("reduce_launch", &reduce_launch, py::arg("fn"), py::arg("grid"), py::arg("block"),
        py::arg("stream"), py::arg("a"), py::arg("out"), py::arg("shape"), py::arg("dtype"),
        py::arg("strides"), py::arg("allocator"), py::arg("src_off"), py::arg("dst_off"),
        py::arg("tail"),
        "The one-launch case of an axis reduction (cuplug._kernels.axis_reduction): makes the "
        "result unless `out` is given, then launches `fn` with [out + dst_off, a + src_off, "
        "*tail] as its parameter block. Returns the result.");
}

} // namespace cuplug::python::array
