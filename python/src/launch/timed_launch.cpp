// Function.prepared_timed_call: one launch between two events, timed when the caller asks.
#include "launch/arg_packer.hpp"
#include "launch/function.hpp"
#include "launch/launch_args.hpp"
#include "launch/launch_entries.hpp"

#include <memory>
#include <string>

namespace cuplug::python {
namespace {

// Two events around one launch on the default stream; the callable waits for the second.
class timed_launch {
public:
  timed_launch() : ctx_(context::current_or_throw()) {
    CUPLUG_CALL(cuEventCreate, &start_, CU_EVENT_DEFAULT);
    try {
      CUPLUG_CALL(cuEventCreate, &end_, CU_EVENT_DEFAULT);
    } catch (...) {
      cleanup_call(driver().cuEventDestroy(start_), "cuEventDestroy");
      throw;
    }
  }
  ~timed_launch() {
    release_under(ctx_, "cuEventDestroy", [this] { return driver().cuEventDestroy(start_); });
    release_under(ctx_, "cuEventDestroy", [this] { return driver().cuEventDestroy(end_); });
  }
  timed_launch(const timed_launch &) = delete;
  timed_launch &operator=(const timed_launch &) = delete;

  CUevent start() const noexcept { return start_; }
  CUevent end() const noexcept { return end_; }
  double seconds() const {
    scoped_activation_if_none active(ctx_);
    CUPLUG_CALL_NOGIL(cuEventSynchronize, end_);
    float ms = 0;
    CUPLUG_CALL(cuEventElapsedTime, &ms, start_, end_);
    return ms * 1e-3;
  }

private:
  context_ptr ctx_;
  CUevent start_ = nullptr;
  CUevent end_ = nullptr;
};

} // namespace

py::object prepared_timed_call(py::handle self, py::args args, py::kwargs kwargs) {
  function &f = self_function(self.ptr());
  launch_config config;
  for (auto item : kwargs) {
    if (item.first.cast<std::string>() != "shared_size")
      throw py::type_error("prepared_timed_call: unknown keyword arguments: " +
                           item.first.cast<std::string>());
    config.shared_bytes = shared_bytes(item.second.ptr(), "shared_size");
  }
  if (args.size() < 1)
    throw py::type_error("prepared_timed_call() takes (grid, block, *args)");
  PyObject *const *items = reinterpret_cast<PyTupleObject *>(args.ptr())->ob_item;
  config.grid = parse_dims(items[0], "grid");
  std::size_t first = 2;
  if (args.size() >= 2 && is_block(items[1])) {
    config.block = parse_dims(items[1], "block");
  } else {
    deprecated_signature("prepared_timed_call");
    config.block = remembered_block(f);
    first = 1;
  }
  // Every argument is checked before the first event is recorded.
  arg_buffer buffer;
  f.pack_prepared_args(items + first, args.size() - first, buffer, "prepared_timed_call");
  f.get_module()->check_alive("prepared_timed_call");
  scoped_activation_if_none active(f.get_module()->get_context());
  auto timing = std::make_shared<timed_launch>();
  CUPLUG_CALL(cuEventRecord, timing->start(), nullptr);
  f.launch(config, buffer.data(), buffer.size());
  CUPLUG_CALL(cuEventRecord, timing->end(), nullptr);
  return py::cpp_function([timing]() { return timing->seconds(); });
}

} // namespace cuplug::python
