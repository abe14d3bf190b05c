# Finds the parts of the CUDA toolkit cuplug builds against, in the project's one toolkit search
# order (docs/install.md, "Where cuplug looks for the CUDA toolkit"), and stops with a message
# saying what to install and what to set when there is none. Only cuda.h is required (the driver is
# opened at run time); NVRTC, cuRAND and nvcc are optional (their plugins are left out without
# them); cudart and cuBLAS are never looked for: cuplug does not use them.
# Sets CUDAToolkit_ROOT_DIR, CUDAToolkit_INCLUDE_DIRS, CUDAToolkit_VERSION,
# CUDAToolkit_NVCC_EXECUTABLE and the imported targets CUDA::nvrtc, CUDA::curand (when found) and
# CUDA::cuda_driver (the toolkit's stub libcuda, for the raw benchmark baselines only).
# CUPLUG_CUDA_DEFAULT_ROOTS (default /usr/local/cuda) is the last place looked; tests change it.
set(CUPLUG_CUDA_DEFAULT_ROOTS "/usr/local/cuda" CACHE STRING
  "Toolkit folders looked in after CUDAToolkit_ROOT, CUDA_PATH, CUDA_HOME, CUDA_ROOT and nvcc")

# The candidate roots, in order, each with where it came from.
set(_cuplug_cuda_roots)
set(_cuplug_cuda_tried)
macro(_cuplug_cuda_candidate dir origin)
  if(NOT "${dir}" STREQUAL "")
    list(APPEND _cuplug_cuda_roots "${dir}")
    list(APPEND _cuplug_cuda_tried "${origin}=${dir}")
  endif()
endmacro()
_cuplug_cuda_candidate("${CUDAToolkit_ROOT}" "CUDAToolkit_ROOT")
foreach(_var CUDAToolkit_ROOT CUDA_PATH CUDA_HOME CUDA_ROOT)
  _cuplug_cuda_candidate("$ENV{${_var}}" "environment ${_var}")
endforeach()
if(NOT _cuplug_cuda_tried)
  list(APPEND _cuplug_cuda_tried "CUDAToolkit_ROOT, CUDA_PATH, CUDA_HOME, CUDA_ROOT (none set)")
endif()
find_program(_cuplug_nvcc_on_path nvcc NO_CACHE NO_PACKAGE_ROOT_PATH NO_CMAKE_PATH
  NO_CMAKE_ENVIRONMENT_PATH NO_CMAKE_SYSTEM_PATH NO_CMAKE_INSTALL_PREFIX)
if(_cuplug_nvcc_on_path)
  # The folder above bin/ as PATH names it, then with links resolved (/usr/bin/nvcc may be a link
  # into a toolkit).
  file(REAL_PATH "${_cuplug_nvcc_on_path}" _nvcc_real)
  foreach(_nvcc "${_cuplug_nvcc_on_path}" "${_nvcc_real}")
    get_filename_component(_nvcc_root "${_nvcc}" DIRECTORY)
    get_filename_component(_nvcc_root "${_nvcc_root}" DIRECTORY)
    _cuplug_cuda_candidate("${_nvcc_root}" "nvcc on PATH")
  endforeach()
else()
  list(APPEND _cuplug_cuda_tried "nvcc on PATH (none)")
endif()
foreach(_dir IN LISTS CUPLUG_CUDA_DEFAULT_ROOTS)
  _cuplug_cuda_candidate("${_dir}" "default")
endforeach()

# The first root with cuda.h (in include/ or, for NVIDIA's cross layout, targets/<arch>/include).
set(CUDAToolkit_ROOT_DIR "")
foreach(_root IN LISTS _cuplug_cuda_roots)
  file(GLOB _cuplug_cuda_h "${_root}/include/cuda.h" "${_root}/targets/*-linux/include/cuda.h")
  if(_cuplug_cuda_h)
    set(CUDAToolkit_ROOT_DIR "${_root}")
    list(GET _cuplug_cuda_h 0 _cuda_h)
    get_filename_component(CUDAToolkit_INCLUDE_DIRS "${_cuda_h}" DIRECTORY)
    break()
  endif()
  list(FIND _cuplug_cuda_roots "${_root}" _i)
  list(GET _cuplug_cuda_tried ${_i} _origin)
  if(NOT _origin MATCHES "^(default|nvcc on PATH)")
    message(WARNING "cuplug: ${_origin} holds no CUDA toolkit (no include/cuda.h): ignored")
  endif()
