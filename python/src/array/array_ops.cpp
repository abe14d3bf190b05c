// apply(): operand classification, the dispatch cache and result allocation (the number and
// comparison slots of ArrayBase that call it: array_slots.cpp).
#include "array/array_ops.hpp"

#include "array/array_memory.hpp"
#include "array/array_object.hpp"
#include "array/elementwise_core.hpp"
#include "array/type_codes.hpp"
#include "hooks.hpp"
#include "support/convert.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

namespace cuplug::python::array {
namespace {

enum operand_kind : int {
  k_array = 0,
  k_scalar = 1,
  k_bool = 2,
  k_int = 3,
  k_float = 4,
  k_complex = 5,
  k_unknown = 7
};

constexpr Py_ssize_t max_operands = 3;
constexpr Py_ssize_t max_outputs = 2; // frexp, modf

struct resolved_op {
  py::object core_object; // keeps `core` alive
  elementwise_core *core = nullptr;
  Py_ssize_t nout = 1; // the kernel's first nout arguments are the outputs
  py::object out_dtype[max_outputs];
  int out_code[max_outputs] = {t_other, t_other};
  Py_ssize_t out_itemsize[max_outputs] = {0, 0};
  // NumPy refuses negative integer powers; a kernel cannot raise, so scalar exponents are
  // checked here (array exponents give 0, or +-1 for bases +-1).
  bool check_exponent = false;
};

// The resolver and the fallback are the dispatch_resolver / dispatch_fallback hooks (hooks.hpp:
// cuplug._array.math._resolve and _fallback); legacy_promotion is a copy of that hook's value.
struct dispatch_state {
  PyTypeObject *np_generic = nullptr;
  bool legacy_promotion = false;
  std::unordered_map<PyObject *, int> op_ids;
  std::vector<py::object> op_names;
  std::unordered_map<std::uint64_t, resolved_op> cache;
};

dispatch_state &state() {
  static dispatch_state *s = new dispatch_state(); // leaked: lives until exit
  return *s;
}

int op_id(PyObject *name) {
  dispatch_state &st = state();
  auto it = st.op_ids.find(name);
  if (it != st.op_ids.end())
    return it->second;
  if (!PyUnicode_Check(name))
    throw py::type_error("apply: the operation name must be a str");
  // Names are looked up by identity; equal strings from elsewhere get the same id (and are
  // kept alive as keys).
  for (std::size_t id = 0; id < st.op_names.size(); ++id) {
    if (PyUnicode_Compare(st.op_names[id].ptr(), name) == 0) {
      Py_INCREF(name);
      st.op_ids.emplace(name, static_cast<int>(id));
      return static_cast<int>(id);
    }
  }
  const int id = static_cast<int>(st.op_names.size());
  st.op_names.push_back(py::reinterpret_borrow<py::object>(name));
  st.op_ids.emplace(name, id);
  return id;
}

struct classified {
  int kind = k_unknown;
  int code = 0;
};

classified classify(PyObject *obj) {
  if (is_array(obj)) {
    const int c = as_array(obj)->code;
    return {k_array, c < 0 ? 15 : c};
  }
  PyTypeObject *t = Py_TYPE(obj);
  if (t == &PyFloat_Type)
    return {k_float, 0};
  if (t == &PyBool_Type)
    return {k_bool, 0};
  if (t == &PyLong_Type)
    return {k_int, 0};
  if (t == &PyComplex_Type)
    return {k_complex, 0};
  dispatch_state &st = state();
  if (st.np_generic != nullptr && PyObject_TypeCheck(obj, st.np_generic)) {
    py::object dt = py::handle(obj).attr("dtype");
    const int c = code_of_dtype(dt);
    return {k_scalar, c < 0 ? 15 : c};
  }
  // Subclasses of the Python number types (IntEnum, ...) are weak scalars of their base.
  if (PyBool_Check(obj))
    return {k_bool, 0};
  if (PyLong_Check(obj))
    return {k_int, 0};
  if (PyFloat_Check(obj))
    return {k_float, 0};
  if (PyComplex_Check(obj))
    return {k_complex, 0};
  return {};
}

py::object descriptor(PyObject *obj, const classified &c) {
  switch (c.kind) {
  case k_array:
    return py::reinterpret_borrow<py::object>(as_array(obj)->dtype);
  case k_scalar:
    return py::make_tuple("scalar", py::handle(obj).attr("dtype"));
  case k_bool:
    return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject *>(&PyBool_Type));
  case k_int:
    return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject *>(&PyLong_Type));
  case k_float:
    return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject *>(&PyFloat_Type));
  default:
    return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject *>(&PyComplex_Type));
  }
}

