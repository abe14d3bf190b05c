// Running a call under an object's own context when the calling thread has no context at all,
// so that allocations, modules and functions work from any thread.
#pragma once

#include "driver/context.hpp"

#include <optional>

namespace cuplug::python {

// Makes `ctx` current for the scope when the calling thread has no current context (a worker
// thread, say); a thread with a current context keeps it, and the call runs there as in PyCUDA
// (copies between contexts rely on unified addressing). Cheap enough for every launch: a look at
// this thread's stack, plus one cuCtxGetCurrent when cuplug's stack is empty. A null `ctx` (a
// plain pointer's: no context known) does nothing; a detached one is LogicError "cannot activate
// dead context", so the handles it took with it never reach the driver.
class scoped_activation_if_none {
public:
  explicit scoped_activation_if_none(const context_ptr &ctx);
  scoped_activation_if_none(const scoped_activation_if_none &) = delete;
  scoped_activation_if_none &operator=(const scoped_activation_if_none &) = delete;

private:
  std::optional<scoped_activation> active_;
};

} // namespace cuplug::python
