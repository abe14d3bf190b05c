// A well-formed compiler plugin, "fake_compiler", that returns its source as PTX.
#include "fake_objects.hpp"

CUPLUG_PLUGIN(compiler, fake_plugins::echo_compiler, "fake_compiler", "echoes the source", "1.0")
