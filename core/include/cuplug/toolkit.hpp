// The one search order for the CUDA toolkit (docs/install.md, "Where cuplug looks for the CUDA
// toolkit"): where nvcc, NVRTC's headers and the toolkit libraries plugins link are looked for, by
// the core, the plugins and (through cuplug._core) the Python package.
#pragma once

#include <string>
#include <vector>

namespace cuplug {

// A folder that may hold a toolkit (bin/, include/, lib64/ or lib/), and why it is looked in:
// "$CUDA_PATH", "pip wheel", "nvcc on PATH", "default" or "build".
struct toolkit_root {
  std::string path;
  std::string origin;
};

// The folders to look in, in order: $CUDAToolkit_ROOT, $CUDA_PATH, $CUDA_HOME, $CUDA_ROOT (each
// that is set); the folders in $CUPLUG_TOOLKIT_WHEELS (NVIDIA's pip wheels of the running Python,
// such as site-packages/nvidia/cu13, which `import cuplug` sets); the folder above the bin/ of the
// first nvcc on PATH (as PATH names it, then with links resolved); /usr/local/cuda; the toolkit
// cuplug was built with. Each folder once, at its first place; only folders that exist. The
// environment is read at each call.
std::vector<toolkit_root> toolkit_roots();

// The folders of `root` that may hold its libraries, in the order looked at.
std::vector<std::string> toolkit_library_dirs(const std::string &root);

// The folder of `root` holding cuda.h (include/ or targets/<arch>-linux/include/), or "".
std::string toolkit_include_dir(const std::string &root);

// Loads, once per process, each toolkit library the built-in plugins link (libnvrtc, libcurand),
// from the first folder of toolkit_roots() that has it, so that a plugin's dependency resolves to
// that copy instead of to what the dynamic loader alone would find (nothing, for pip wheels). A
// library no root has is left to the dynamic loader. Called before the first plugin is loaded.
// Returns one line per library: "libnvrtc.so.13: <path> (<origin>)", or "...: left to the
// dynamic loader" (what `python -m cuplug info` shows).
const std::vector<std::string> &preload_toolkit_libraries();

} // namespace cuplug
