// Typed errors owned by the core: every plugin throws these, Python sees PyCUDA's classes.
#pragma once

#include <cuplug/plugin_abi.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace cuplug {

// Base of everything cuplug throws on purpose.
class CUPLUG_API error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// How PyCUDA sorts CUresults into exception classes (spec §1.1).
enum class error_class { logic, memory, launch, runtime, unknown };

// A failed driver call. what() is PyCUDA's "<routine> failed: <description>[ - <extra>]".
class CUPLUG_API cuda_error : public error {
public:
  cuda_error(const char *routine, int code, const std::string &extra = {});
  int code() const noexcept { return code_; }
  const std::string &routine() const noexcept { return routine_; }
  error_class classification() const noexcept;

private:
  int code_;
  std::string routine_;
};

// CUDA_ERROR_OUT_OF_MEMORY with what the allocator knew when it gave up.
class CUPLUG_API out_of_memory : public cuda_error {
public:
  out_of_memory(const char *routine, std::size_t requested, std::size_t in_use, std::size_t held,
                std::size_t limit, const std::string &extra = {});
  std::size_t requested() const noexcept { return requested_; }

private:
  std::size_t requested_;
};

// A compiler rejected the source; log holds its diagnostics, command the invocation/options.
class CUPLUG_API compile_error : public error {
public:
  compile_error(const std::string &msg, std::string log, std::string command);
  const std::string &log() const noexcept { return log_; }
  const std::string &command() const noexcept { return command_; }

private:
  std::string log_;
  std::string command_;
};

// A plugin could not be found, loaded, trusted or created; or it threw something foreign.
class CUPLUG_API plugin_error : public error {
public:
  using error::error;
};

// An optional operation the chosen plugin does not provide.
class CUPLUG_API not_supported : public error {
public:
  using error::error;
};

// Unknown backend names, bad option values, unreadable configuration.
class CUPLUG_API config_error : public error {
public:
  using error::error;
};

// PyCUDA's sorting of a CUresult into its exception classes.
error_class classify(int cuda_result) noexcept;

// Name and description of a CUresult; uses the driver's strings when it is loaded,
// a built-in table otherwise (so messages are right on machines without a driver).
std::string error_name(int cuda_result);
std::string error_string(int cuda_result);

} // namespace cuplug
