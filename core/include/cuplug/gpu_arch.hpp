// GPU architectures: every spelling of one, and the arch to compile for a device.
#pragma once

#include <string>
#include <vector>

namespace cuplug {

// "sm_90a", "compute_90", "lto_90", "90", "9.0" -> {90, "a"}. Throws config_error otherwise.
// (Shared by the compiler plugins and the Python layer so that every spelling means the same.)
struct gpu_arch {
  int number = 0;
  std::string suffix; // "", "a" (arch-specific) or "f" (family)
};
[[nodiscard]] gpu_arch parse_arch(const std::string &text);

// The arch to compile for a device of `device_arch` (e.g. 90) with a compiler that supports
// `supported` (ascending): the device's own when supported, else the highest supported one below
// it (`clamped`). When that is of an older major version no cubin of it loads on the device, so
// `use_ptx` asks for PTX, which the driver compiles for the device. Throws config_error when the
// device is older than every supported arch, or `supported` is empty.
struct arch_choice {
  int arch = 0;
  bool clamped = false;
  bool use_ptx = false;
};
[[nodiscard]] arch_choice choose_arch(int device_arch, const std::vector<int> &supported,
                                      const std::string &compiler_id = "the compiler");

// A compiler plugin's check of an arch it was asked for (`what`: "arch", "code"): config_error
// "<compiler_id> cannot compile for <what> sm_90a; it supports sm_75, ...: ask for one of those"
// unless `supported` (ascending) holds its number. An empty `supported` (not known) passes all.
void check_supported_arch(const gpu_arch &arch, const std::vector<int> &supported,
                          const std::string &compiler_id, const char *what);

} // namespace cuplug