std::string shape_text(const std::vector<Py_ssize_t> &shape) {
  std::string s = "(";
  for (std::size_t k = 0; k < shape.size(); ++k)
    s += std::to_string(shape[k]) + (shape.size() == 1 ? "," : k + 1 < shape.size() ? ", " : "");
  return s + ")";
}

std::string describe(array_object *a) {
  return shape_text(std::vector<Py_ssize_t>(a->shape, a->shape + a->ndim)) + " " +
         py::str(py::handle(a->dtype)).cast<std::string>();
}

// NumPy broadcasting of the array operands, with NumPy's message (plus dtypes) on failure.
std::vector<Py_ssize_t> broadcast_shape(PyObject *const *operands, Py_ssize_t n,
                                        const classified *cls, const std::string &name) {
  std::vector<Py_ssize_t> shape;
  for (Py_ssize_t k = 0; k < n; ++k) {
    if (cls[k].kind != k_array)
      continue;
    array_object *a = as_array(operands[k]);
    if (a->ndim > static_cast<int>(shape.size()))
      shape.insert(shape.begin(), a->ndim - shape.size(), 1);
    for (int d = 0; d < a->ndim; ++d) {
      Py_ssize_t &s = shape[shape.size() - a->ndim + d];
      const Py_ssize_t e = a->shape[d];
      if (s == e || e == 1)
        continue;
      if (s == 1) {
        s = e;
        continue;
      }
      std::string shapes;
      for (Py_ssize_t j = 0; j < n; ++j)
        if (cls[j].kind == k_array)
          shapes += (shapes.empty() ? "" : " and ") + describe(as_array(operands[j]));
      throw py::value_error(name + ": operands could not be broadcast together with shapes " +
                            shapes);
    }
  }
  return shape;
}

// The result's strides: dense, in the memory order of the first array operand of the same
// shape (NumPy's order='K' for ufuncs: F in, F out), else C order.
std::vector<Py_ssize_t> result_strides(const std::vector<Py_ssize_t> &shape, Py_ssize_t itemsize,
                                       PyObject *const *operands, Py_ssize_t n,
                                       const classified *cls) {
  const int nd = static_cast<int>(shape.size());
  std::vector<Py_ssize_t> strides(nd);
  dense_strides(nd, shape.data(), itemsize, false, strides.data());
  if (nd < 2)
    return strides;
  for (Py_ssize_t k = 0; k < n; ++k) {
    if (cls[k].kind != k_array)
      continue;
    array_object *a = as_array(operands[k]);
    if (a->ndim != nd || !std::equal(shape.begin(), shape.end(), a->shape))
      continue;
    if (a->c_contiguous)
      return strides;
    std::vector<int> perm(nd);
    std::iota(perm.begin(), perm.end(), 0);
    std::stable_sort(perm.begin(), perm.end(), [&](int x, int y) {
      return std::llabs(a->strides[x]) > std::llabs(a->strides[y]);
    });
    Py_ssize_t s = itemsize;
    for (int j = nd - 1; j >= 0; --j) {
      strides[perm[j]] = s;
      s *= shape[perm[j]] != 0 ? shape[perm[j]] : 1;
    }
    return strides;
  }
  return strides;
}

