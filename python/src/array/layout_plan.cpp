// plan_layout: NumPy broadcasting, then the fewest dimensions and widest accesses that visit
// every element of every operand exactly where NumPy would. Each step below decides one thing:
// the iteration shape, each operand's element strides, the order and merging of dimensions, each
// operand's access class, the vector width, the strides passed to the kernel, the index width.
#include "array/layout_plan.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <numeric>

namespace cuplug::python::array {
namespace {

constexpr long long int32_limit = 0x7fffffffLL;

bool is_power_of_two(long long x) { return x > 0 && (x & (x - 1)) == 0; }

// Per operand, in elements, one entry per dimension (empty for scalars).
using operand_strides = std::vector<std::vector<long long>>;

// An iteration space: its extents and each vector's strides over them.
struct iteration_space {
  std::vector<long long> shape;
  operand_strides strides;
  int ndim() const { return static_cast<int>(shape.size()); }
};

// ---- the iteration shape (NumPy broadcasting) ---------------------------------------------------

// Every vector broadcasts to the given iteration shape (trailing dims equal, or 1 in the vector).
void check_broadcasts_to(const std::vector<plan_operand> &ops,
                         const std::vector<long long> &shape) {
  for (std::size_t k = 0; k < ops.size(); ++k) {
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
}

// The shape all vectors broadcast to, as NumPy makes it: the operands read first, then the
// written ones, so that an output which does not fit what is read is named as the output at fault
// (output_shape_error), whatever its place among the arguments.
std::vector<long long> broadcast_shape(const std::vector<plan_operand> &ops) {
  std::vector<long long> shape;
  for (const bool written : {false, true}) {
    for (std::size_t k = 0; k < ops.size(); ++k) {
      const plan_operand &op = ops[k];
      if (!op.vector || op.written != written)
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
        else if (written)
          throw output_shape_error{k};
        else
          throw broadcast_error{k};
      }
    }
  }
  return shape;
}

// ---- element strides ----------------------------------------------------------------------------

// Operand k's strides in elements over the iteration dims, 0 where it is broadcast. A written
// operand must have the iteration shape and must not visit one element twice (NumPy refuses
// such outputs too).
std::vector<long long> element_strides(const plan_operand &op, std::size_t k,
                                       const std::vector<long long> &shape, long long n) {
  const int nd = static_cast<int>(shape.size());
  if (op.written) {
    bool same = op.ndim == nd;
    for (int d = 0; same && d < nd; ++d)
      same = op.shape[d] == shape[d];
    if (!same)
      throw output_shape_error{k};
  }
  std::vector<long long> st(nd, 0);
  for (int d = 0; d < op.ndim; ++d) {
    const int t = nd - op.ndim + d;
    if (op.shape[d] == 1 && shape[t] != 1)
      continue; // broadcast
    if (op.strides[d] % op.itemsize != 0)
      throw stride_error{k};
    st[t] = op.strides[d] / op.itemsize;
  }
  if (op.written && n > 1)
    for (int d = 0; d < nd; ++d)
      if (shape[d] > 1 && st[d] == 0)
        throw output_shape_error{k};
  return st;
}

// For plan_options::any_layout = false: every vector is C-contiguous over the iteration shape.
void require_c_contiguous(const std::vector<plan_operand> &ops, const iteration_space &space) {
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (!ops[k].vector)
      continue;
    long long expect = 1;
    for (int d = space.ndim() - 1; d >= 0; --d) {
      if (space.shape[d] != 1 && space.strides[k][d] != expect)
        throw layout_error{k};
      expect *= space.shape[d];
    }
  }
}

// ---- dimension order and collapsing -------------------------------------------------------------

// The operand whose memory order the iteration follows: the first written vector, else the
// first vector; ops.size() when there is none.
std::size_t order_reference(const std::vector<plan_operand> &ops) {
  for (std::size_t k = 0; k < ops.size(); ++k)
    if (ops[k].vector && ops[k].written)
      return k;
  for (std::size_t k = 0; k < ops.size(); ++k)
    if (ops[k].vector)
      return k;
  return ops.size();
}

// The dims to iterate, in order: those of extent 1 are dropped.
std::vector<int> non_unit_dims(const std::vector<long long> &shape) {
  std::vector<int> dims;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d)
    if (shape[d] != 1)
      dims.push_back(d);
  return dims;
}

