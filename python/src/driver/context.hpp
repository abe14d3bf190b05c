// Contexts and each thread's context stack, context-bound resources, and driver calls that
// release the GIL: what every binding that touches the driver needs.
#pragma once

#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cuda.h>

#include <memory>
#include <string>
#include <thread>

namespace cuplug::python {
namespace py = pybind11;

class context;
using context_ptr = std::shared_ptr<context>;

// A CUDA context as PyCUDA models it (spec §1.5): created contexts (make_context) are destroyed
// when their last user detaches; primary contexts are retained and released. Every resource
// object holds a context_ptr, so a context outlives everything allocated in it.
class context : public std::enable_shared_from_this<context> {
public:
  CUcontext handle() const noexcept { return handle_; }
  CUdevice device() const noexcept { return device_; }
  bool is_primary() const noexcept { return primary_; }
  bool valid() const noexcept { return valid_; }
  // A number no other wrapper of this process had: with handle(), what per-context caches key
  // on, so that a new context the driver gives a destroyed one's handle misses them.
  unsigned long long serial() const noexcept { return serial_; }
  std::thread::id owner_thread() const noexcept { return owner_thread_; }

  // Makes a new context on `device`, current and pushed (Device.make_context).
  static context_ptr create(CUdevice device, unsigned flags);
  // Retains the device's primary context; not pushed (Device.retain_primary_context).
  static context_ptr retain_primary(CUdevice device);
  // Wraps a context some other library made current (cuCtxGetCurrent), primary ones included.
  static context_ptr adopt(CUcontext handle);

  // Top of this thread's stack; if the stack is empty, the driver's current context (adopted),
  // so contexts made current by other libraries (PyTorch, CuPy) are used, not ignored.
  static context_ptr current();
  // The calling thread's stack top only (PyCUDA's Context.get_current()): null when the stack is
  // empty, also where another library made a context current.
  static context_ptr stacked();
  // current(), or LogicError "<routine> failed: invalid device context - no currently active
  // context?" when there is none.
  static context_ptr current_or_throw(const char *routine = "explicit_context_dependent");

  void push();
  static context_ptr pop(); // pops the calling thread's stack top; "cannot pop non-current context"
  void detach();

  ~context();

private:
  context(CUcontext handle, CUdevice device, bool primary);
  CUcontext handle_;
  CUdevice device_;
  bool primary_;
  bool owned_ = false; // made by create(): destroyed at the end; adopted foreign ones are not
  bool valid_ = true;
  unsigned long long serial_;
  std::thread::id owner_thread_;
  friend class scoped_activation;
  // Tells the destroy listeners, with the context still valid and current (see below).
  void notify_destroyed() noexcept;
};

// Called just before a context wrapper gives up its context (detach(), or its last user gone),
// while the context is still valid and current on this thread: per-context caches drop what was
// made in it (kernels, pools, rng generators), so each is released in a live context instead of
// being destroyed afterwards on dead handles. Listeners run with the GIL held; a context destroyed
// on a thread without it (a thread's exit) skips them, since every entry of their tables holds its
// context. Listeners must not throw and must not look the context up again. Registered once, at
// import; never removed.
using context_listener = void (*)(CUcontext handle, unsigned long long serial);
void add_context_destroy_listener(context_listener listener);
// The Python side's listener is the context_destroyed hook (hooks.hpp:
// cuplug._driver.context_cache.drop), called first, with the GIL held.

// Makes `ctx` current for the scope if it is not, and restores the previous state. Contexts may
// be made current on any thread (cuCtxPushCurrent works across threads), so this throws only for
// invalid (detached) contexts.
class scoped_activation {
public:
  explicit scoped_activation(const context_ptr &ctx);
  ~scoped_activation();
  scoped_activation(const scoped_activation &) = delete;
  scoped_activation &operator=(const scoped_activation &) = delete;

private:
  bool pushed_ = false;
};

// Base of resources made in a context (streams, events, allocations, modules).
class context_dependent {
public:
  context_dependent() : ctx_(context::current_or_throw()) {}
  explicit context_dependent(context_ptr ctx) : ctx_(std::move(ctx)) {}
  const context_ptr &get_context() const noexcept { return ctx_; }

private:
  context_ptr ctx_;
};

// Releases the GIL around a driver call that may wait: GUARDED_THREADED in PyCUDA.
#define CUPLUG_CALL_NOGIL(name, ...)                                                               \
  do {                                                                                             \
    CUresult cuplug_r_;                                                                            \
    {                                                                                              \
      pybind11::gil_scoped_release cuplug_nogil_;                                                  \
      cuplug_r_ = ::cuplug::detail::entry(::cuplug::driver().name, #name)(__VA_ARGS__);            \
    }                                                                                              \
    ::cuplug::check(cuplug_r_, #name);                                                             \
  } while (0)

// In destructors and free(): on failure print PyCUDA's clean-up warning instead of throwing.
// Skips silently when the process is exiting or the driver is gone.
void cleanup_call(CUresult result, const char *routine) noexcept;
bool interpreter_finalizing() noexcept;

// Releases a resource under the context it was made in, from any thread, without throwing:
// `release()` returns the driver call's CUresult (reported through cleanup_call under `routine`).
// Skipped when the process is exiting (the driver reclaims everything) or the context is detached
// or dead (the resource went with it, as in PyCUDA).
template <class Release>
void release_under(const context_ptr &ctx, const char *routine, Release &&release) noexcept {
  if (interpreter_finalizing() || !ctx || !ctx->valid())
    return;
  try {
    scoped_activation active(ctx);
    cleanup_call(release(), routine);
  } catch (...) {
    // Activation failed: the context is gone and took the resource with it.
  }
}

} // namespace cuplug::python
