// The compiler interface: CUDA C++ source in, cubin / PTX / fatbin out, with the log.
#pragma once

#include <cuplug/plugin_abi.hpp>

#include <cuplug/plugin.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace cuplug {

enum class image_format { cubin, ptx, fatbin, ltoir };
const char *to_string(image_format format) noexcept;

// What a compile read besides the request, so that a cache can tell when a stored image is stale.
// Relative paths are relative to the working directory of the compile (a cache checks them
// against its own working directory, as the compiler would resolve them).
struct compile_inputs {
  // False: the compiler cannot tell all it read (`unknown_reason` says why) and the image is not
  // cached. A compiler that reads nothing but the request sets it true with no files.
  bool known = false;
  std::string unknown_reason;
  std::vector<std::string> files;  // read: headers, pre-includes, option files, the program run
  std::vector<std::string> absent; // probed and missing (a file created there would be read)
  std::map<std::string, std::string> environment; // variables read -> value seen ("" if unset)
};

struct compile_request {
  std::string source;
  std::string source_name = "kernel.cu"; // appears in diagnostics
  std::vector<std::string> options;      // compiler flags, as the user gave them
  std::vector<std::string> include_dirs;
  std::string arch; // "sm_90", "compute_90"; empty = plugin default
  std::string code; // real arch of the binary (nvcc -code); "" = arch
  image_format target = image_format::cubin;
  std::vector<std::string> name_expressions; // C++ names to lower ("kernel<float>")
  bool relocatable = false;                  // -rdc for linking
  // These say what is wanted; each compiler maps them to its own flags.
  bool debug = false;         // device debug information (nvcc -G)
  bool keep_files = false;    // leave the compiler's files (never cached)
  std::string keep_directory; // where; "" = a new private temp directory
  std::string program;        // the program to run (PyCUDA nvcc=); "" = own
  // Polled from the compiling thread (about every 0.1 s) by compilers that can stop early: true
  // stops the compile, which then throws compile_error. Not part of any cache key.
  std::function<bool()> cancelled;
};

struct compiled_image {
  image_format format = image_format::cubin;
  std::string data;                                 // the binary / PTX text
  std::string log;                                  // diagnostics of a successful compile
  std::map<std::string, std::string> lowered_names; // name expression -> mangled name
  std::string command;                              // what was run, for messages
  std::string kept_directory;                       // where keep_files left the files
  compile_inputs inputs;                            // what the compile read
};

// compile() throws compile_error (with the log) when the source does not compile, runs out of
// time or is cancelled, config_error for options the backend cannot take, and
// std::invalid_argument for a request no compiler can take (an empty source, a NUL byte in the
// text). A plugin's other exceptions (not cuplug::error) arrive as plugin_error naming the
// backend, from every call. Thread-safe.
class CUPLUG_API compiler : public plugin_object {
public:
  [[nodiscard]] compiled_image compile(const compile_request &request);
  // Identifies the toolchain for cache keys ("nvrtc 13.0").
  [[nodiscard]] std::string version() const;
  // Architectures this compiler can target, ascending (e.g. {75, 80, ..., 120}).
  [[nodiscard]] std::vector<int> supported_archs() const;

private:
  virtual compiled_image do_compile(const compile_request &request) = 0;
  virtual std::string do_version() const = 0;
  virtual std::vector<int> do_supported_archs() const = 0;
};

} // namespace cuplug
