// Turns whatever a plugin threw into a core error type, once, for every interface.
#pragma once

#include <cuplug/errors.hpp>
#include <cuplug/plugin.hpp>

#include <exception>
#include <new>
#include <stdexcept>
#include <string>

namespace cuplug::detail {

// Call inside a catch(...) block. Core errors and std::invalid_argument (bad input, shown to
// Python users as ValueError) pass through; anything else becomes plugin_error naming the
// backend and the operation.
[[noreturn]] inline void rethrow_as_core_error(const plugin_object &p, const char *kind,
                                               const char *operation) {
  try {
    throw;
  } catch (const error &) {
    throw;
  } catch (const std::invalid_argument &) {
    throw;
  } catch (const std::exception &e) {
    throw plugin_error(std::string(kind) + " '" + p.backend_name() + "' failed in " + operation +
                       ": " + e.what());
  } catch (...) {
    throw plugin_error(std::string(kind) + " '" + p.backend_name() + "' failed in " + operation +
                       " with an exception that is not a std::exception");
  }
}

} // namespace cuplug::detail
