// The one-launch case of cuplug's axis reductions (cuplug._kernels.axis_reduction.reduce): the
// plan (kernel, grid, the parameter block's tail) comes from Python's per-context plan cache; the
// result array, the two pointers and the launch are done here, as the elementwise engine does
// them, instead of in Python (a GPUArray constructed from Python, a struct pack and
// prepared_async_call's argument parsing cost about 2 us of a 6.6 us small sum on an H200).
#include "array/array_args.hpp"
#include "array/array_object.hpp"
#include "array/type_codes.hpp"
#include "driver/context.hpp"
#include "launch/launch_args.hpp"
#include "support/convert.hpp"

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>
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

// ---- the plans of reductions called with no arguments but the array (x.sum(), x.max()) -------
// The same plans as Python's per-context cache (cuplug._kernels.axis_reduction), for the call
// that needs nothing else: looked up here by (context, kind, type code, shape, strides, address
// mod 16), so such a call goes from the method to the launch without Python's key building,
// cache lookup and device check (about 0.5 us of a 2.1 us small sum's host time). Python
// registers a plan after making it; a context's plans go just before it is destroyed.

struct fast_key {
  CUcontext ctx = nullptr;
  std::string kind;
  int code = 0;
  unsigned align = 0;
  std::vector<Py_ssize_t> dims; // shape, then strides
  bool operator==(const fast_key &o) const noexcept {
    return ctx == o.ctx && code == o.code && align == o.align && kind == o.kind && dims == o.dims;
  }
};

struct fast_key_hash {
  std::size_t operator()(const fast_key &k) const noexcept {
    std::size_t h = std::hash<const void *>()(k.ctx) ^ (std::hash<std::string>()(k.kind) << 1);
    h ^= static_cast<std::size_t>(k.code) * 0x9e3779b97f4a7c15ull + (k.align << 7);
    for (Py_ssize_t d : k.dims)
      h = (h ^ static_cast<std::size_t>(d)) * 1099511628211ull;
    return h;
  }
};

struct fast_plan {
  py::object fn;
  unsigned grid = 0, block = 0;
  long long src_off = 0, dst_off = 0;
  py::bytes tail;
  py::object shape, dtype, strides; // the result's
};

using fast_map = std::unordered_map<fast_key, fast_plan, fast_key_hash>;

fast_map &fast_plans() {
  static auto *plans = new fast_map(); // leaked: its Python objects must not outlive Python
  return *plans;
}

// A bound over all contexts (Python's plan cache has its own, PLAN_CACHE_SIZE per context): a
// program that reduces ever new shapes starts again rather than growing without end.
constexpr std::size_t max_fast_plans = 512;

// The key of `kind` over `a`, when `a` may take the fast path: a computable, initialised array
// of the current context whose memory is live. False otherwise (Python then decides, and raises
// what it raises).
bool fast_key_of(py::handle kind, py::handle a_obj, fast_key &key) {
  if (!is_array(a_obj.ptr()) || !PyUnicode_Check(kind.ptr()))
    return false;
  const array_object *a = as_array(a_obj.ptr());
  if (a->dtype == nullptr || a->code == t_other || a->ctx == nullptr)
    return false;
  if (a->memory ? a->memory->freed() : (a->ptr == 0 && a->size != 0))
    return false;
  if (a->ctx != current_context_handle())
    return false;
  Py_ssize_t n = 0;
  const char *text = PyUnicode_AsUTF8AndSize(kind.ptr(), &n);
  if (text == nullptr) {
    PyErr_Clear();
    return false;
  }
  key.ctx = a->ctx;
  key.kind.assign(text, static_cast<std::size_t>(n));
  key.code = a->code;
  key.align = static_cast<unsigned>(a->ptr & 15);
  key.dims.assign(a->shape, a->shape + a->ndim);
  key.dims.insert(key.dims.end(), a->strides, a->strides + a->ndim);
  return true;
}

