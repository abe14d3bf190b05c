// PyCUDA's <pycuda-helpers.hpp> as it is under CUDA 12 and later: the fp_tex_* storage types for
// double and complex values in textures. Its fp_tex*/fp_surf* fetch helpers took texture
// references, which CUDA 12 removed; with texture objects, fetch the storage type and convert
// (__hiloint2double for double, as PyCUDA's helpers did).
#ifndef CUPLUG_PYCUDA_HELPERS_HPP
#define CUPLUG_PYCUDA_HELPERS_HPP

extern "C++" {
#include <pycuda-complex.hpp>

typedef float fp_tex_float;
typedef int2 fp_tex_double;
typedef uint2 fp_tex_cfloat;
typedef int4 fp_tex_cdouble;
} // extern "C++"

#endif
