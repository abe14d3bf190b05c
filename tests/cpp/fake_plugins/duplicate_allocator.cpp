// A second allocator named "fake_alloc": whichever of the two is found first wins.
#include "fake_objects.hpp"

CUPLUG_PLUGIN(allocator, fake_plugins::host_allocator, "fake_alloc", "the same name again", "2.0")
