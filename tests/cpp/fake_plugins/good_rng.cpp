// A well-formed rng plugin, "fake_rng", that only counts.
#include "fake_objects.hpp"

CUPLUG_PLUGIN(rng, fake_plugins::counter_rng, "fake_rng", "counts, generates nothing", "1.0")
