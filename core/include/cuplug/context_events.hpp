// Context destruction as an event: what a host (the Python extension) tells the plugins just
// before it destroys a CUDA context, so that what they keep per context (loaded modules, cuRAND
// generators) is released while that context still lives, and never found again by a new
// context that the driver gives the same handle.
#pragma once

#include <cuda.h>

namespace cuplug {

// Called with the dying context current on the calling thread; must not throw.
using context_destroy_callback = void (*)(CUcontext context);

// Registers `callback` (once; a second registration of the same function is ignored).
// Thread-safe. Callbacks stay registered for the life of the process.
void on_context_destroy(context_destroy_callback callback);

// Runs every registered callback for `context`, which the caller is about to destroy and has
// made current. Never throws.
void notify_context_destroy(CUcontext context) noexcept;

} // namespace cuplug