// Flips the dims the reference walks backwards (order does not matter to an elementwise
// operation: each flipped vector starts at its last element), then orders `dims` by the
// reference's strides, outermost first.
void follow_reference_order(const std::vector<plan_operand> &ops, std::size_t ref,
                            iteration_space &space, std::vector<int> &dims,
                            std::vector<CUdeviceptr> &ptrs) {
  operand_strides &st = space.strides;
  for (int d : dims) {
    if (st[ref][d] >= 0)
      continue;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      if (!ops[k].vector || st[k][d] == 0)
        continue;
      ptrs[k] += static_cast<CUdeviceptr>((space.shape[d] - 1) * st[k][d] * ops[k].itemsize);
      st[k][d] = -st[k][d];
    }
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [&](int a, int b) { return std::llabs(st[ref][a]) > std::llabs(st[ref][b]); });
}

// Merges each dim into the one before it where every vector steps across both as across one;
// at least one dim is left (extent 1, strides 0, when none was).
iteration_space collapse_dims(const std::vector<plan_operand> &ops, const std::vector<int> &dims,
                              const iteration_space &space) {
  const std::size_t nops = ops.size();
  const operand_strides &st = space.strides;
  iteration_space out;
  out.strides.resize(nops);
  for (int d : dims) {
    const long long extent = space.shape[d];
    bool merge = !out.shape.empty();
    for (std::size_t k = 0; merge && k < nops; ++k)
      if (ops[k].vector)
        merge = out.strides[k].back() == st[k][d] * extent;
    if (merge)
      out.shape.back() *= extent;
    else
      out.shape.push_back(extent);
    for (std::size_t k = 0; k < nops; ++k) {
      if (!ops[k].vector)
        continue;
      if (merge)
        out.strides[k].back() = st[k][d];
      else
        out.strides[k].push_back(st[k][d]);
    }
  }
  if (out.shape.empty()) {
    out.shape.push_back(1);
    for (std::size_t k = 0; k < nops; ++k)
      if (ops[k].vector)
        out.strides[k].push_back(0);
  }
  return out;
}

// ---- access classes -----------------------------------------------------------------------------

// Each vector's access class: 'z' (one element for all), 'c' (contiguous over the space) or 'g'
// (strided). Returns whether any is 'g'.
bool classify_accesses(const std::vector<plan_operand> &ops, const iteration_space &space,
                       long long n, const plan_options &options, std::string &classes) {
  bool any_g = false;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (!ops[k].vector)
      continue;
    bool zero = true, contiguous = true;
    long long expect = 1;
    for (int d = space.ndim() - 1; d >= 0; --d) {
      zero = zero && space.strides[k][d] == 0;
      contiguous = contiguous && space.strides[k][d] == expect;
      expect *= space.shape[d];
    }
    // A one-element space: every vector is element 0.
    if (n == 1)
      zero = true, contiguous = false;
    classes[k] = zero ? 'z' : contiguous ? 'c' : 'g';
    any_g = any_g || classes[k] == 'g';
  }
  if (!options.any_layout) {
    // require_c_contiguous checked it: every vector is C-contiguous over the iteration shape.
    for (std::size_t k = 0; k < ops.size(); ++k)
      if (ops[k].vector)
        classes[k] = 'c';
    any_g = false;
  }
  return any_g;
}

// Without strided operands the kernel walks one flat dimension of n elements.
void flatten(iteration_space &space, long long n) {
  space.shape.assign(1, n);
  for (auto &s : space.strides)
    if (!s.empty())
      s.assign(1, 1);
}

// ---- vector width -------------------------------------------------------------------------------

// Whether every 'c' and 'g' vector can be read `vec` elements at a time: aligned, power-of-two
// items, and for 'g' a contiguous innermost dim whose outer strides and extent `vec` divides. A
// 'g' vector broadcast along the innermost dim needs none of that (it becomes 'b').
bool vector_width_fits(int vec, const std::vector<plan_operand> &ops, const std::string &classes,
                       const std::vector<CUdeviceptr> &ptrs, const iteration_space &space,
                       bool any_g) {
  const int inner = space.ndim() - 1;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    const char c = classes[k];
    if (c != 'c' && c != 'g')
      continue;
    if (c == 'g' && space.strides[k][inner] == 0)
      continue; // becomes 'b': one scalar load per vector, any alignment
    const long long bytes = vec * ops[k].itemsize;
    if (!is_power_of_two(ops[k].itemsize) || ptrs[k] % bytes != 0)
      return false;
    if (c == 'g') {
      if (space.strides[k][inner] != 1)
        return false;
      for (int d = 0; d < inner; ++d)
        if (space.strides[k][d] % vec != 0)
          return false;
    }
  }
  return !any_g || space.shape[inner] % vec == 0;
}

