// PyCUDA's <pycuda-complex.hpp> for sources written for PyCUDA: pycuda::complex<T> is libcu++'s
// cuda::std::complex<T>, with the same free functions (real, imag, conj, abs, arg, norm, polar,
// exp, log, log10, sqrt, sin, cos, tan, sinh, cosh, tanh, pow). On the include path of every
// compile (cuplug.compiler adds the package's include folder), under NVRTC and nvcc alike.
#ifndef CUPLUG_PYCUDA_COMPLEX_HPP
#define CUPLUG_PYCUDA_COMPLEX_HPP

// PyCUDA sources include it inside their extern "C" { } wrapper: C++ linkage for all of it.
extern "C++" {
#include <cuda/std/complex>

namespace pycuda {

template <class T> using complex = ::cuda::std::complex<T>;

using ::cuda::std::abs;
using ::cuda::std::arg;
using ::cuda::std::conj;
using ::cuda::std::cos;
using ::cuda::std::cosh;
using ::cuda::std::exp;
using ::cuda::std::imag;
using ::cuda::std::log;
using ::cuda::std::log10;
using ::cuda::std::norm;
using ::cuda::std::polar;
using ::cuda::std::pow;
using ::cuda::std::real;
using ::cuda::std::sin;
using ::cuda::std::sinh;
using ::cuda::std::sqrt;
using ::cuda::std::tan;
using ::cuda::std::tanh;

} // namespace pycuda
} // extern "C++"

#endif
