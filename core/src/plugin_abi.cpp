// The handshake's ABI comparisons: C++ ABI tags, libstdc++ symbol versions, the driver table.
#include "plugin_abi_checks.hpp"

#include <array>
#include <cstdio>
#include <vector>

namespace cuplug::detail {
namespace {

bool unidentified(std::string_view tag) { return tag.find("unknown") != std::string_view::npos; }

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  for (std::size_t at = 0;;) {
    const std::size_t next = text.find(sep, at);
    out.emplace_back(text.substr(at, next - at));
    if (next == std::string_view::npos)
      return out;
    at = next + 1;
  }
}

// A tag of the first format ("gcc-cxxabi1017-libstdc++-cxx11abi1-x86_64", written by plugins built
// before the compiler left the tag): compiler, C++ ABI version, standard library, architecture.
// The compiler is dropped; that format only knew LP64 targets.
abi_parts parse_legacy(std::string_view tag) {
  abi_parts p{"cxxabi-unknown", "stdlib-unknown", "arch-unknown"};
  const std::size_t cxx = tag.find("-cxxabi");
  if (cxx == std::string_view::npos)
    return p;
  std::string_view rest = tag.substr(cxx + 7);
  const std::size_t dash = rest.find('-');
  if (dash == std::string_view::npos)
    return p;
  const std::string digits(rest.substr(0, dash));
  int version = 0;
  if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos)
    version = std::stoi(digits);
  if (version >= 1002 && version < 2000)
    p.cxxabi = "itanium";
  rest = rest.substr(dash + 1);
  const std::size_t last = rest.rfind('-');
  if (last == std::string_view::npos)
    return p;
  std::string stdlib(rest.substr(0, last)), arch(rest.substr(last + 1));
  if (stdlib.rfind("libc++", 0) == 0 && stdlib.find("libc++-abi") != 0)
    stdlib = "libc++-abi" + stdlib.substr(6);
  p.stdlib = stdlib;
  if (arch == "x86_64" || arch == "aarch64")
    p.arch = arch + "-lp64";
  return p;
}

// What a part means, in words, for the refusal.
std::string describe_stdlib(const std::string &s) {
  if (s == "libstdc++-cxx11abi1")
    return "libstdc++ with the C++11 std::string and std::list (_GLIBCXX_USE_CXX11_ABI=1)";
  if (s == "libstdc++-cxx11abi0")
    return "libstdc++ with the old, pre-C++11 std::string and std::list "
           "(_GLIBCXX_USE_CXX11_ABI=0)";
  if (s.rfind("libc++-abi", 0) == 0)
    return "LLVM libc++ (ABI version " + s.substr(10) + ")";
  return "an unidentified standard library ('" + s + "')";
}

// How to build against the core's standard library.
std::string how_to_get_stdlib(const std::string &s) {
  if (s == "libstdc++-cxx11abi1")
    return "build it with g++ (any version from 5 on) or clang++ against libstdc++ (no "
           "-stdlib=libc++) and without -D_GLIBCXX_USE_CXX11_ABI=0";
  if (s == "libstdc++-cxx11abi0")
    return "build it with g++ or clang++ against libstdc++ with -D_GLIBCXX_USE_CXX11_ABI=0";
  if (s.rfind("libc++-abi", 0) == 0)
    return "build it with clang++ -stdlib=libc++";
  return "build it with the standard library cuplug was built with";
}

std::string describe_arch(const std::string &a) {
  const std::size_t dash = a.rfind('-');
  if (dash == std::string::npos)
    return a;
  const std::string model = a.substr(dash + 1);
  return a.substr(0, dash) + (model == "lp64"    ? " with 64-bit pointers (LP64)"
                              : model == "ilp32" ? " with 32-bit pointers (ILP32)"
                                                 : " (data model " + model + ")");
}

} // namespace

abi_parts parse_abi_tag(std::string_view tag) {
  const std::vector<std::string> parts = split(tag, '/');
  if (parts.size() == 3)
    return {parts[0], parts[1], parts[2]};
  return parse_legacy(tag);
}

std::string core_compiler() {
#if defined(__clang__)
  return "Clang " __clang_version__;
#elif defined(__GNUC__)
  return "GCC " CUPLUG_ABI_STR(__GNUC__) "." CUPLUG_ABI_STR(__GNUC_MINOR__) "." CUPLUG_ABI_STR(
      __GNUC_PATCHLEVEL__);
#else
  return "an unidentified compiler";
#endif
}