endforeach()
if(NOT CUDAToolkit_ROOT_DIR)
  list(JOIN _cuplug_cuda_tried ", " _tried)
  message(FATAL_ERROR "cuplug: no CUDA toolkit found (looked for include/cuda.h in: ${_tried}).\n"
    "Install the CUDA toolkit 13 (NVIDIA's package cuda-toolkit-13-0, or the runfile from "
    "https://developer.nvidia.com/cuda-downloads); cuplug needs its headers and, for its "
    "compiler and RNG plugins, NVRTC, nvcc and cuRAND. If it is installed somewhere other than "
    "/usr/local/cuda, say where: `CUDA_PATH=/opt/cuda-13.0 pip install .` or "
    "`cmake -DCUDAToolkit_ROOT=/opt/cuda-13.0 ...` (or put its bin/ with nvcc on PATH). No GPU "
    "or driver is needed to build.")
endif()

file(STRINGS "${CUDAToolkit_INCLUDE_DIRS}/cuda.h" _line REGEX "^#define CUDA_VERSION [0-9]+")
string(REGEX REPLACE "^#define CUDA_VERSION ([0-9]+).*" "\\1" _v "${_line}")
if(NOT _v MATCHES "^[0-9]+$")
  message(FATAL_ERROR "cuplug: ${CUDAToolkit_INCLUDE_DIRS}/cuda.h has no CUDA_VERSION line: "
    "is it a CUDA toolkit's? Set CUDAToolkit_ROOT (or CUDA_PATH) to the toolkit's folder")
endif()
math(EXPR _major "${_v} / 1000")
math(EXPR _minor "(${_v} % 1000) / 10")
set(CUDAToolkit_VERSION "${_major}.${_minor}")

# The rest from the same toolkit only: headers and libraries of two toolkits must not mix.
set(_cuplug_cuda_libdirs lib64 lib "lib/${CMAKE_LIBRARY_ARCHITECTURE}" targets/x86_64-linux/lib
  targets/sbsa-linux/lib)
find_program(CUDAToolkit_NVCC_EXECUTABLE nvcc PATHS "${CUDAToolkit_ROOT_DIR}/bin" NO_DEFAULT_PATH
  NO_CACHE)
foreach(_lib nvrtc curand)
  find_library(CUDA_${_lib}_LIBRARY ${_lib} PATHS "${CUDAToolkit_ROOT_DIR}"
    PATH_SUFFIXES ${_cuplug_cuda_libdirs} NO_DEFAULT_PATH NO_CACHE)
  # NVIDIA's pip wheels (site-packages/nvidia/cu13) ship only the versioned file, libnvrtc.so.13.
  foreach(_dir IN LISTS _cuplug_cuda_libdirs)
    if(NOT CUDA_${_lib}_LIBRARY)
      file(GLOB _versioned "${CUDAToolkit_ROOT_DIR}/${_dir}/lib${_lib}.so.[0-9]*")
      if(_versioned)
        list(SORT _versioned)
        list(GET _versioned 0 CUDA_${_lib}_LIBRARY)
      endif()
    endif()
  endforeach()
  if(CUDA_${_lib}_LIBRARY AND NOT TARGET CUDA::${_lib})
    add_library(CUDA::${_lib} SHARED IMPORTED)
    set_target_properties(CUDA::${_lib} PROPERTIES IMPORTED_LOCATION "${CUDA_${_lib}_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${CUDAToolkit_INCLUDE_DIRS}")
  endif()
endforeach()
find_library(CUDA_cuda_driver_LIBRARY cuda PATHS "${CUDAToolkit_ROOT_DIR}"
  PATH_SUFFIXES lib64/stubs lib/stubs targets/x86_64-linux/lib/stubs NO_DEFAULT_PATH NO_CACHE)
if(CUDA_cuda_driver_LIBRARY AND NOT TARGET CUDA::cuda_driver)
  add_library(CUDA::cuda_driver SHARED IMPORTED)
  set_target_properties(CUDA::cuda_driver PROPERTIES
    IMPORTED_LOCATION "${CUDA_cuda_driver_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDAToolkit_INCLUDE_DIRS}")
endif()
set(_cuplug_cuda_parts)
foreach(_part CUDAToolkit_NVCC_EXECUTABLE CUDA_nvrtc_LIBRARY CUDA_curand_LIBRARY)
  if(NOT ${_part})
    list(APPEND _cuplug_cuda_parts "no ${_part}")
  endif()
endforeach()
list(JOIN _cuplug_cuda_parts ", " _missing)
if(_missing)
  set(_missing "; ${_missing}")
endif()
message(STATUS "cuplug: CUDA toolkit ${CUDAToolkit_VERSION} in ${CUDAToolkit_ROOT_DIR} "
  "(headers ${CUDAToolkit_INCLUDE_DIRS}${_missing})")
