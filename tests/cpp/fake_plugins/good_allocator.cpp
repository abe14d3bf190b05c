// A well-formed allocator plugin, "fake_alloc", that accepts the options capacity and label.
#include "fake_objects.hpp"

CUPLUG_PLUGIN(allocator, fake_plugins::host_allocator, "fake_alloc", "host memory for tests", "1.0")
