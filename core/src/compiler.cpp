// The compiler's public door: request checks and foreign-exception translation for every call.
#include <cuplug/compiler.hpp>

#include "foreign_exceptions.hpp"

#include <stdexcept>

namespace cuplug {

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

compiled_image compiler::compile(const compile_request &request) {
  if (request.source.find_first_not_of(" \t\r\n") == std::string::npos)
    throw std::invalid_argument("cannot compile an empty source");
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
