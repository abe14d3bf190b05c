// Stream and Event (spec §1.6). Each holds the context it was made in and runs its driver calls
// under it, from whatever thread calls (scoped_activation pushes the context when it is not
// current there, and pops it after); it is destroyed under that context too.
#include "bindings.hpp"
#include "driver/context.hpp"
#include "graphs/graph.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"
#include "support/host_buffer.hpp"

#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

namespace cuplug::python {
namespace {

// true for CUDA_SUCCESS, false for CUDA_ERROR_NOT_READY, an exception otherwise.
bool done(CUresult result, const char *routine) {
  if (result == CUDA_ERROR_NOT_READY)
    return false;
  check(result, routine);
  return true;
}

using ::cuplug::detail::entry;

class event;

class stream : public context_dependent {
public:
  stream(unsigned flags, std::optional<int> priority) {
    if (priority)
      CUPLUG_CALL(cuStreamCreateWithPriority, &handle_, flags, *priority);
    else
      CUPLUG_CALL(cuStreamCreate, &handle_, flags);
  }
  ~stream() {
    release_under(get_context(), "cuStreamDestroy",
                  [this] { return entry(driver().cuStreamDestroy, "cuStreamDestroy")(handle_); });
  }
  stream(const stream &) = delete;
  stream &operator=(const stream &) = delete;

  CUstream handle() const noexcept { return handle_; }

  void synchronize() {
    scoped_activation active(get_context());
    CUPLUG_CALL_NOGIL(cuStreamSynchronize, handle_);
  }
  bool is_done() {
    scoped_activation active(get_context());
    return done(entry(driver().cuStreamQuery, "cuStreamQuery")(handle_), "cuStreamQuery");
  }
  void wait_for_event(const event &evt);
  int priority() {
    scoped_activation active(get_context());
    int value;
    CUPLUG_CALL(cuStreamGetPriority, handle_, &value);
    return value;
  }
  // Stream capture: work issued to the stream is recorded into a graph instead of running.
  void begin_capture(CUstreamCaptureMode mode) {
    scoped_activation active(get_context());
    CUPLUG_CALL(cuStreamBeginCapture, handle_, mode);
  }
  py::object end_capture() {
    scoped_activation active(get_context());
    CUgraph g = nullptr;
    const CUresult r = entry(driver().cuStreamEndCapture, "cuStreamEndCapture")(handle_, &g);
    if (r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && g != nullptr)
      entry(driver().cuGraphDestroy, "cuGraphDestroy")(g);
    check(r, "cuStreamEndCapture");
    return wrap_graph(g, get_context());
  }
  bool is_capturing() {
    scoped_activation active(get_context());
    CUstreamCaptureStatus status;
    CUPLUG_CALL(cuStreamIsCapturing, handle_, &status);
    if (status == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
      return true; // still in capture mode until end_capture, which will raise
    return status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
  }

private:
  CUstream handle_ = nullptr;
};

class event : public context_dependent {
public:
  explicit event(unsigned flags) { CUPLUG_CALL(cuEventCreate, &handle_, flags); }
  // An event of another process, opened from its IPC handle in the current context.
  explicit event(const CUipcEventHandle &ipc) { CUPLUG_CALL(cuIpcOpenEventHandle, &handle_, ipc); }
  ~event() {
    release_under(get_context(), "cuEventDestroy",
                  [this] { return entry(driver().cuEventDestroy, "cuEventDestroy")(handle_); });
  }
  event(const event &) = delete;
  event &operator=(const event &) = delete;

  CUevent handle() const noexcept { return handle_; }

