// GPU architectures: parse_arch() reads every spelling of one, choose_arch() clamps to a compiler,
// check_supported_arch() refuses one a compiler cannot target.
#include "compile_cache_detail.hpp"

#include <cuplug/errors.hpp>
#include <cuplug/gpu_arch.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace cuplug {
using detail::starts_with;
using detail::trim;

gpu_arch parse_arch(const std::string &text) {
  std::string t = trim(text);
  std::string digits = t;
  for (const char *prefix : {"sm_", "compute_", "lto_", "sm", "compute"}) {
    if (starts_with(t, prefix)) {
      digits = t.substr(std::strlen(prefix));
      break;
    }
  }
  gpu_arch out;
  auto bad = [&] {
    return config_error("'" + text +
                        "' is not a GPU architecture; use e.g. sm_90, compute_90, 90 or 9.0");
  };
  if (auto dot = digits.find('.'); dot != std::string::npos) { // "9.0" compute capability
    std::string major = digits.substr(0, dot), minor = digits.substr(dot + 1);
    if (major.empty() || minor.size() != 1 || !std::isdigit((unsigned char)minor[0]) ||
        major.find_first_not_of("0123456789") != std::string::npos)
      throw bad();
    out.number = std::stoi(major) * 10 + (minor[0] - '0');
    return out;
  }
  std::size_t n = 0;
  while (n < digits.size() && std::isdigit((unsigned char)digits[n]))
    ++n;
  if (n == 0 || n > 4)
    throw bad();
  out.number = std::stoi(digits.substr(0, n));
  out.suffix = digits.substr(n);
  if (!(out.suffix.empty() || out.suffix == "a" || out.suffix == "f") || out.number < 10)
    throw bad();
  return out;
}

arch_choice choose_arch(int device_arch, const std::vector<int> &supported,
                        const std::string &compiler_id) {
  if (supported.empty())
    throw config_error(compiler_id + " reports no supported GPU architectures");
  auto text = [](int a) { return "sm_" + std::to_string(a); };
  arch_choice c;
  int best = 0;
  for (int a : supported)
    if (a <= device_arch)
      best = std::max(best, a);
  if (best == 0)
    throw config_error("the device's architecture " + text(device_arch) +
                       " is older than the oldest " + compiler_id + " supports (" +
                       text(*std::min_element(supported.begin(), supported.end())) +
                       "); use an older CUDA toolkit, or pass arch= explicitly");
  c.arch = best;
  c.clamped = best != device_arch;
  c.use_ptx = best / 10 != device_arch / 10;
  return c;
}

void check_supported_arch(const gpu_arch &a, const std::vector<int> &supported,
                          const std::string &compiler_id, const char *what) {
  if (supported.empty() ||
      std::find(supported.begin(), supported.end(), a.number) != supported.end())
    return;
  std::string list;
  for (int n : supported)
    list += (list.empty() ? "sm_" : ", sm_") + std::to_string(n);
  throw config_error(compiler_id + " cannot compile for " + what + " sm_" +
                     std::to_string(a.number) + a.suffix + "; it supports " + list +
                     ": ask for one of those");
}

} // namespace cuplug
