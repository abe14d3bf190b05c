// Context destruction as an event (see context_events.hpp).
#include <cuplug/context_events.hpp>

#include <algorithm>
#include <mutex>
#include <vector>

namespace cuplug {
namespace {

struct callbacks {
  std::mutex mutex;
  std::vector<context_destroy_callback> list;
};

callbacks &registered() {
  static auto *c = new callbacks(); // leaked: contexts may be destroyed during exit
  return *c;
}

} // namespace

void on_context_destroy(context_destroy_callback callback) {
  auto &c = registered();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (std::find(c.list.begin(), c.list.end(), callback) == c.list.end())
    c.list.push_back(callback);
}

void notify_context_destroy(CUcontext context) noexcept {
  std::vector<context_destroy_callback> copy;
  {
    auto &c = registered();
    std::lock_guard<std::mutex> lock(c.mutex);
    copy = c.list;
  }
  for (context_destroy_callback callback : copy)
    callback(context);
}

} // namespace cuplug
