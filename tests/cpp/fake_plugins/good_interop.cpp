// A well-formed interop plugin, "fake_interop", that registers nothing.
#include "fake_objects.hpp"

CUPLUG_PLUGIN(interop, fake_plugins::null_interop, "fake_interop", "shares nothing", "1.0")
