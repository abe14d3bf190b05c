// Contexts and each thread's context stack (spec §1.5), with PyCUDA's semantics minus its
// failure modes: a failed switch leaves the stack as it was (§14.2), leftover contexts at thread
// or process exit are released quietly instead of abort() (§14.1), and a context another library
// made current is adopted, not ignored (§14.5).
//
// CUDA keeps its own per-thread stack. Ours occupies at most one slot on it, its top: when our
// stack is empty that slot does not exist and whatever another library made current stays
// current; switching between our contexts replaces the slot (cuCtxSetCurrent).
#include "driver/context.hpp"
#include "driver/activation.hpp"
#include "driver/context_lookup.hpp"
#include "hooks.hpp"
#include "support/convert.hpp"

#include <cuplug/context_events.hpp>
#include <cuplug/log.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace cuplug::python {
namespace {

// ---- this thread's stack ---------------------------------------------------------------------

thread_local bool stack_gone = false; // trivially destructible: readable during thread exit

struct thread_stack {
  std::vector<context_ptr> entries;
  // Thread (or process) exit with contexts still pushed: drop them top first, so each context
  // whose last user this was is released (quietly skipped once the interpreter is finalizing).
  ~thread_stack() {
    stack_gone = true;
    while (!entries.empty()) {
      context_ptr top = std::move(entries.back());
      entries.pop_back();
    }
  }
};
thread_local thread_stack tls_stack;

std::vector<context_ptr> &stack() {
  if (stack_gone)
    throw cuda_error("context_stack", CUDA_ERROR_INVALID_CONTEXT,
                     "the thread's context stack is gone (thread exiting)");
  return tls_stack.entries;
}

// A driver entry point to call without throwing on failure (CUPLUG_CALL would).
using ::cuplug::detail::entry;

// Puts `next` into our slot on CUDA's stack, or removes the slot when next is null. `have_slot`:
// our stack is non-empty, so CUDA's top is ours. Throws without having changed anything.
void switch_to(bool have_slot, CUcontext next) {
  if (have_slot) {
    if (next != nullptr) {
      CUPLUG_CALL(cuCtxSetCurrent, next);
    } else {
      CUcontext popped;
      CUPLUG_CALL(cuCtxPopCurrent, &popped);
    }
  } else if (next != nullptr) {
    CUPLUG_CALL(cuCtxPushCurrent, next);
  }
}

// ---- wrappers by handle ----------------------------------------------------------------------

// Live wrappers by CUcontext, so that adopting a context we already wrap returns that wrapper
// (one retain, one identity) and current() on a foreign context costs a lookup, not five driver
// calls. Never destroyed: contexts may be released during process exit.
struct wrapper_registry {
  std::mutex mutex;
  std::unordered_map<CUcontext, std::weak_ptr<context>> by_handle;
};
wrapper_registry &registry() {
  static auto *r = new wrapper_registry;
  return *r;
}

// Newest wins: a handle seen again belongs to the wrapper made last.
void remember(const context_ptr &ctx) {
  auto &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.by_handle[ctx->handle()] = ctx;
}

// Drops `self`'s entry (an expired one, when called from self's destructor).
void forget(const context *self) noexcept {
  auto &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.by_handle.find(self->handle());
  if (it != r.by_handle.end() && (it->second.expired() || it->second.lock().get() == self))
    r.by_handle.erase(it);
}

context_ptr lookup(CUcontext handle) {
  std::weak_ptr<context> found;
  {
    auto &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.by_handle.find(handle);
    if (it == r.by_handle.end())
      return nullptr;
    found = it->second;
  }
  // Locked outside the mutex: dropping the last reference here runs ~context, which forgets.
  context_ptr ctx = found.lock();
  return ctx && ctx->valid() ? ctx : nullptr;
}

// Lets other Python threads run during driver calls that may wait (context creation and
// destruction synchronise the device), when this thread holds the GIL at all.
class release_gil_if_held {
public:
  release_gil_if_held() {
    if (Py_IsInitialized() && PyGILState_Check())
      state_ = PyEval_SaveThread();
  }
  ~release_gil_if_held() {
    if (state_ != nullptr)
      PyEval_RestoreThread(state_);
  }
  release_gil_if_held(const release_gil_if_held &) = delete;
  release_gil_if_held &operator=(const release_gil_if_held &) = delete;

private:
  PyThreadState *state_ = nullptr;
};

// Gives up our hold on a context: primary contexts are released, contexts we created destroyed,
// adopted foreign ones left alone. Returns the driver's verdict and the routine's name.
std::pair<CUresult, const char *> release_handle(CUcontext handle, CUdevice device, bool primary,
                                                 bool owned) noexcept {
  try {
    release_gil_if_held nogil;
    if (primary)
      return {entry(driver().cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease")(device),
              "cuDevicePrimaryCtxRelease"};
    if (owned)
      return {entry(driver().cuCtxDestroy, "cuCtxDestroy")(handle), "cuCtxDestroy"};
  } catch (const std::exception &e) {
    log_warning(std::string("cuplug WARNING: a clean-up operation failed: ") + e.what());
  }
  return {CUDA_SUCCESS, ""};
}

// The top of `st` after dropping contexts that were detached on another thread (PyCUDA's
// current_context()); the slot on CUDA's stack follows the new top. Null when `st` is empty.
context *live_top(std::vector<context_ptr> &st) {
  if (st.empty() || st.back()->valid())
    return st.empty() ? nullptr : st.back().get();
  std::size_t keep = st.size();
  while (keep > 0 && !st[keep - 1]->valid())
    --keep;
  switch_to(true, keep > 0 ? st[keep - 1]->handle() : nullptr);
  st.resize(keep);
  return keep > 0 ? st.back().get() : nullptr;
}

} // namespace

// ---- context ---------------------------------------------------------------------------------

namespace {
std::atomic<unsigned long long> next_serial{1};

std::vector<context_listener> &listeners() {
  static auto *l = new std::vector<context_listener>(); // leaked: contexts die at exit too
  return *l;
}

// The context_destroyed hook (cuplug._driver.context_cache.drop); none registered: no Python
// cache holds anything of the context.
void call_python_hook(CUcontext handle, unsigned long long serial) noexcept {
  if (interpreter_finalizing() || stack_gone)
    return;
  try {
    py::gil_scoped_acquire gil;
    py::handle hook = hooks::get(hooks::hook::context_destroyed);
    if (!hook)
      return;
    try {
      hook(reinterpret_cast<std::intptr_t>(handle), serial);
    } catch (py::error_already_set &e) {
      e.discard_as_unraisable("cuplug: dropping a destroyed context's cached objects");
    }
  } catch (const std::exception &e) {
    log_warning(std::string("cuplug WARNING: dropping a context's cached objects failed: ") +
                e.what());
  } catch (...) {
  }
}
} // namespace

void add_context_destroy_listener(context_listener listener) {
  auto &l = listeners();
  if (std::find(l.begin(), l.end(), listener) == l.end())
    l.push_back(listener);
}

void context::notify_destroyed() noexcept {
  if (interpreter_finalizing())
    return;
  // The Python caches first: their objects (modules, generators) may use the pools below.
  call_python_hook(handle_, serial_);
  // The listeners' tables are the GIL's. Without it (a thread's exit dropping the last reference
  // to a context it left pushed) none of this context's entries can be in them, since every entry
  // holds its context (a kernel through its module, a pool directly): they are skipped, and the
  // GIL is not taken, which with the interpreter finalizing ended the thread inside the acquire
  // ("FATAL: exception not rethrown", abort at exit; H200, 2026-11-28).
  if (PyGILState_Check() != 0)
    for (context_listener l : listeners())
      l(handle_, serial_);
  // Then the plugins (the rng backends' modules and cuRAND generators).
  notify_context_destroy(handle_);
}

context::context(CUcontext handle, CUdevice device, bool primary)
    : handle_(handle), device_(device), primary_(primary), serial_(next_serial++),
      owner_thread_(std::this_thread::get_id()) {}

context::~context() {
  if (!valid_)
    return;
  forget(this);
  // At process exit the driver reclaims everything; calling into it then only risks noise.
  if (interpreter_finalizing())
    return;
  // Nothing holds this wrapper any more, so our stack cannot be used to make it current: the
  // listeners run with it pushed on CUDA's stack alone (they release only objects that hold no
  // wrapper of it, such as rng generators).
  bool pushed = false;
  try {
    CUcontext was = nullptr;
    pushed = entry(driver().cuCtxGetCurrent, "cuCtxGetCurrent")(&was) == CUDA_SUCCESS &&
             was != handle_ &&
             entry(driver().cuCtxPushCurrent, "cuCtxPushCurrent")(handle_) == CUDA_SUCCESS;
  } catch (const std::exception &) {
    // No driver entry: the listeners still drop their entries.
  }
  notify_destroyed();
  if (pushed) {
    CUcontext popped = nullptr;
    cleanup_call(driver().cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
  }
  auto [result, routine] = release_handle(handle_, device_, primary_, owned_);
  cleanup_call(result, routine);
}

context_ptr context::create(CUdevice device, unsigned flags) {
  auto &st = stack();
  context *top = live_top(st);
  st.reserve(st.size() + 1);
  // cuCtxCreate pushes the new context onto CUDA's stack: take ours off first so that CUDA's
  // stack keeps one of our contexts at most, and put it back if creation fails (PyCUDA left the
  // stack popped then, inducer/pycuda#335).
  if (top != nullptr) {
    CUcontext popped;
    CUPLUG_CALL(cuCtxPopCurrent, &popped);
  }
  CUcontext handle = nullptr;
  CUresult result;
  {
    release_gil_if_held nogil;
    result = entry(driver().cuCtxCreate, "cuCtxCreate")(&handle, nullptr, flags, device);
  }
  if (result != CUDA_SUCCESS) {
    if (top != nullptr)
      cleanup_call(entry(driver().cuCtxPushCurrent, "cuCtxPushCurrent")(top->handle_),
                   "cuCtxPushCurrent");
    check(result, "cuCtxCreate");
  }
  context_ptr ctx(new context(handle, device, false));
  ctx->owned_ = true;
  st.push_back(ctx);
  remember(ctx);
  return ctx;
}

context_ptr context::retain_primary(CUdevice device) {
  CUcontext handle = nullptr;
  CUresult result;
  {
    release_gil_if_held nogil;
    result = entry(driver().cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")(&handle, device);
  }
  check(result, "cuDevicePrimaryCtxRetain");
  context_ptr ctx(new context(handle, device, true));
  remember(ctx);
  return ctx;
}

context_ptr context::adopt(CUcontext handle) {
  if (context_ptr known = lookup(handle))
    return known;

  CUdevice device;
  CUPLUG_CALL(cuCtxGetDevice, &device, handle);

  // A primary context (the runtime API's, PyTorch's, CuPy's) is retained, so that it outlives
  // what we make in it; retaining returns this very handle exactly when it is the primary one.
  unsigned primary_flags = 0;
  int primary_active = 0;
  CUPLUG_CALL(cuDevicePrimaryCtxGetState, device, &primary_flags, &primary_active);
  bool primary = false;
  if (primary_active) {
    CUcontext primary_handle = nullptr;
    CUPLUG_CALL(cuDevicePrimaryCtxRetain, &primary_handle, device);
    primary = primary_handle == handle;
    if (!primary)
      CUPLUG_CALL(cuDevicePrimaryCtxRelease, device);
  }
  context_ptr ctx(new context(handle, device, primary));
  remember(ctx);
  return ctx;
}

context_ptr find_context(CUcontext handle) { return lookup(handle); }

context_ptr context::current() {
  auto &st = stack();
  if (live_top(st) != nullptr)
    return st.back();
  CUcontext handle = nullptr;
  CUresult result = entry(driver().cuCtxGetCurrent, "cuCtxGetCurrent")(&handle);
  // Before cuInit, and after the driver shut down, nothing is current.
  if (result == CUDA_ERROR_NOT_INITIALIZED || result == CUDA_ERROR_DEINITIALIZED)
    return nullptr;
  check(result, "cuCtxGetCurrent");
  return handle == nullptr ? nullptr : adopt(handle);
}

context_ptr context::stacked() {
  auto &st = stack();
  return live_top(st) != nullptr ? st.back() : nullptr;
}

context_ptr context::current_or_throw(const char *routine) {
  context_ptr ctx = current();
  if (!ctx)
    throw cuda_error(routine, CUDA_ERROR_INVALID_CONTEXT, "no currently active context?");
  return ctx;
}

void context::push() {
  if (!valid_)
    throw cuda_error("context::push", CUDA_ERROR_INVALID_CONTEXT, "cannot push invalid context");
  auto &st = stack();
  live_top(st);
  st.reserve(st.size() + 1);
  switch_to(!st.empty(), handle_);
  st.push_back(shared_from_this());
}

context_ptr context::pop() {
  auto &st = stack();
  if (live_top(st) == nullptr)
    throw cuda_error("context::pop", CUDA_ERROR_INVALID_CONTEXT, "cannot pop non-current context");
  std::size_t keep = st.size() - 1;
  while (keep > 0 && !st[keep - 1]->valid())
    --keep;
  switch_to(true, keep > 0 ? st[keep - 1]->handle() : nullptr);
  context_ptr popped = std::move(st.back());
  st.resize(keep);
  return popped;
}

void context::detach() {
  if (!valid_)
    throw cuda_error("context::detach", CUDA_ERROR_INVALID_CONTEXT,
                     "cannot detach from invalid context");
  context_ptr self = shared_from_this(); // the stack may hold the only other reference
  // Caches drop what was made in it while it still lives and is current (a cuRAND generator
  // destroyed after its context poisons every later cuRAND call of the process).
  {
    std::optional<scoped_activation> active;
    try {
      active.emplace(self);
    } catch (const std::exception &) {
      // Not current: the listeners still drop their entries.
    }
    notify_destroyed();
  }
  auto &st = stack();
  bool on_top = live_top(st) == this;
  std::vector<context_ptr> rest;
  rest.reserve(st.size());
  for (auto &held : st)
    if (held.get() != this && held->valid())
      rest.push_back(held);
  // Make the next context current before this one goes, so CUDA never holds a dead one here.
  if (on_top)
    switch_to(true, rest.empty() ? nullptr : rest.back()->handle());
  st.swap(rest);
  valid_ = false;
  forget(this);
  auto [result, routine] = release_handle(handle_, device_, primary_, owned_);
  check(result, routine);
}

// ---- scoped_activation -----------------------------------------------------------------------

scoped_activation::scoped_activation(const context_ptr &ctx) {
  if (!ctx->valid())
    throw cuda_error("scoped_activation", CUDA_ERROR_INVALID_CONTEXT,
                     "cannot activate dead context");
  auto &st = stack();
  if (!st.empty() && st.back()->valid()) {
    if (st.back()->handle_ == ctx->handle_)
      return;
  } else if (st.empty()) {
    CUcontext current_handle = nullptr;
    if (entry(driver().cuCtxGetCurrent, "cuCtxGetCurrent")(&current_handle) == CUDA_SUCCESS &&
        current_handle == ctx->handle_)
      return;
  }
  ctx->push();
  pushed_ = true;
}

scoped_activation::~scoped_activation() {
  if (!pushed_)
    return;
  try {
    context::pop();
  } catch (const std::exception &e) {
    if (!interpreter_finalizing())
      log_warning(std::string("cuplug WARNING: could not restore the context stack: ") + e.what());
  }
}

scoped_activation_if_none::scoped_activation_if_none(const context_ptr &ctx) {
  if (!ctx)
    return;
  if (!ctx->valid())
    throw cuda_error("scoped_activation", CUDA_ERROR_INVALID_CONTEXT,
                     "cannot activate dead context");
  if (live_top(stack()) != nullptr)
    return;
  CUcontext current_handle = nullptr;
  if (entry(driver().cuCtxGetCurrent, "cuCtxGetCurrent")(&current_handle) == CUDA_SUCCESS &&
      current_handle != nullptr)
    return;
  active_.emplace(ctx);
}

// ---- clean-up helpers ------------------------------------------------------------------------

bool interpreter_finalizing() noexcept {
  if (!Py_IsInitialized())
    return true;
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

void cleanup_call(CUresult result, const char *routine) noexcept {
  // DEINITIALIZED: the driver is shutting down (process exit); its resources go with it.
  if (result == CUDA_SUCCESS || result == CUDA_ERROR_DEINITIALIZED || interpreter_finalizing())
    return;
  try {
    log_warning(std::string("cuplug WARNING: a clean-up operation failed (dead context maybe?)\n") +
                cuda_error(routine, result).what());
  } catch (...) {
  }
}

} // namespace cuplug::python
