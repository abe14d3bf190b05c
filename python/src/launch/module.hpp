// Module: a loaded CUmodule, with the context it lives in and the launcher that loaded it.
#pragma once

#include "driver/context.hpp"
#include "support/convert.hpp"

#include <cuplug/launcher.hpp>
#include <cuplug/registry.hpp>

#include <memory>
#include <string>
#include <vector>

namespace cuplug::python {

// Loaded through a launcher backend (the one selected when it was loaded: every function from it
// launches through the same one). Holds its context, so the context outlives it, and unloads
// under that context when the last reference (a Module or one of its Functions) goes.
class module : public context_dependent {
public:
  // Loads an image (cubin, PTX, fatbin) with the current launcher in the current context.
  // `info_log` receives the JIT's info log when not null. Errors carry the JIT error log.
  static std::shared_ptr<module> load(const void *image, std::size_t bytes,
                                      const std::vector<jit_option> &options,
                                      std::string *info_log);
  static std::shared_ptr<module> load_file(const std::string &path);

  module(context_ptr ctx, plugin_ptr<cuplug::launcher> launcher, CUmodule handle);
  ~module();
  module(const module &) = delete;
  module &operator=(const module &) = delete;

  CUmodule handle() const noexcept { return handle_; }
  // Whether the module still exists: detaching its context destroyed it (and its functions).
  bool alive() const noexcept { return get_context()->valid(); }
  // LogicError "<routine> failed: invalid device context - ..." when !alive(), so a destroyed
  // module's (or function's) handle never reaches the driver.
  void check_alive(const char *routine) const {
    if (!alive())
      throw_detached(routine);
  }
  // handle() for a driver call: check_alive() first.
  CUmodule live_handle(const char *routine) const {
    check_alive(routine);
    return handle_;
  }
  cuplug::launcher &get_launcher() const noexcept { return *launcher_; }
  const plugin_ptr<cuplug::launcher> &launcher_ptr() const noexcept { return launcher_; }

private:
  [[noreturn]] static void throw_detached(const char *routine);

  plugin_ptr<cuplug::launcher> launcher_;
  CUmodule handle_;
};

using module_ptr = std::shared_ptr<module>;

} // namespace cuplug::python
