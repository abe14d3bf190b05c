// nvcc's option spellings turned into NVRTC's (see nvcc_options.hpp).
#include "nvcc_options.hpp"

#include <cctype>
#include <cstring>

namespace cuplug::plugins {

namespace {

bool starts_with(const std::string &s, const char *prefix) { return s.rfind(prefix, 0) == 0; }

bool one_of(const std::string &s, std::initializer_list<const char *> names) {
  for (const char *n : names)
    if (s == n)
      return true;
  return false;
}

// Host-side options that take a value, as "-x v" or "-x=v" (and -l/-L also as "-lv").
const std::initializer_list<const char *> kDroppedWithValue = {"-Xcompiler",
                                                               "--compiler-options",
                                                               "-ccbin",
                                                               "--compiler-bindir",
                                                               "-Xlinker",
                                                               "--linker-options",
                                                               "-Xnvlink",
                                                               "--nvlink-options",
                                                               "--threads",
                                                               "-t",
                                                               "-l",
                                                               "--library",
                                                               "-L",
                                                               "--library-path",
                                                               "--default-stream",
                                                               "-default-stream",
                                                               "-Xarchive",
                                                               "--archive-options",
                                                               "-odir",
                                                               "--output-directory",
                                                               "-o",
                                                               "--output-file",
                                                               "--keep-dir",
                                                               "-keep-dir"};

const std::initializer_list<const char *> kDroppedFlags = {"-g",
                                                           "--debug",
                                                           "-m64",
                                                           "--machine",
                                                           "-c",
                                                           "--compile",
                                                           "-cubin",
                                                           "--cubin",
                                                           "-ptx",
                                                           "--ptx",
                                                           "-fatbin",
                                                           "--fatbin",
                                                           "-keep",
                                                           "--keep",
                                                           "-shared",
                                                           "--shared",
                                                           "-src-in-ptx",
                                                           "--source-in-ptx",
                                                           "--extended-lambda",
                                                           "-extended-lambda",
                                                           "--expt-extended-lambda",
                                                           "-expt-extended-lambda",
                                                           "-Wno-deprecated-gpu-targets",
                                                           "--Wno-deprecated-gpu-targets",
                                                           "-lib",
                                                           "--lib",
                                                           "-dlink",
                                                           "--device-link",
                                                           "-rdc=false",
                                                           "--relocatable-device-code=false"};

// "arch=compute_90,code=sm_90", "arch=compute_90,code=[sm_90,compute_90]", "sm_90": the first
// real (sm_) code, else the first virtual one; empty when none is named. Hand-parsed: std::regex
// instantiations in a plugin may bind to another library's copies (PyTorch's) and crash.
std::string code_of(const std::string &spec) {
  const auto at = spec.find("code=");
  const std::string part = at == std::string::npos ? spec : spec.substr(at + 5);
  std::string first_virtual;
  std::size_t i = 0;
  while (i < part.size()) {
    const std::size_t end = part.find_first_of(",[]= ", i);
    const std::string token = part.substr(i, end == std::string::npos ? end : end - i);
    const bool real = starts_with(token, "sm_");
    const std::size_t digits = real ? 3 : starts_with(token, "compute_") ? 8 : 0;
    if (digits && token.size() > digits &&
        std::isdigit(static_cast<unsigned char>(token[digits]))) {
      if (real)
        return token;
      if (first_virtual.empty())
        first_virtual = token;
    }
    if (end == std::string::npos)
      break;
    i = end + 1;
  }
  return first_virtual;
}

} // namespace

const char *nvcc_options_rules_version() { return "nvcc-options 1"; }

std::vector<std::string> nvrtc_options_from_nvcc(const std::vector<std::string> &options) {
  std::vector<std::string> out;
  bool arch_given = false;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string &o = options[i];
    const bool has_next = i + 1 < options.size();
    // Options with a value, in both spellings.
    bool dropped = false;
    for (const char *n : kDroppedWithValue) {
      const std::size_t len = std::strlen(n);
      if (o == n) {
        i += has_next ? 1 : 0;
        dropped = true;
      } else if (starts_with(o, n) && o[len] == '=') {
        dropped = true;
      } else if (one_of(n, {"-l", "-L"}) && starts_with(o, n) && o.size() > 2 &&
                 !one_of(o, {"-lineinfo", "-line-info"})) { // -lcudadevrt, -L/usr/lib
        dropped = true;
      }
      if (dropped)
        break;
    }
    if (dropped || one_of(o, kDroppedFlags))
      continue;
    if (o.size() == 3 && starts_with(o, "-O") && o[2] >= '0' && o[2] <= '9')
      continue; // host optimisation level; device code is optimised by default
    if (one_of(o, {"--use-fast-math", "-use-fast-math"})) {
      out.emplace_back("--use_fast_math");
    } else if (one_of(o, {"-line-info", "--line-info"})) {
      out.emplace_back("-lineinfo");
    } else if (one_of(o, {"-res-usage", "--resource-usage"})) {
      out.insert(out.end(), {"-Xptxas", "-v"});
    } else if (one_of(o, {"--expt-relaxed-constexpr", "-expt-relaxed-constexpr"})) {
      out.emplace_back("-default-device");
    } else if (one_of(o, {"-isystem", "--system-include"}) && has_next) {
      out.push_back("-I" + options[++i]);
    } else if (starts_with(o, "-isystem=") || starts_with(o, "--system-include=")) {
      out.push_back("-I" + o.substr(o.find('=') + 1));
    } else if (one_of(o, {"-gencode", "--generate-code", "-code", "--gpu-code"}) && has_next) {
      std::string c = code_of(options[++i]);
      if (!c.empty() && !arch_given)
        out.push_back("-arch=" + c);
      arch_given = arch_given || !c.empty();
    } else if (starts_with(o, "-gencode=") || starts_with(o, "--generate-code=") ||
               starts_with(o, "-code=") || starts_with(o, "--gpu-code=")) {
      std::string c = code_of(o.substr(o.find('=') + 1));
      if (!c.empty() && !arch_given)
        out.push_back("-arch=" + c);
      arch_given = arch_given || !c.empty();
    } else {
      out.push_back(o);
    }
  }
  return out;
}

} // namespace cuplug::plugins
