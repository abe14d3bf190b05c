// cuplug._core._memory_history: the Python call site of every live allocator block, recorded while
// cuplug.memory.record_history() is on (an allocation_observer; none is installed while off).
#include "bindings.hpp"

#include <cuplug/allocation_observer.hpp>
#include <cuplug/allocator.hpp>

#include <Python.h>
#include <frameobject.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cuplug::python {
namespace {

using code_line = std::pair<PyObject *, int>; // a code object (held by the site) and a line
using site_frames = std::vector<code_line>;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The record. Sites (code objects) are touched only with the GIL held; blocks and events under
// the mutex, which is never held while Python code could run (a collection may free blocks).
class history final : public allocation_observer {
public:
  // With the GIL.
  void start(int frames, std::size_t max_events, std::string skip_prefix) {
    {
      std::lock_guard lock(mutex_);
      if (on_)
        throw py::value_error("memory history: already recording; call "
                              "cuplug.memory.record_history(False) first");
      on_ = true;
      frames_ = frames;
      max_events_ = max_events;
      skip_prefix_ = std::move(skip_prefix);
      started_ns_ = now_ns();
    }
    set_allocation_observer(this);
  }

  // With the GIL: stops and forgets everything (the doors cost nothing again).
  void stop() {
    set_allocation_observer(nullptr);
    std::vector<site_frames> sites;
    {
      std::lock_guard lock(mutex_);
      on_ = false;
      live_.clear();
      events_.clear();
      dropped_ = 0;
      site_ids_.clear();
      sites.swap(sites_);
      names_.clear();
      name_ids_.clear();
    }
    for (const site_frames &s : sites)
      for (const code_line &f : s)
        Py_DECREF(f.first);
  }

  bool recording() {
    std::lock_guard lock(mutex_);
    return on_;
  }

  // With the GIL: (sites, names, blocks, events, dropped, frames, max_events, started_ns).
  py::tuple snapshot() {
    std::vector<std::pair<device_ptr, block>> blocks;
    std::vector<event> events;
    std::vector<std::string> names;
    std::size_t dropped, max_events;
    std::int64_t started;
    int frames;
    std::vector<site_frames> sites;
    {
      std::lock_guard lock(mutex_);
      if (!on_)
        throw py::value_error("memory history: not recording; call "
                              "cuplug.memory.record_history(True) first");
      blocks.assign(live_.begin(), live_.end());
      events.assign(events_.begin(), events_.end());
      names = names_;
      dropped = dropped_;
      max_events = max_events_;
      frames = frames_;
      started = started_ns_;
      sites = sites_;
      // Held by this copy too: building the result may run a collection, and code run by it
      // could stop the record (which drops sites_'s references).
      for (const site_frames &s : sites)
        for (const code_line &f : s)
          Py_INCREF(f.first);
    }
    struct release_codes {
      std::vector<site_frames> &sites;
      ~release_codes() {
        for (const site_frames &s : sites)
          for (const code_line &f : s)
            Py_DECREF(f.first);
      }
    } release{sites};
    py::list site_list;
    for (const site_frames &s : sites) {
      py::list fs;
      for (const auto &[code, line] : s) {
        auto *c = reinterpret_cast<PyCodeObject *>(code);
#if PY_VERSION_HEX >= 0x030B0000
        PyObject *function = c->co_qualname;
#else
        PyObject *function = c->co_name;
#endif
        fs.append(py::make_tuple(py::reinterpret_borrow<py::str>(c->co_filename), line,
                                 py::reinterpret_borrow<py::str>(function)));
      }
      site_list.append(py::tuple(fs));
    }
    py::list block_list;
    for (const auto &[ptr, b] : blocks)
      block_list.append(py::make_tuple(ptr, b.bytes, b.site, b.name, b.time_ns));
    py::list event_list;
    for (const event &e : events)
      event_list.append(py::make_tuple(e.time_ns, e.allocated ? "alloc" : "free", e.ptr, e.bytes,
                                       e.site, e.name));
    py::list name_list;
    for (const std::string &n : names)
      name_list.append(n);
    return py::make_tuple(site_list, name_list, block_list, event_list, dropped, frames, max_events,
                          started);
  }

  void allocated(const allocator &a, device_ptr ptr, std::size_t bytes,
                 CUstream) noexcept override {
    try {
      record_allocation(a, ptr, bytes);
    } catch (...) {
      // Out of memory for the record itself: this block goes unrecorded, the allocation stands.
    }
  }

  void deallocated(const allocator &, device_ptr ptr, std::size_t bytes) noexcept override {
    std::lock_guard lock(mutex_);
    auto it = live_.find(ptr);
    if (it == live_.end())
      return; // allocated before the record started
    const block b = it->second;
    live_.erase(it);
    try {
      add_event(event{now_ns(), ptr, bytes, b.site, b.name, false});
    } catch (...) {
      ++dropped_; // no memory for the event: counted as dropped
    }
  }

private:
  void record_allocation(const allocator &a, device_ptr ptr, std::size_t bytes) {
    // Frames first, without the lock: their code objects are read with the GIL (or not at all).
    site_frames frames;
    const bool gil = PyGILState_Check() != 0;
    int wanted = 0;
    {
      std::lock_guard lock(mutex_);
      if (!on_)
        return;
      wanted = frames_;
    }
    if (gil)
      frames = call_site(wanted);
    const std::int64_t t = now_ns();
    std::lock_guard lock(mutex_);
    if (!on_)
      return;
    const std::uint32_t site = intern_site(frames, gil);
    const std::uint32_t name = intern_name(a.backend_name());
    live_[ptr] = block{bytes, site, name, t};
    add_event(event{t, ptr, bytes, site, name, true});
  }