std::string abi_tag_problem(std::string_view plugin_tag, std::string_view core_tag) {
  const std::string plugin(plugin_tag), core(core_tag);
  if (unidentified(core))
    return "cannot be checked: this cuplug was built with a C++ ABI, standard library or "
           "architecture it cannot identify (ABI tag '" +
           core +
           "'), and an unidentified ABI never matches, so no plugin is loaded: rebuild cuplug "
           "with GCC or Clang on x86_64 or aarch64";
  const abi_parts p = parse_abi_tag(plugin), c = parse_abi_tag(core);
  const std::string found = "was built with ABI tag '" + plugin + "'";
  const std::string cuplug_has =
      "this cuplug has '" + core + "' (built by " + core_compiler() + ")";
  if (unidentified(p.cxxabi) || unidentified(p.stdlib) || unidentified(p.arch))
    return found +
           ": its C++ ABI, standard library or architecture could not be identified, and an "
           "unidentified ABI never matches (not even an identical one); " +
           cuplug_has + ": build it with GCC or Clang for " + describe_arch(c.arch) + " against " +
           describe_stdlib(c.stdlib) + " (ABI tag '" + core + "')";
  std::vector<std::string> differences;
  if (p.cxxabi != c.cxxabi)
    differences.push_back("the C++ ABI is '" + p.cxxabi + "', not '" + c.cxxabi + "'");
  if (p.stdlib != c.stdlib)
    differences.push_back("its standard library is " + describe_stdlib(p.stdlib) +
                          ", cuplug's is " + describe_stdlib(c.stdlib) +
                          ": std::string, containers and exceptions would not cross between "
                          "them");
  if (p.arch != c.arch)
    differences.push_back("it targets " + describe_arch(p.arch) + ", cuplug " +
                          describe_arch(c.arch));
  if (differences.empty())
    return {};
  std::string out = found + ", " + cuplug_has + ": ";
  for (std::size_t i = 0; i < differences.size(); ++i)
    out += (i ? "; " : "") + differences[i];
  out += ". The compiler's brand and version need not match; ";
  out += p.stdlib != c.stdlib ? how_to_get_stdlib(c.stdlib)
                              : "build it with GCC or Clang for " + describe_arch(c.arch);
  return out;
}

std::string missing_symbol_version_advice(std::string_view dlerror_text,
                                          std::string_view newest_glibcxx) {
  // glibc: "<lib>: version `GLIBCXX_3.4.32' not found (required by <plugin>)".
  const std::string_view open = "version `", close = "' not found";
  const std::size_t at = dlerror_text.find(open);
  if (at == std::string_view::npos)
    return {};
  const std::size_t end = dlerror_text.find(close, at + open.size());
  if (end == std::string_view::npos)
    return {};
  const std::string version(dlerror_text.substr(at + open.size(), end - at - open.size()));
  const bool glibcxx = version.rfind("GLIBCXX_", 0) == 0, cxxabi = version.rfind("CXXABI_", 0) == 0;
  if (!glibcxx && !cxxabi)
    return {};
  // libstdc++'s manual (abi.html, "symbol versioning"): the release that introduced a version.
  static constexpr std::array<std::pair<const char *, const char *>, 7> introduced{{
      {"GLIBCXX_3.4.29", "GCC 11.1"},
      {"GLIBCXX_3.4.30", "GCC 12.1"},
      {"GLIBCXX_3.4.31", "GCC 13.1"},
      {"GLIBCXX_3.4.32", "GCC 13.2"},
      {"GLIBCXX_3.4.33", "GCC 14.1"},
      {"CXXABI_1.3.14", "GCC 13.1"},
      {"CXXABI_1.3.15", "GCC 14.1"},
  }};
  std::string from = "a newer GCC";
  for (const auto &[name, gcc] : introduced)
    if (version == name)
      from = std::string(gcc) + " or newer";
  std::string out = ": the plugin was built by a newer GCC than the libstdc++ this process runs "
                    "(it needs " +
                    version + ", from " + from + "; the libstdc++ loaded here";
  out += newest_glibcxx.empty() ? std::string(" is older")
                                : " provides up to " + std::string(newest_glibcxx);
  out += "). Rebuild the plugin with " + core_compiler() +
         " (the compiler cuplug was built with) or an older GCC or Clang using this libstdc++, "
         "or run with a libstdc++.so.6 at least as new as that GCC's (for example its lib64 "
         "folder first on LD_LIBRARY_PATH)";
  return out;
}

std::string driver_table_problem(std::uint32_t plugin_entries,
                                 std::string_view plugin_cuplug_version,
                                 std::uint32_t core_entries) {
  if (plugin_entries <= core_entries)
    return {};
  const std::string built_with = plugin_cuplug_version.empty()
                                     ? std::string("a newer cuplug")
                                     : "cuplug " + std::string(plugin_cuplug_version);
  return "was built against " + built_with + ", whose CUDA driver table has " +
         std::to_string(plugin_entries) +
         " entry points; this cuplug (" CUPLUG_VERSION_STRING ") has " +
         std::to_string(core_entries) +
         ", so the plugin could call entry points that are not there: rebuild it against "
         "cuplug " CUPLUG_VERSION_STRING ", or upgrade cuplug";
}

} // namespace cuplug::detail
