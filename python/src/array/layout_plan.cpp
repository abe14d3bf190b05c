// plan_layout: NumPy broadcasting, then the fewest dimensions and widest accesses that visit
// every element of every operand exactly where NumPy would.
#include "array/layout_plan.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>

namespace cuplug::python::array {
namespace {

constexpr long long int32_limit = 0x7fffffffLL;

bool is_power_of_two(long long x) { return x > 0 && (x & (x - 1)) == 0; }

} // namespace

void fast_divmod_constants(unsigned divisor, unsigned &mul, unsigned &shr) noexcept {
  if (divisor < 2) {
    mul = 0;
    shr = 0;
    return;
  }
  unsigned log2 = 0;
  while ((1ull << log2) < divisor)
    ++log2;
  const unsigned p = 31 + log2;
  mul = static_cast<unsigned>(((1ull << p) + divisor - 1) / divisor);
  shr = p - 32;
}

launch_plan plan_layout(const std::vector<plan_operand> &ops, const plan_options &options,
                        const std::vector<long long> *iter_shape) {
  launch_plan plan;
  const std::size_t nops = ops.size();
  plan.classes.assign(nops, 's');
  plan.ptrs.assign(nops, 0);

  // ---- the iteration shape (NumPy broadcasting) ----
  std::vector<long long> shape;
  if (iter_shape != nullptr) {
    shape = *iter_shape;
    for (std::size_t k = 0; k < nops; ++k) {
      const plan_operand &op = ops[k];
      if (!op.vector)
        continue;
      if (op.ndim > static_cast<int>(shape.size()))
        throw broadcast_error{k};
      for (int d = 0; d < op.ndim; ++d) {
        const long long want = shape[shape.size() - op.ndim + d];
        if (op.shape[d] != want && op.shape[d] != 1)
          throw broadcast_error{k};
      }
    }
  } else {
    for (std::size_t k = 0; k < nops; ++k) {
      const plan_operand &op = ops[k];
      if (!op.vector)
        continue;
      if (op.ndim > static_cast<int>(shape.size()))
        shape.insert(shape.begin(), op.ndim - shape.size(), 1);
      for (int d = 0; d < op.ndim; ++d) {
        long long &s = shape[shape.size() - op.ndim + d];
        const long long e = op.shape[d];
        if (s == e || e == 1)
          continue;
        if (s == 1)
          s = e;
        else
          throw broadcast_error{k};
      }
    }
  }
  plan.iter_shape = shape;
  const int nd0 = static_cast<int>(shape.size());
  long long n = 1;
  for (long long e : shape)
    n *= e;
  plan.n = n;

  // Element strides per vector over the iteration dims (0 where broadcast).
  std::vector<std::vector<long long>> st(nops);
  for (std::size_t k = 0; k < nops; ++k) {
    const plan_operand &op = ops[k];
    if (!op.vector)
      continue;
    plan.ptrs[k] = op.ptr;
    if (op.written) {
      bool same = op.ndim == nd0;
      for (int d = 0; same && d < nd0; ++d)
        same = op.shape[d] == shape[d];
      if (!same)
        throw output_shape_error{k};
    }
    st[k].assign(nd0, 0);
    for (int d = 0; d < op.ndim; ++d) {
      const int t = nd0 - op.ndim + d;
      if (op.shape[d] == 1 && shape[t] != 1)
        continue; // broadcast
      if (op.strides[d] % op.itemsize != 0)
        throw stride_error{k};
      st[k][t] = op.strides[d] / op.itemsize;
    }
    if (op.written && n > 1) {
      // A written operand must not visit one element twice (NumPy refuses such outputs too).
      for (int d = 0; d < nd0; ++d)
        if (shape[d] > 1 && st[k][d] == 0)
          throw output_shape_error{k};
    }
  }
  if (!options.any_layout) {
    for (std::size_t k = 0; k < nops; ++k) {
      if (!ops[k].vector)
        continue;
      long long expect = 1;
      for (int d = nd0 - 1; d >= 0; --d) {
        if (shape[d] != 1 && st[k][d] != expect)
          throw layout_error{k};
        expect *= shape[d];
      }
    }
  }
  if (n == 0) {
    plan.classes.clear();
    for (std::size_t k = 0; k < nops; ++k)
      plan.classes += ops[k].vector ? 'c' : 's';
    plan.shape = {0};
    return plan;
  }

  // ---- collapse ----
  // Dims in order, size-1 dims dropped.
  std::vector<int> dims;
  for (int d = 0; d < nd0; ++d)
    if (shape[d] != 1)
      dims.push_back(d);
  std::size_t ref = nops; // the operand whose memory order the iteration follows
  for (std::size_t k = 0; k < nops && ref == nops; ++k)
    if (ops[k].vector && ops[k].written)
      ref = k;
  for (std::size_t k = 0; k < nops && ref == nops; ++k)
    if (ops[k].vector)
      ref = k;
  if (!options.keep_order && ref != nops) {
    // Flip dims the reference walks backwards (order does not matter to an elementwise
    // operation), then order dims by its strides, outermost first.
    for (int d : dims) {
      if (st[ref][d] < 0) {
        for (std::size_t k = 0; k < nops; ++k) {
          if (!ops[k].vector || st[k][d] == 0)
            continue;
          plan.ptrs[k] += static_cast<CUdeviceptr>((shape[d] - 1) * st[k][d] * ops[k].itemsize);
          st[k][d] = -st[k][d];
        }
      }
    }
    std::stable_sort(dims.begin(), dims.end(),
                     [&](int a, int b) { return std::llabs(st[ref][a]) > std::llabs(st[ref][b]); });
  }
  std::vector<long long> cshape;
  std::vector<std::vector<long long>> cst(nops);
  for (int d : dims) {
    bool merge = !cshape.empty();
    for (std::size_t k = 0; merge && k < nops; ++k)
      if (ops[k].vector)
        merge = cst[k].back() == st[k][d] * shape[d];
    if (merge) {
      cshape.back() *= shape[d];
      for (std::size_t k = 0; k < nops; ++k)
        if (ops[k].vector)
          cst[k].back() = st[k][d];
    } else {
      cshape.push_back(shape[d]);
      for (std::size_t k = 0; k < nops; ++k)
        if (ops[k].vector)
          cst[k].push_back(st[k][d]);
    }
  }
  if (cshape.empty()) {
    cshape.push_back(1);
    for (std::size_t k = 0; k < nops; ++k)
      if (ops[k].vector)
        cst[k].push_back(0);
  }
  const int cnd = static_cast<int>(cshape.size());

  // ---- classes ----
  bool any_g = false;
  for (std::size_t k = 0; k < nops; ++k) {
    if (!ops[k].vector)
      continue;
    bool zero = true, contiguous = true;
    long long expect = 1;
    for (int d = cnd - 1; d >= 0; --d) {
      zero = zero && cst[k][d] == 0;
      contiguous = contiguous && cst[k][d] == expect;
      expect *= cshape[d];
    }
    // A one-element space: every vector is element 0.
    if (n == 1)
      zero = true, contiguous = false;
    plan.classes[k] = zero ? 'z' : contiguous ? 'c' : 'g';
    any_g = any_g || plan.classes[k] == 'g';
  }
  if (!options.any_layout) {
    // Checked above: every vector is C-contiguous over the iteration shape.
    for (std::size_t k = 0; k < nops; ++k)
      if (ops[k].vector)
        plan.classes[k] = 'c';
    any_g = false;
  }
  if (!any_g) {
    cshape.assign(1, n);
    for (auto &s : cst)
      if (!s.empty())
        s.assign(1, 1);
  }

  // ---- vector width ----
  int vec = 1;
  if (options.vectorizable && !options.keep_order) {
    long long widest = 0;
    for (std::size_t k = 0; k < nops; ++k)
      if (plan.classes[k] == 'c' || plan.classes[k] == 'g')
        widest = std::max(widest, ops[k].itemsize);
    if (widest > 0 && is_power_of_two(widest) && widest <= options.max_vec_bytes)
      vec = static_cast<int>(options.max_vec_bytes / widest);
    for (; vec > 1; vec /= 2) {
      bool ok = true;
      for (std::size_t k = 0; ok && k < nops; ++k) {
        const char c = plan.classes[k];
        if (c != 'c' && c != 'g')
          continue;
        if (c == 'g' && cst[k][cnd - 1] == 0)
          continue; // becomes 'b': one scalar load per vector, any alignment
        const long long bytes = vec * ops[k].itemsize;
        ok = is_power_of_two(ops[k].itemsize) && plan.ptrs[k] % bytes == 0;
        if (ok && c == 'g') {
          ok = cst[k][cnd - 1] == 1;
          for (int d = 0; ok && d < cnd - 1; ++d)
            ok = cst[k][d] % vec == 0;
        }
      }
      if (ok && any_g)
        ok = cshape[cnd - 1] % vec == 0;
      if (ok)
        break;
    }
  }
  plan.vec = vec;

  // ---- strided arguments ----
  if (any_g) {
    if (vec > 1) {
      for (std::size_t k = 0; k < nops; ++k) {
        if (plan.classes[k] != 'g')
          continue;
        if (cst[k][cnd - 1] == 0)
          plan.classes[k] = 'b';
        else
          cst[k][cnd - 1] = vec; // one vector per step
      }
      cshape[cnd - 1] /= vec;
      // An innermost extent of 1 left after vectorising is dropped (no division by 1).
      if (cshape[cnd - 1] == 1 && cnd > 1) {
        cshape.pop_back();
        for (auto &s : cst)
          if (!s.empty())
            s.pop_back();
      }
    }
    for (std::size_t k = 0; k < nops; ++k)
      if (plan.classes[k] == 'g' || plan.classes[k] == 'b')
        plan.strides.push_back(cst[k]);
  }
  plan.shape = cshape;
  plan.ndim = static_cast<int>(cshape.size());

  // ---- index width ----
  bool wide = n > int32_limit;
  for (const auto &s : plan.strides) {
    long long reach = 0;
    for (int d = 0; d < plan.ndim; ++d)
      reach += (plan.shape[d] - 1) * std::llabs(s[d]);
    wide = wide || reach + vec > int32_limit;
  }
  plan.index64 = wide;
  return plan;
}

} // namespace cuplug::python::array
