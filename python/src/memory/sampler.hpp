// Texture and surface objects as C++ classes: the 64-bit handle, its context, and the Python
// object it reads, which it keeps alive. The launcher packs them as kernel arguments.
#pragma once

#include "driver/context.hpp"

#include <memory>

namespace cuplug::python {

class device_allocation;
class cuda_array;

// A texture or surface object. Destroyed under its context by destroy() or on destruction; a
// failed destroy prints PyCUDA's clean-up warning and never throws.
class sampler {
public:
  enum class kind { texture, surface };
  sampler(kind k, context_ptr ctx, unsigned long long handle, py::object source);
  virtual ~sampler();
  sampler(const sampler &) = delete;
  sampler &operator=(const sampler &) = delete;

  // The handle; LogicError "TextureObject failed: invalid resource handle - it was destroyed"
  // after destroy(), so a destroyed object never reaches a kernel. Also LogicError once the
  // memory it reads was freed or its context destroyed (flag reads, no driver call).
  unsigned long long handle() const;
  py::object source() const { return source_; }
  void destroy();

  // What the handle reads, when cuplug knows it: checked by handle(). Holding `source` keeps the
  // memory alive; these catch an explicit free() (DeviceAllocation.free(), Array.free()).
  void watch(std::shared_ptr<device_allocation> memory, std::shared_ptr<cuda_array> array) {
    memory_ = std::move(memory);
    array_ = std::move(array);
  }

private:
  kind kind_;
  context_ptr ctx_;
  unsigned long long handle_;
  py::object source_;
  std::shared_ptr<device_allocation> memory_;
  std::shared_ptr<cuda_array> array_;
};

class texture_object final : public sampler {
  using sampler::sampler;
};
class surface_object final : public sampler {
  using sampler::sampler;
};

// True, with the handle in *out, when `obj` is a TextureObject or SurfaceObject (LogicError when
// it was destroyed); false for anything else. For the launcher's argument packing.
bool sampler_handle(py::handle obj, unsigned long long *out);

} // namespace cuplug::python
