// A shared library with create/destroy but no cuplug_manifest section.
#include "fake_entry_points.hpp"
#include "fake_objects.hpp"

FAKE_CREATE(fake_plugins::host_allocator)
FAKE_DESTROY()
