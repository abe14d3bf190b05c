// Declares itself a compiler ("fake_wrong_kind") but its factory makes an allocator.
#include "fake_objects.hpp"

CUPLUG_PLUGIN(compiler, fake_plugins::host_allocator, "fake_wrong_kind",
              "makes an allocator while claiming to be a compiler", "1.0")
