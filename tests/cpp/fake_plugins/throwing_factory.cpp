// An allocator plugin, "fake_throwing", whose factory throws a std::runtime_error.
#include "fake_objects.hpp"

CUPLUG_PLUGIN(allocator, fake_plugins::throwing_allocator, "fake_throwing",
              "its constructor always throws", "1.0")
