// A good host allocator whose backend name comes from the build (FAKE_NAME), to test which of
// several same-named plugins discovery picks.
#include "fake_objects.hpp"

CUPLUG_PLUGIN(allocator, fake_plugins::host_allocator, FAKE_NAME, FAKE_DESCRIPTION, "1.0")
