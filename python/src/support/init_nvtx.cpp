// cuplug._core._nvtx: NVTX ranges and marks for cuplug.profiler (the user's, in NVTX's default
// domain, as CuPy's and PyTorch's are); cuplug's own are nvtx_ranges.hpp's.
#include "bindings.hpp"

#include <nvtx3/nvToolsExt.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>

namespace cuplug::python {
namespace {

nvtxEventAttributes_t attributes(const std::string &message, std::optional<std::uint32_t> argb) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message.c_str();
  if (argb) {
    a.colorType = NVTX_COLOR_ARGB;
    a.color = *argb;
  }
  return a;
}

} // namespace

void init_nvtx(py::module_ &m) {
  py::module_ n = m.def_submodule("_nvtx", "NVTX ranges and marks (cuplug.profiler)");
  n.def(
      "range_push",
      [](const std::string &message, std::optional<std::uint32_t> argb) {
        const nvtxEventAttributes_t a = attributes(message, argb);
        return nvtxRangePushEx(&a);
      },
      py::arg("message"), py::arg("argb") = py::none(),
      "Opens a nested range on this thread (nvtxRangePushEx); its depth, or a negative number "
      "when no tool is attached.");
  n.def(
      "range_pop", [] { return nvtxRangePop(); },
      "Closes this thread's innermost range (nvtxRangePop); the depth it had, or negative.");
  n.def(
      "mark",
      [](const std::string &message, std::optional<std::uint32_t> argb) {
        const nvtxEventAttributes_t a = attributes(message, argb);
        nvtxMarkEx(&a);
      },
      py::arg("message"), py::arg("argb") = py::none(), "An instant event (nvtxMarkEx).");
}

} // namespace cuplug::python
