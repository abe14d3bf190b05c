// A good manifest ("fake_unresolved") in a library that needs a symbol nothing provides, so
// dlopen(RTLD_NOW) fails the way a plugin with a missing dependency library does.
#include "fake_objects.hpp"

extern "C" int fake_symbol_that_nothing_defines(int);

namespace fake_plugins {
class needy_allocator : public host_allocator {
public:
  explicit needy_allocator(const cuplug::options &o)
      : host_allocator(o), value_(fake_symbol_that_nothing_defines(1)) {}

private:
  int value_;
};
} // namespace fake_plugins

CUPLUG_PLUGIN(allocator, fake_plugins::needy_allocator, "fake_unresolved",
              "needs a symbol that nothing provides", "1.0")
