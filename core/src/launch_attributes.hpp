// Checks of launch attributes (clusters, cooperative launches) against the device and function.
#pragma once

#include <cuplug/launcher.hpp>

namespace cuplug::detail {

// std::invalid_argument naming the limit when `attrs` cannot work for `function` launched with
// `config` on the current context's device (see launcher::launch). Asks the driver for the
// device's attributes and the launcher for the function's occupancy.
void check_launch_attributes(launcher &l, CUfunction function, const launch_config &config,
                             const launch_attributes &attrs);

} // namespace cuplug::detail
