// Launch layout of an elementwise operation: broadcasting, collapsing dimensions, per-operand
// access classes, vector width and index width (the C++ twin of cuplug._codegen.elementwise's
// Layout; the generated kernel reads what plan_layout() decides).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>
#include <vector>

namespace cuplug::python::array {

// One kernel argument as the planner sees it. Vectors carry their array geometry; scalars only
// their class ('s').
struct plan_operand {
  bool vector = false;
  bool written = false;
  int ndim = 0;
  const std::ptrdiff_t *shape = nullptr;   // ndim entries (Py_ssize_t)
  const std::ptrdiff_t *strides = nullptr; // ndim entries, bytes
  long long itemsize = 0;
  CUdeviceptr ptr = 0;
};

struct launch_plan {
  std::string classes; // per argument: c g b z s
  int ndim = 1;
  int vec = 1;
  bool index64 = false;
  long long n = 0;                             // elements in the iteration space
  std::vector<long long> shape;                // collapsed; innermost divided by vec if strided
  std::vector<std::vector<long long>> strides; // per g/b argument (in order), in elements
  std::vector<CUdeviceptr> ptrs;               // per argument (vectors), after dimension flips
  std::vector<long long> iter_shape;           // the broadcast shape before collapsing
};

struct plan_options {
  bool keep_order = false;   // the operation uses i: no permuting or flipping of dimensions
  bool vectorizable = false; // every access is name[i]: vector loads allowed
  bool any_layout = true;    // false: every vector must be C-contiguous over the iteration shape
  int max_vec_bytes = 16;
};

// Raised by plan_layout for shapes that do not broadcast: index of the first operand whose
// shape clashes with the shape accumulated so far (the caller writes the message).
struct broadcast_error {
  std::size_t operand;
};
// A written operand whose shape is not the iteration shape, or that overlaps itself.
struct output_shape_error {
  std::size_t operand;
};
// An operand whose strides are not whole elements.
struct stride_error {
  std::size_t operand;
};
// any_layout is false and an operand is not C-contiguous over the iteration shape.
struct layout_error {
  std::size_t operand;
};

// `iter_shape` (nullptr: broadcast of the vectors) is the iteration space; vectors broadcast
// to it with NumPy's rules.
launch_plan plan_layout(const std::vector<plan_operand> &ops, const plan_options &options,
                        const std::vector<long long> *iter_shape = nullptr);

// 32-bit fast division constants (CUTLASS's FastDivmod): q = umulhi(x, mul) >> shr for
// 0 <= x < 2**31 and divisor >= 2.
void fast_divmod_constants(unsigned divisor, unsigned &mul, unsigned &shr) noexcept;

} // namespace cuplug::python::array
