// The interop interface's non-throwing release.
#include <cuplug/interop.hpp>

#include <cstdio>
#include <exception>

namespace cuplug {

void interop::unregister(CUgraphicsResource resource) noexcept {
  try {
    do_unregister(resource);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cuplug WARNING: interop '%s' failed to unregister a resource: %s\n",
                 backend_name().c_str(), e.what());
  } catch (...) {
  }
}

} // namespace cuplug
