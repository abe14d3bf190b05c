// Finding the live Context object of a CUcontext handle without asking the driver.
#pragma once

#include "driver/context.hpp"

namespace cuplug::python {

// The live (not detached) wrapper of `handle`, or null. No driver call, so safe for handles of
// contexts that may have been destroyed (an array's, a message's).
context_ptr find_context(CUcontext handle);

} // namespace cuplug::python