  void record(py::handle stream_obj) {
    CUstream s = to_stream(stream_obj);
    scoped_activation active(get_context());
    CUPLUG_CALL(cuEventRecord, handle_, s);
  }
  void synchronize() {
    scoped_activation active(get_context());
    CUPLUG_CALL_NOGIL(cuEventSynchronize, handle_);
  }
  bool query() {
    scoped_activation active(get_context());
    return done(entry(driver().cuEventQuery, "cuEventQuery")(handle_), "cuEventQuery");
  }
  // Milliseconds from `start` to `end`.
  static float elapsed(const event &start, const event &end) {
    scoped_activation active(end.get_context());
    float ms;
    CUPLUG_CALL(cuEventElapsedTime, &ms, start.handle_, end.handle_);
    return ms;
  }
  py::bytearray ipc_handle() {
    scoped_activation active(get_context());
    CUipcEventHandle ipc;
    CUPLUG_CALL(cuIpcGetEventHandle, &ipc, handle_);
    return py::bytearray(reinterpret_cast<const char *>(&ipc), sizeof(ipc));
  }

private:
  CUevent handle_ = nullptr;
};

void stream::wait_for_event(const event &evt) {
  scoped_activation active(get_context());
  CUPLUG_CALL(cuStreamWaitEvent, handle_, evt.handle(), 0);
}

CUipcEventHandle ipc_event_handle_from(const py::buffer &data) {
  py::buffer_info info = data.request();
  check_plain_buffer(info, "Event.from_ipc_handle", "handle");
  std::size_t bytes = static_cast<std::size_t>(info.size * info.itemsize);
  CUipcEventHandle ipc;
  if (bytes != sizeof(ipc))
    throw py::value_error("an IPC event handle is " + std::to_string(sizeof(ipc)) +
                          " bytes (from Event.ipc_handle()), got " + std::to_string(bytes));
  std::memcpy(&ipc, info.ptr, sizeof(ipc));
  return ipc;
}

std::intptr_t as_int(const void *handle) { return reinterpret_cast<std::intptr_t>(handle); }

} // namespace

void init_stream(py::module_ &m) {
  // Event's class exists before Stream's methods are bound: pybind11 writes a signature's types
  // when a method is bound, and wait_for_event's would otherwise name the C++ type.
  py::class_<event> event_class(m, "Event",
                                "A CUDA event of the current context (flags: event_flags).");

  py::class_<stream>(m, "Stream",
                     "A CUDA stream of the current context. flags: 0, or 1 for a stream that "
                     "does not synchronise with the legacy default stream; priority (beyond "
                     "PyCUDA): lower numbers are scheduled first, None = the default priority.")
      .def(py::init<unsigned, std::optional<int>>(), py::arg("flags") = 0,
           py::arg("priority") = py::none())
      .def("synchronize", &stream::synchronize, "Waits until the stream's work is done.")
      .def("is_done", &stream::is_done, "Whether the stream's work is done, without waiting.")
      .def("wait_for_event", &stream::wait_for_event, py::arg("event"),
           "Makes later work on this stream wait for `event` (cuStreamWaitEvent)." CUPLUG_DOC_PARAMS
           "event : Event\n    A recorded event.\n")
      .def_property_readonly("priority", &stream::priority,
                             "The stream's priority (lower numbers are scheduled first).")
      .def("begin_capture", &stream::begin_capture,
           py::arg_v("mode", CU_STREAM_CAPTURE_MODE_GLOBAL, "capture_mode.GLOBAL"),
           "Starts recording work issued to this stream into a graph (beyond PyCUDA); kernel "
           "__call__ / prepared_async_call launches on it are recorded, not run." CUPLUG_DOC_PARAMS
           "mode : capture_mode\n    Which other threads' unsafe calls the capture forbids.\n")
      .def(
          "end_capture", [](stream &s) -> hint::graph { return s.end_capture(); },
          "Stops capturing and returns the recorded Graph. The memory and objects the recorded "
          "work uses must stay alive while the graph may run.")
      .def_property_readonly("is_capturing", &stream::is_capturing,
                             "Whether the stream is capturing into a graph.")
      .def_property_readonly(
          "handle", [](const stream &s) { return as_int(s.handle()); }, "The CUstream as an int.")
      .def(
          "__cuda_stream__", [](const stream &s) { return py::make_tuple(0, as_int(s.handle())); },
          "The CUDA stream protocol: (version 0, CUstream as an int).");

  event_class.def(py::init<unsigned>(), py::arg("flags") = 0)
      .def(
          "record",
          [](const hint::event &self, const hint::stream &stream_obj) -> hint::event {
            self.cast<event &>().record(stream_obj);
            return self;
          },
          py::arg("stream") = py::none(),
          "Records the event on a stream (cuEventRecord)." CUPLUG_DOC_PARAMS CUPLUG_DOC_STREAM_PARAM
              CUPLUG_DOC_RETURNS "Event\n    self.\n")
      .def(
          "synchronize",
          [](const hint::event &self) -> hint::event {
            self.cast<event &>().synchronize();
            return self;
          },
          "Waits for the event." CUPLUG_DOC_RETURNS "Event\n    self.\n")
      .def("query", &event::query, "Whether the event has happened, without waiting.")
      .def(
          "time_since",
          [](const event &self, const event &start) { return event::elapsed(start, self); },
          py::arg("start"),
          "The time from `start` to this event: end.time_since(start)." CUPLUG_DOC_PARAMS
          "start : Event\n    The earlier event.\n" CUPLUG_DOC_RETURNS "float\n    Milliseconds.\n")
      .def(
          "time_till",
          [](const event &self, const event &end) { return event::elapsed(self, end); },
          py::arg("end"),
          "The time from this event to `end`." CUPLUG_DOC_PARAMS
          "end : Event\n    The later event.\n" CUPLUG_DOC_RETURNS "float\n    Milliseconds.\n")
      .def("ipc_handle", &event::ipc_handle,
           "A bytearray another process can open with Event.from_ipc_handle (needs "
           "event_flags.INTERPROCESS | DISABLE_TIMING).")
      .def_static(
          "from_ipc_handle",
          [](const py::buffer &data) {
            return std::make_unique<event>(ipc_event_handle_from(data));
          },
          py::arg("handle"),
          "Opens another process's event in the current context." CUPLUG_DOC_PARAMS
          "handle : collections.abc.Buffer\n    The 64 bytes ipc_handle() gave in the other "
          "process.\n" CUPLUG_DOC_RETURNS "Event\n    The event.\n")
      .def_property_readonly(
          "handle", [](const event &e) { return as_int(e.handle()); }, "The CUevent as an int.");
}

} // namespace cuplug::python
