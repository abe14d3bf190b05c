// The compiler's public door: request checks and foreign-exception translation for every call.
#include <cuplug/compiler.hpp>
#include <cuplug/compiler_support.hpp>
#include <cuplug/errors.hpp>

#include "foreign_exceptions.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace cuplug {
namespace {

// Compilers read text as C strings: a NUL would silently end it there.
void refuse_nul(const std::string &text, const std::string &what) {
  auto at = text.find('\0');
  if (at == std::string::npos)
    return;
  auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  throw std::invalid_argument(what + " contains a NUL byte (at offset " + std::to_string(at) +
                              ", line " + std::to_string(line) +
                              "); a compiler would read it only up to there: remove it");
}

void refuse_nul(const std::vector<std::string> &texts, const std::string &what) {
  for (const auto &t : texts)
    refuse_nul(t, what + " '" + t.substr(0, t.find('\0')) + "...'");
}

} // namespace

const char *to_string(image_format format) noexcept {
  switch (format) {
  case image_format::cubin:
    return "cubin";
  case image_format::ptx:
    return "ptx";
  case image_format::fatbin:
    return "fatbin";
  case image_format::ltoir:
    return "ltoir";
  }
  return "unknown";
}

double compile_timeout(const std::string &option) {
  std::string value = option, where = "the compiler option timeout";
  if (value.empty()) {
    const char *env = std::getenv("CUPLUG_COMPILE_TIMEOUT");
    if (env == nullptr || *env == '\0')
      return 600;
    value = env;
    where = "CUPLUG_COMPILE_TIMEOUT";
  }
  char *end = nullptr;
  double seconds = std::strtod(value.c_str(), &end);
  while (end && (*end == ' ' || *end == 's'))
    ++end;
  if (end == value.c_str() || (end && *end != '\0') || !std::isfinite(seconds) || seconds < 0)
    throw config_error(where + "='" + value +
                       "' is not a time limit; give seconds, e.g. 600, or 0 for no limit");
  return seconds;
}

std::string make_work_directory(const std::string &wanted, const std::string &prefix) {
  if (!wanted.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(wanted, ec);
    struct stat st {};
    if (::stat(wanted.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw config_error("cannot use " + wanted + " for the compiler's files: " +
                         (ec ? ec.message() : std::string("not a directory")));
    return wanted;
  }
  const char *base = std::getenv("TMPDIR");
  const bool from_env = base && *base;
  std::string dir = from_env ? base : "/tmp";
  std::string tmpl = dir + "/" + prefix + "XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    int e = errno;
    throw config_error("cannot create a private directory for the compiler's files in " + dir +
                       (from_env ? " (from $TMPDIR)" : "") + ": " + std::strerror(e) +
                       (from_env ? "; set TMPDIR to a directory you can write to" : ""));
  }
  return tmpl;
}

std::string source_file_name(const std::string &source_name) {
  std::string name = std::filesystem::path(source_name).filename().string();
  if (name.empty() || name == "." || name == "..")
    name = "kernel.cu";
  if (name.size() < 3 || name.compare(name.size() - 3, 3, ".cu") != 0)
    name += ".cu";
  return name;
}

compiled_image compiler::compile(const compile_request &request) {
  if (request.source.find_first_not_of(" \t\r\n") == std::string::npos)
    throw std::invalid_argument("cannot compile an empty source");
  refuse_nul(request.source, "the source");
  refuse_nul(request.source_name, "the source name");
  refuse_nul(request.options, "the option");
  refuse_nul(request.include_dirs, "the include dir");
  refuse_nul(request.name_expressions, "the name expression");
  refuse_nul(request.arch, "the arch");
  refuse_nul(request.code, "the code");
  refuse_nul(request.program, "the program");
  refuse_nul(request.keep_directory, "the keep directory");
  try {
    compiled_image out = do_compile(request);
    if (out.data.empty())
      throw plugin_error("compiler '" + backend_name() + "' produced an empty " +
                         to_string(request.target) + " without reporting an error");
    return out;
  } catch (...) {
    detail::rethrow_as_core_error(*this, "compiler", "compile");
  }
}

std::string compiler::version() const {
  try {
    return do_version();
  } catch (...) {
    detail::rethrow_as_core_error(*this, "compiler", "version");
  }
}

std::vector<int> compiler::supported_archs() const {
  try {
    return do_supported_archs();
  } catch (...) {
    detail::rethrow_as_core_error(*this, "compiler", "supported_archs");
  }
}

} // namespace cuplug
