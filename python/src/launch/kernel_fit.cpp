// Checks a prepared format against the kernel's own parameters and moves it to their offsets.
#include "launch/arg_packer.hpp"
#include "launch/arg_values.hpp"

#include <algorithm>
#include <string>

namespace cuplug::python {

void fit_to_kernel(arg_layout &layout, const param_layout &params, const std::string &kernel,
                   const char *routine) {
  if (layout.slots.size() != params.size())
    throw py::type_error(std::string(routine) + ": format '" + layout.format + "' has " +
                         std::to_string(layout.slots.size()) + " arguments, but kernel '" + kernel +
                         "' takes " + std::to_string(params.size()) + " parameters");
  std::size_t end = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    arg_slot &slot = layout.slots[i];
    if (slot.size != params[i].second)
      throw py::type_error(std::string(routine) + ": kernel '" + kernel + "' parameter #" +
                           std::to_string(i) + " is " + std::to_string(params[i].second) +
                           " bytes, but format code '" + slot_format(slot.code, slot.size) +
                           "' packs " + std::to_string(slot.size) + " bytes (format '" +
                           layout.format + "')");
    slot.offset = static_cast<std::uint32_t>(params[i].first);
    end = std::max(end, params[i].first + params[i].second);
  }
  layout.bytes = end;
}

} // namespace cuplug::python