  struct block {
    std::size_t bytes;
    std::uint32_t site, name;
    std::int64_t time_ns;
  };
  struct event {
    std::int64_t time_ns;
    device_ptr ptr;
    std::size_t bytes;
    std::uint32_t site, name;
    bool allocated;
  };

  bool in_package(PyCodeObject *code) const {
    Py_ssize_t size = 0;
    const char *text = PyUnicode_AsUTF8AndSize(code->co_filename, &size);
    if (text == nullptr) {
      PyErr_Clear();
      return false;
    }
    const std::string_view file(text, static_cast<std::size_t>(size));
    return file.substr(0, skip_prefix_.size()) == skip_prefix_;
  }

  // The innermost `wanted` frames of this thread's Python stack outside the cuplug package (its
  // innermost frames when all of them are cuplug's). Borrowed code pointers, valid with the GIL.
  site_frames call_site(int wanted) const {
    site_frames out;
    site_frames fallback;
    PyFrameObject *frame = PyEval_GetFrame(); // borrowed
    Py_XINCREF(frame);
    while (frame != nullptr && static_cast<int>(out.size()) < wanted) {
      PyCodeObject *code = PyFrame_GetCode(frame); // new reference
      const code_line here{reinterpret_cast<PyObject *>(code), PyFrame_GetLineNumber(frame)};
      Py_DECREF(code); // the frame holds it while we look
      if (!out.empty() || !in_package(code))
        out.push_back(here);
      else if (static_cast<int>(fallback.size()) < wanted)
        fallback.push_back(here);
      PyFrameObject *back = PyFrame_GetBack(frame); // new reference
      Py_DECREF(frame);
      frame = back;
    }
    Py_XDECREF(frame);
    return out.empty() ? fallback : out;
  }

  // Under the lock. Site 0: no Python frame (the GIL was not held, or no Python code ran).
  std::uint32_t intern_site(const site_frames &frames, bool gil) {
    if (sites_.empty())
      sites_.emplace_back();
    if (frames.empty())
      return 0;
    auto [it, fresh] = site_ids_.try_emplace(frames, static_cast<std::uint32_t>(sites_.size()));
    if (fresh) {
      if (gil) // always true here: frames are only read with the GIL
        for (const code_line &f : frames)
          Py_INCREF(f.first);
      sites_.push_back(frames);
    }
    return it->second;
  }

  std::uint32_t intern_name(const std::string &name) {
    auto [it, fresh] = name_ids_.try_emplace(name, static_cast<std::uint32_t>(names_.size()));
    if (fresh)
      names_.push_back(name);
    return it->second;
  }

  void add_event(const event &e) {
    if (max_events_ == 0) {
      ++dropped_;
      return;
    }
    if (events_.size() >= max_events_) {
      events_.pop_front();
      ++dropped_;
    }
    events_.push_back(e);
  }

  std::mutex mutex_;
  bool on_ = false;
  int frames_ = 1;
  std::size_t max_events_ = 0;
  std::string skip_prefix_;
  std::int64_t started_ns_ = 0;
  std::vector<site_frames> sites_;
  std::map<site_frames, std::uint32_t> site_ids_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::uint32_t> name_ids_;
  std::unordered_map<device_ptr, block> live_;
  std::deque<event> events_;
  std::size_t dropped_ = 0;
};

history &the_history() {
  static auto *h = new history(); // leaked: an allocator call may still see it at exit
  return *h;
}

} // namespace

void init_memory_history(py::module_ &m) {
  py::module_ h = m.def_submodule(
      "_memory_history", "The call site of every live allocator block (cuplug.memory.snapshot)");
  h.def(
      "start",
      [](int frames, std::size_t max_events, std::string skip_prefix) {
        if (frames < 1)
          throw py::value_error("memory history: frames must be >= 1, not " +
                                std::to_string(frames));
        the_history().start(frames, max_events, std::move(skip_prefix));
      },
      py::arg("frames"), py::arg("max_events"), py::arg("skip_prefix"),
      "Starts recording: `frames` frames per call site, outside files starting with "
      "skip_prefix; the last `max_events` events.");
  h.def(
      "stop", [] { the_history().stop(); }, "Stops recording and forgets the record.");
  h.def(
      "recording", [] { return the_history().recording(); }, "Whether it records.");
  h.def(
      "snapshot", [] { return the_history().snapshot(); },
      "(sites, allocator names, blocks, events, dropped events, frames, max_events, start time).");
}

} // namespace cuplug::python