// [lo, hi) bytes an array touches.
std::pair<CUdeviceptr, CUdeviceptr> span(const array_object *a) {
  long long lo = 0, hi = 0;
  for (int d = 0; d < a->ndim; ++d) {
    const long long reach = (a->shape[d] - 1) * a->strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  return {a->ptr + lo, a->ptr + hi + a->itemsize};
}

bool same_view(const array_object *x, const array_object *y) {
  return x->ptr == y->ptr && x->ndim == y->ndim &&
         std::equal(x->shape, x->shape + x->ndim, y->shape) &&
         std::equal(x->strides, x->strides + x->ndim, y->strides);
}

std::uint64_t out_key(const array_object *out) {
  return out == nullptr ? 0 : (out->code < 0 ? 16 : out->code + 1);
}

// outs: the given outputs (null: none given at that place); n_out: how many places out= has
// (0: no out=; 1: one array; 2: a tuple of two).
const resolved_op &resolve(int id, PyObject *name, PyObject *const *operands, Py_ssize_t n,
                           const classified *cls, array_object *const *outs, Py_ssize_t n_out,
                           bool &not_impl) {
  dispatch_state &st = state();
  std::uint64_t key = (static_cast<std::uint64_t>(id) << 40) |
                      (static_cast<std::uint64_t>(n_out) << 38) | (out_key(outs[1]) << 32) |
                      (static_cast<std::uint64_t>(n) << 28) | (out_key(outs[0]) << 22);
  for (Py_ssize_t k = 0; k < n; ++k)
    key |= static_cast<std::uint64_t>((cls[k].kind << 4) | cls[k].code) << (7 * k);
  auto it = st.cache.find(key);
  if (it != st.cache.end())
    return it->second;
  py::handle resolver =
      hooks::require(hooks::hook::dispatch_resolver, "an elementwise operation on arrays");
  py::tuple descr(n);
  for (Py_ssize_t k = 0; k < n; ++k)
    descr[k] = descriptor(operands[k], cls[k]);
  auto dtype_of = [](const array_object *a) {
    return a == nullptr ? py::none() : py::reinterpret_borrow<py::object>(a->dtype);
  };
  py::object out_dtype = n_out < 2
                             ? dtype_of(outs[0])
                             : py::object(py::make_tuple(dtype_of(outs[0]), dtype_of(outs[1])));
  py::object r = resolver(py::handle(name), descr, out_dtype);
  if (r.is_none()) {
    not_impl = true;
    static resolved_op none;
    return none;
  }
  py::tuple t = r.cast<py::tuple>();
  resolved_op op;
  op.core_object = t[0];
  op.core = op.core_object.cast<elementwise_core *>();
  // One result dtype, or a tuple of them for operations with several outputs.
  py::tuple dtypes = PyTuple_Check(t[1].ptr()) ? py::tuple(t[1]) : py::make_tuple(t[1]);
  op.nout = static_cast<Py_ssize_t>(dtypes.size());
  if (op.nout < 1 || op.nout > max_outputs)
    throw py::type_error("cuplug._array: an operation has one or two outputs");
  for (Py_ssize_t j = 0; j < op.nout; ++j) {
    op.out_dtype[j] = dtypes[j];
    op.out_code[j] = code_of_dtype(op.out_dtype[j]);
    op.out_itemsize[j] = op.out_dtype[j].attr("itemsize").cast<Py_ssize_t>();
  }
  op.check_exponent = t.size() > 2 && t[2].cast<bool>();
  if (static_cast<Py_ssize_t>(op.core->args().size()) != n + op.nout)
    throw py::type_error("cuplug._array: the kernel for '" + py::str(name).cast<std::string>() +
                         "' takes " + std::to_string(op.core->args().size()) +
                         " arguments; expected " + std::to_string(op.nout) + " output(s) and " +
                         std::to_string(n) + " inputs");
  return st.cache.emplace(key, std::move(op)).first->second;
}

PyObject *call_fallback(PyObject *name, PyObject *const *operands, Py_ssize_t n, PyObject *out,
                        PyObject *stream, py::handle error) {
  py::tuple ops(n);
  for (Py_ssize_t k = 0; k < n; ++k)
    ops[k] = py::reinterpret_borrow<py::object>(operands[k]);
  py::object r =
      hooks::require(hooks::hook::dispatch_fallback, "an elementwise operation on arrays")(
          py::handle(name), ops, out != nullptr ? py::handle(out) : py::none(), py::handle(stream),
          error);
  return r.release().ptr();
}

// The result of an operation whose first array operand is of a GPUArray subclass, when the
// result has that operand's shape: made by its _new_like_me (PyCUDA's protocol: the subclass's
// constructor runs, or its own _new_like_me decides the result's type and allocation). Null
// otherwise: plain GPUArrays (no Python call), broadcast shapes.
py::object subclass_result(PyTypeObject *type, PyObject *first,
                           const std::vector<Py_ssize_t> &shape, py::handle dtype) {
  if (first == nullptr || type == default_result_type() || type == array_type())
    return py::object();
  array_object *f = as_array(first);
  if (static_cast<std::size_t>(f->ndim) != shape.size() ||
      !std::equal(shape.begin(), shape.end(), f->shape))
    return py::object();
  static PyObject *name = PyUnicode_InternFromString("_new_like_me");
  py::object like_me = py::reinterpret_steal<py::object>(PyObject_GetAttr(first, name));
  if (!like_me) {
    PyErr_Clear(); // a subclass of ArrayBase alone: made as plain arrays are
    return py::object();
  }
  py::object made = like_me(dtype);
  if (!is_array(made.ptr()))
    throw py::type_error(std::string(type->tp_name) + "._new_like_me returned " + type_name(made) +
                         ", not a GPUArray");
  array_object *m = as_array(made.ptr());
  if (static_cast<std::size_t>(m->ndim) != shape.size() ||
      !std::equal(shape.begin(), shape.end(), m->shape) || !py::handle(m->dtype).equal(dtype))
    throw py::value_error(std::string(type->tp_name) +
                          "._new_like_me returned an array of another shape or dtype than "
                          "the operation's result");
  return made;
}

PyObject *apply_impl(PyObject *name, PyObject *const *operands, Py_ssize_t n, PyObject *out_obj,
                     PyObject *stream, bool not_implemented) {
  if (n > max_operands)
    throw py::type_error("apply: at most 3 operands");
  classified cls[max_operands];
  PyObject *first_array = nullptr;
  bool weak = false;
  for (Py_ssize_t k = 0; k < n; ++k) {
    cls[k] = classify(operands[k]);
    if (cls[k].kind == k_unknown) {
      if (not_implemented)
        Py_RETURN_NOTIMPLEMENTED;
      throw py::type_error(py::str(name).cast<std::string>() +
                           ": operands must be GPUArrays or scalars, got " +
                           type_name(py::handle(operands[k])));
    }
    if (cls[k].kind == k_array) {
      require_ready(as_array(operands[k])); // its dtype and shape are read below
      if (first_array == nullptr)
        first_array = operands[k];
    }
    weak = weak || cls[k].kind >= k_bool;
  }
  // out=: one array, or (for several outputs) a tuple of arrays and Nones.
  array_object *outs[max_outputs] = {nullptr, nullptr};
  PyObject *out_objs[max_outputs] = {nullptr, nullptr};
  Py_ssize_t n_out = 0;
  if (out_obj != nullptr && out_obj != Py_None) {
    const bool tuple = PyTuple_Check(out_obj);
    n_out = tuple ? PyTuple_GET_SIZE(out_obj) : 1;
    if (n_out < 1 || n_out > max_outputs)
      throw py::value_error(py::str(name).cast<std::string>() +
                            ": out= takes one array or a tuple with one per output");
    for (Py_ssize_t j = 0; j < n_out; ++j) {
      PyObject *o = tuple ? PyTuple_GET_ITEM(out_obj, j) : out_obj;
      if (o == Py_None)
        continue;
      if (!is_array(o))
        throw py::type_error(py::str(name).cast<std::string>() + ": out must be a GPUArray, got " +
                             type_name(py::handle(o)));
      outs[j] = as_array(o);
      out_objs[j] = o;
      require_ready(outs[j]);
    }
  }
  dispatch_state &st = state();
  if (weak && st.legacy_promotion)
    return call_fallback(name, operands, n, out_obj, stream, py::none());

  const int id = op_id(name);
  bool not_impl = false;
  const resolved_op &op = resolve(id, name, operands, n, cls, outs, n_out, not_impl);
  if (not_impl) {
    if (not_implemented)
      Py_RETURN_NOTIMPLEMENTED;
    throw py::type_error(py::str(name).cast<std::string>() + ": unsupported operand types");
  }
  const std::vector<arg_spec> &specs = op.core->args();
  const Py_ssize_t nout = op.nout;
  if (n_out > 1 && n_out != nout)
    throw py::value_error(py::str(name).cast<std::string>() + " has " + std::to_string(nout) +
                          " output(s), out= gives " + std::to_string(n_out));

  operand ops[max_operands + max_outputs];
  for (Py_ssize_t k = 0; k < n; ++k) {
    try {
      fill_operand(specs[k + nout], operands[k], ops[k + nout]);
    } catch (py::error_already_set &e) {
      if (cls[k].kind == k_int && e.matches(PyExc_OverflowError))
        return call_fallback(name, operands, n, out_obj, stream, e.value());
      throw;
    }
  }
  if (op.check_exponent && n == 2 && !specs[nout + 1].vector) {
    long long e = 0;
    switch (specs[nout + 1].code) {
    case t_int8:
      e = *reinterpret_cast<const std::int8_t *>(ops[nout + 1].scalar);
      break;
    case t_int16:
      e = *reinterpret_cast<const std::int16_t *>(ops[nout + 1].scalar);
      break;
    case t_int32:
      e = *reinterpret_cast<const std::int32_t *>(ops[nout + 1].scalar);
      break;
    case t_int64:
      e = *reinterpret_cast<const std::int64_t *>(ops[nout + 1].scalar);
      break;
    default:
      break;
    }
    if (e < 0)
      throw py::value_error("Integers to negative integer powers are not allowed.");
  }
  const CUstream s = stream == Py_None ? nullptr : to_stream(stream);

  py::object results[max_outputs];
  std::vector<py::object> temps;
  std::vector<Py_ssize_t> shape;
  bool have_shape = false;
  for (Py_ssize_t j = 0; j < nout; ++j) {
    array_object *out = outs[j];
    if (out == nullptr) {
      if (!have_shape) {
        shape = broadcast_shape(operands, n, cls, py::str(name).cast<std::string>());
        have_shape = true;
      }
      std::vector<Py_ssize_t> strides = result_strides(shape, op.out_itemsize[j], operands, n, cls);
      PyTypeObject *type = first_array != nullptr ? Py_TYPE(first_array) : default_result_type();
      results[j] = subclass_result(type, first_array, shape, op.out_dtype[j]);
      if (results[j]) {
        out = as_array(results[j].ptr());
      } else {
        results[j] = new_array(type, static_cast<int>(shape.size()), shape.data(), strides.data(),
                               op.out_dtype[j], op.out_code[j], op.out_itemsize[j]);
        array_object *r = as_array(results[j].ptr());
        PyObject *alloc = first_array != nullptr ? as_array(first_array)->allocator : nullptr;
        allocate_memory(r, alloc != nullptr ? py::handle(alloc) : py::none(), s,
                        py::handle(stream));
        if (alloc != nullptr) {
          Py_INCREF(alloc);
          r->allocator = alloc;
        }
        out = r;
      }
    } else {
      results[j] = py::reinterpret_borrow<py::object>(out_objs[j]);
      // An input sharing memory with the output in another layout would be overwritten while
      // it is read: NumPy copies such inputs first, and so do we.
      if (out->size != 0) {
        auto [olo, ohi] = span(out);
        for (Py_ssize_t k = 0; k < n; ++k) {
          if (cls[k].kind != k_array)
            continue;
          array_object *a = as_array(operands[k]);
          if (a->size == 0 || same_view(a, out) || ops[nout + k].array != a)
            continue;
          auto [lo, hi] = span(a);
          if (lo < ohi && olo < hi) {
            static PyObject *copy_name = PyUnicode_InternFromString("_copy");
            PyObject *one = operands[k];
            py::object copy = py::reinterpret_steal<py::object>(
                apply_impl(copy_name, &one, 1, nullptr, stream, false));
            ops[nout + k].array = as_array(copy.ptr());
            temps.push_back(std::move(copy)); // alive until launched (then freed stream-ordered)
          }
        }
      }
    }
    ops[j].array = out;
  }
  op.core->launch(ops, s, nullptr);
  if (nout == 1)
    return results[0].release().ptr();
  return PyTuple_Pack(2, results[0].ptr(), results[1].ptr());
}

// apply(name, operands, out=None, stream=None) as METH_FASTCALL.
PyObject *py_apply(PyObject *, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
  try {
    PyObject *out = Py_None, *stream = Py_None;
    Py_ssize_t npos = nargs;
    if (kwnames != nullptr) {
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, i);
        if (PyUnicode_CompareWithASCIIString(k, "out") == 0)
          out = args[nargs + i];
        else if (PyUnicode_CompareWithASCIIString(k, "stream") == 0)
          stream = args[nargs + i];
        else
          throw py::type_error("apply() got an unexpected keyword argument");
      }
    }
    if (npos >= 3)
      out = args[2];
    if (npos >= 4)
      stream = args[3];
    if (npos < 2 || npos > 4 || !PyTuple_Check(args[1]))
      throw py::type_error("apply(name, operands: tuple, out=None, stream=None)");
    PyObject *ops = args[1];
    return apply_impl(args[0], &PyTuple_GET_ITEM(ops, 0), PyTuple_GET_SIZE(ops), out, stream,
                      false);
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

PyMethodDef apply_def = {"apply",
                         reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&py_apply)),
                         METH_FASTCALL | METH_KEYWORDS,
                         "apply(name, operands, out=None, stream=None): the elementwise "
                         "operation `name` with NumPy broadcasting and promotion."};

} // namespace