// Elements per access: the widest the options allow for the widest item (max_vec_bytes in one
// load), halved until every vector fits it; 1 when the operation cannot be vectorised.
int vector_width(const std::vector<plan_operand> &ops, const plan_options &options,
                 const std::string &classes, const std::vector<CUdeviceptr> &ptrs,
                 const iteration_space &space, bool any_g) {
  if (!options.vectorizable || options.keep_order)
    return 1;
  long long widest = 0;
  for (std::size_t k = 0; k < ops.size(); ++k)
    if (classes[k] == 'c' || classes[k] == 'g')
      widest = std::max(widest, ops[k].itemsize);
  int vec = 1;
  if (widest > 0 && is_power_of_two(widest) && widest <= options.max_vec_bytes)
    vec = static_cast<int>(options.max_vec_bytes / widest);
  while (vec > 1 && !vector_width_fits(vec, ops, classes, ptrs, space, any_g))
    vec /= 2;
  return vec;
}

// ---- strided arguments --------------------------------------------------------------------------

// The space counted in vectors of `vec` elements: 'g' vectors step one vector per innermost
// step, those broadcast along it become 'b', and an innermost extent of 1 left is dropped (no
// division by 1).
void count_in_vectors(iteration_space &space, int vec, std::string &classes) {
  const int inner = space.ndim() - 1;
  for (std::size_t k = 0; k < classes.size(); ++k) {
    if (classes[k] != 'g')
      continue;
    if (space.strides[k][inner] == 0)
      classes[k] = 'b';
    else
      space.strides[k][inner] = vec;
  }
  space.shape[inner] /= vec;
  if (space.shape[inner] == 1 && inner > 0) {
    space.shape.pop_back();
    for (auto &s : space.strides)
      if (!s.empty())
        s.pop_back();
  }
}

// ---- index width --------------------------------------------------------------------------------

// Whether a 32-bit index could overflow: more than 2**31-1 elements, or a strided argument
// reaching that far.
bool needs_64bit_index(const launch_plan &plan) {
  bool wide = plan.n > int32_limit;
  for (const auto &s : plan.strides) {
    long long reach = 0;
    for (int d = 0; d < plan.ndim; ++d)
      reach += (plan.shape[d] - 1) * std::llabs(s[d]);
    wide = wide || reach + plan.vec > int32_limit;
  }
  return wide;
}

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

  iteration_space space;
  if (iter_shape != nullptr) {
    space.shape = *iter_shape;
    check_broadcasts_to(ops, space.shape);
  } else {
    space.shape = broadcast_shape(ops);
  }
  plan.iter_shape = space.shape;
  plan.n = std::accumulate(space.shape.begin(), space.shape.end(), 1LL, std::multiplies<>());

  space.strides.resize(nops);
  for (std::size_t k = 0; k < nops; ++k) {
    if (!ops[k].vector)
      continue;
    plan.ptrs[k] = ops[k].ptr;
    space.strides[k] = element_strides(ops[k], k, space.shape, plan.n);
  }
  if (!options.any_layout)
    require_c_contiguous(ops, space);
  if (plan.n == 0) {
    for (std::size_t k = 0; k < nops; ++k)
      plan.classes[k] = ops[k].vector ? 'c' : 's';
    plan.shape = {0};
    return plan;
  }

  std::vector<int> dims = non_unit_dims(space.shape);
  const std::size_t ref = order_reference(ops);
  if (!options.keep_order && ref != nops)
    follow_reference_order(ops, ref, space, dims, plan.ptrs);
  iteration_space collapsed = collapse_dims(ops, dims, space);

  const bool any_g = classify_accesses(ops, collapsed, plan.n, options, plan.classes);
  if (!any_g)
    flatten(collapsed, plan.n);
  plan.vec = vector_width(ops, options, plan.classes, plan.ptrs, collapsed, any_g);
  if (any_g) {
    if (plan.vec > 1)
      count_in_vectors(collapsed, plan.vec, plan.classes);
    for (std::size_t k = 0; k < nops; ++k)
      if (plan.classes[k] == 'g' || plan.classes[k] == 'b')
        plan.strides.push_back(collapsed.strides[k]);
  }
  plan.shape = collapsed.shape;
  plan.ndim = collapsed.ndim();
  plan.index64 = needs_64bit_index(plan);
  return plan;
}

} // namespace cuplug::python::array
