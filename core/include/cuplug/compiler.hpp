// The compiler interface: CUDA C++ source in, cubin / PTX / fatbin out, with the log.
#pragma once

#include <cuplug/plugin_abi.hpp>

#include <cuplug/plugin.hpp>

#include <map>
#include <string>
#include <vector>

namespace cuplug {

enum class image_format { cubin, ptx, fatbin, ltoir };
const char *to_string(image_format format) noexcept;

struct compile_request {
  std::string source;
  std::string source_name = "kernel.cu";        // appears in diagnostics
  std::vector<std::string> options;             // compiler flags, as the user gave them
  std::vector<std::string> include_dirs;
  std::string arch;                             // "sm_90", "compute_90"; empty = plugin default
  image_format target = image_format::cubin;
  std::vector<std::string> name_expressions;    // C++ names to lower ("kernel<float>")
  bool relocatable = false;                     // -rdc for linking
};

struct compiled_image {
  image_format format = image_format::cubin;
  std::string data;                                    // the binary / PTX text
  std::string log;                                     // diagnostics of a successful compile
  std::map<std::string, std::string> lowered_names;   // name expression -> mangled name
  std::string command;                                 // what was run, for messages
};

// compile() throws compile_error (with the log) when the source does not compile, and
// config_error for options the backend cannot take. A plugin's other exceptions (not
// cuplug::error) arrive as plugin_error naming the backend, from every call. Thread-safe.
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