PyObject *apply(PyObject *name, PyObject *const *operands, Py_ssize_t n, PyObject *out,
                PyObject *stream, bool not_implemented) {
  return apply_impl(name, operands, n, out, stream, not_implemented);
}

void init_array_ops(py::module_ &m) {
  PyObject *f = PyCFunction_NewEx(&apply_def, nullptr, m.attr("__name__").ptr());
  if (f == nullptr)
    throw py::error_already_set();
  m.add_object("apply", py::reinterpret_steal<py::object>(f));
  // What was resolved with the previous hooks is forgotten when any of them is registered.
  for (hooks::hook h : {hooks::hook::dispatch_resolver, hooks::hook::dispatch_fallback,
                        hooks::hook::legacy_promotion})
    hooks::on_register(h, [] {
      dispatch_state &st = state();
      py::handle legacy = hooks::get(hooks::hook::legacy_promotion);
      st.legacy_promotion = legacy && legacy.ptr() == Py_True;
      if (st.np_generic == nullptr)
        st.np_generic = reinterpret_cast<PyTypeObject *>(
            py::object(py::module_::import("numpy").attr("generic")).release().ptr());
      st.cache.clear();
    });
  m.def("clear_dispatch_cache", [] { state().cache.clear(); });
  m.def("dispatch_cache_size", [] { return state().cache.size(); });
}

} // namespace cuplug::python::array
