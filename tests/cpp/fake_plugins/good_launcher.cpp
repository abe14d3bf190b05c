// A well-formed launcher plugin, "fake_launcher", that launches nothing.
#include "fake_objects.hpp"

CUPLUG_PLUGIN(launcher, fake_plugins::null_launcher, "fake_launcher", "launches nothing", "1.0")