// reduce_fast(kind, a, stream): the result of `kind` over all of `a` through a registered plan,
// or None when there is none (or `a` is not for the fast path).
py::object reduce_fast(py::handle kind, py::handle a_obj, py::handle stream) {
  fast_key key;
  if (!fast_key_of(kind, a_obj, key))
    return py::none();
  fast_map &plans = fast_plans();
  auto it = plans.find(key);
  if (it == plans.end())
    return py::none();
  // A copy (references taken): the launch may let the GIL go, and another thread may then
  // clear the map.
  const fast_plan p = it->second;
  return reduce_launch(p.fn, p.grid, p.block, stream, a_obj, py::none(), p.shape, p.dtype,
                       p.strides, py::none(), p.src_off, p.dst_off, p.tail);
}

void reduce_fast_register(py::handle kind, py::handle a_obj, py::object fn, unsigned grid,
                          unsigned block, long long src_off, long long dst_off, py::bytes tail,
                          py::object shape, py::object dtype, py::object strides) {
  fast_key key;
  if (!fast_key_of(kind, a_obj, key))
    return;
  fast_map &plans = fast_plans();
  if (plans.size() >= max_fast_plans) {
    fast_map taken = std::move(plans); // emptied first: see drop_fast_plans
    plans.clear();
  }
  plans[std::move(key)] = fast_plan{std::move(fn),
                                    grid,
                                    block,
                                    src_off,
                                    dst_off,
                                    std::move(tail),
                                    std::move(shape),
                                    std::move(dtype),
                                    std::move(strides)};
}

// A context's plans go just before it is destroyed (a context-destroy listener: the GIL is held,
// context.hpp). The entries leave the map before their objects go: a Function holding the last
// reference to its context destroys it, and this listener then walks the same map.
void drop_fast_plans(CUcontext handle, unsigned long long) noexcept {
  try {
    fast_map &plans = fast_plans();
    std::vector<fast_plan> taken;
    for (auto it = plans.begin(); it != plans.end();) {
      if (it->first.ctx == handle) {
        taken.push_back(std::move(it->second));
        it = plans.erase(it);
      } else {
        ++it;
      }
    }
  } catch (...) { // noexcept: a context's destruction goes on without the plans dropped
  }
}

} // namespace

void clear_reduce_fast_plans() noexcept { // from Python: the GIL is held
  fast_map taken = std::move(fast_plans());
  fast_plans().clear();
}

void init_reduce_launch(py::module_ &m) {
  m.def("reduce_launch", &reduce_launch, py::arg("fn"), py::arg("grid"), py::arg("block"),
        py::arg("stream"), py::arg("a"), py::arg("out"), py::arg("shape"), py::arg("dtype"),
        py::arg("strides"), py::arg("allocator"), py::arg("src_off"), py::arg("dst_off"),
        py::arg("tail"),
        "The one-launch case of an axis reduction (cuplug._kernels.axis_reduction): makes the "
        "result unless `out` is given, then launches `fn` with [out + dst_off, a + src_off, "
        "*tail] as its parameter block. Returns the result.");
  m.def("reduce_fast", &reduce_fast, py::arg("kind"), py::arg("a"), py::arg("stream"),
        "`kind` over all of `a` through the plan reduce_fast_register gave for it (the call "
        "with no arguments but the array), or None when there is none.");
  m.def("reduce_fast_register", &reduce_fast_register, py::arg("kind"), py::arg("a"), py::arg("fn"),
        py::arg("grid"), py::arg("block"), py::arg("src_off"), py::arg("dst_off"), py::arg("tail"),
        py::arg("shape"), py::arg("dtype"), py::arg("strides"),
        "Keeps the one-launch plan of `kind` over all of arrays like `a` (same context, type, "
        "shape, strides and address mod 16) for reduce_fast.");
  m.def(
      "reduce_fast_plans", [] { return fast_plans().size(); },
      "How many plans reduce_fast holds (they go with their contexts).");
  add_context_destroy_listener(&drop_fast_plans);
}

} // namespace cuplug::python::array
