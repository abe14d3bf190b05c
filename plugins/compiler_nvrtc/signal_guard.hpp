// Keeps libnvrtc's front end from taking over SIGINT and SIGTERM while it parses.
#pragma once

#include <string>

namespace cuplug::plugins {

// libnvrtc's front end (EDG) installs its own SIGINT and SIGTERM handlers for the length of
// nvrtcCompileProgram: Ctrl-C meanwhile prints "Compilation terminated" and ends the whole
// process (exit status 4; no KeyboardInterrupt, no `finally`), or hangs it (the handler calls
// exit() while other threads run). The disposition is process-wide, so saving and restoring it
// around the call cannot help, and two threads compiling at once can leave EDG's handler in
// place for good. This points the loaded libnvrtc's own `signal` and `sigaction` imports (its
// PLT slots) at functions that leave SIGINT and SIGTERM alone and pass every other signal on:
// the process keeps its handlers (Python's sets a flag, which the compile's `cancelled` turns
// into KeyboardInterrupt). Idempotent and thread-safe; the library holding `symbol_in_nvrtc` is
// the one patched. Returns "" on success, else why it could not (the compile then behaves as
// libnvrtc makes it).
std::string keep_nvrtc_off_interrupt_signals(const void *symbol_in_nvrtc);

} // namespace cuplug::plugins
