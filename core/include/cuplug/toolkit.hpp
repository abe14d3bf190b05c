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
  int cuda_major = 0; // the CUDA major version it holds (toolkit_cuda_major); 0: unknown
};

// The CUDA major version a toolkit folder holds: from its version.json (a toolkit's installer
// writes one), else from the soname of a libcudart / libnvrtc in it, else from NVIDIA's wheel
// layouts (site-packages/nvidia/cu13 holds CUDA 13; site-packages/nvidia/<component>, such as
// nvidia/cuda_nvrtc, is the layout of the CUDA 12 wheels); 0 when none says.
int toolkit_cuda_major(const std::string &root);

// Which CUDA major version's toolkit to use, and why. A CUDA 12.x driver cannot load the cubins
// or PTX a CUDA 13 compiler makes, so with a driver loaded it is the driver's major version
// ("the driver is CUDA 12.4"); $CUPLUG_TOOLKIT_MAJOR (12 or 13) overrides that (a CUDA 13
// driver runs CUDA 12 code, so the CUDA 12 path can be tried on one); with no usable driver it
// is 0: any toolkit, the build's major version first. A bad $CUPLUG_TOOLKIT_MAJOR is warned
// about, naming it, and ignored.
struct toolkit_choice {
  int major = 0;
  std::string why;
};
toolkit_choice wanted_toolkit();

// The folders to look in, in order: $CUDAToolkit_ROOT, $CUDA_PATH, $CUDA_HOME, $CUDA_ROOT (each
// that is set); the folders in $CUPLUG_TOOLKIT_WHEELS (NVIDIA's pip wheels of the running Python,
// such as site-packages/nvidia/cu13 or nvidia/cuda_nvrtc, which `import cuplug` sets); the folder
// above the bin/ of the first nvcc on PATH (as PATH names it, then with links resolved);
// /usr/local/cuda; the toolkit cuplug was built with. Each folder once, at its first place; only
// folders that exist. Folders of a newer CUDA major version than wanted_toolkit()'s are left out
// (`all` keeps them): a CUDA 12 driver cannot load what CUDA 13 makes, while a CUDA 13 driver
// runs what CUDA 12 makes. The environment is read at each call.
std::vector<toolkit_root> toolkit_roots(bool all = false);

// The folders of `root` that may hold its libraries, in the order looked at.
std::vector<std::string> toolkit_library_dirs(const std::string &root);

// The folder of `root` holding cuda.h (include/ or targets/<arch>-linux/include/), or "".
std::string toolkit_include_dir(const std::string &root);

// Loads, once per process, each toolkit library the built-in plugins link (libnvrtc, libcurand),
// from the first folder of toolkit_roots() that has it, so that a plugin's dependency resolves to
// that copy instead of to what the dynamic loader alone would find (nothing, for pip wheels). A
// library no root has is left to the dynamic loader. Called before the first plugin is loaded.
// A library named by CUDA's major version (libnvrtc.so.13) is looked for as the wanted major
// version's (libnvrtc.so.12 for a CUDA 12 driver), then older ones down to 12. Returns one line
// per library: "libnvrtc.so.13: <path> (<origin>)", or "...: left to the dynamic loader", after a
// first line "toolkit: CUDA <major> (<why>)" (what `python -m cuplug info` shows).
const std::vector<std::string> &preload_toolkit_libraries();

} // namespace cuplug
