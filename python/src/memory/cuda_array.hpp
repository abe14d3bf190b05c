// CUDA arrays (cuArrayCreate / cuArray3DCreate) as a C++ class, shared by the Array binding, the
// array copies and texture / surface objects, which read its handle and descriptor without a
// Python call.
#pragma once

#include "driver/context.hpp"

#include <cstddef>
#include <memory>

namespace cuplug::python {

// An array made in the current context, destroyed under that context by free() or when the last
// reference (the Python Array, a TextureObject, a copy descriptor) goes. A failed destroy prints
// PyCUDA's clean-up warning and never throws.
class cuda_array : public context_dependent {
public:
  explicit cuda_array(const CUDA_ARRAY_DESCRIPTOR &desc);
  explicit cuda_array(const CUDA_ARRAY3D_DESCRIPTOR &desc);
  // An array someone else owns (a mapped GL image's, cuplug.gl): never destroyed here, and
  // `owner` lives as long as this object; free() only forgets the handle.
  static std::shared_ptr<cuda_array> borrowed(CUarray handle, std::shared_ptr<void> owner);
  ~cuda_array();
  cuda_array(const cuda_array &) = delete;
  cuda_array &operator=(const cuda_array &) = delete;

  // The handle; LogicError "<routine> failed: invalid resource handle - array was freed" after
  // free(), so a freed array never reaches the driver.
  CUarray handle(const char *routine = "Array.handle") const;
  bool freed() const noexcept { return handle_ == nullptr; }
  // What it was made with, in 3D form (Height 0: 1D; Depth 0: not 3D nor layered).
  const CUDA_ARRAY3D_DESCRIPTOR &descriptor() const noexcept { return desc_; }
  // Bytes of one element (all channels) and of the whole array.
  std::size_t element_bytes() const noexcept;
  std::size_t total_bytes() const noexcept;

  // Destroys it now; a second call does nothing (as PyCUDA).
  void free();

private:
  cuda_array() = default;
  CUarray handle_ = nullptr;
  CUDA_ARRAY3D_DESCRIPTOR desc_{};
  std::shared_ptr<void> owner_; // set for borrowed arrays
  bool borrowed_ = false;
};

using cuda_array_ptr = std::shared_ptr<cuda_array>;

// Bytes of one channel of `format`; 0 for formats without a fixed per-channel size.
std::size_t channel_bytes(CUarray_format format) noexcept;

// The array behind `obj` when it is an Array, nullptr otherwise. Never throws.
cuda_array *as_cuda_array(py::handle obj) noexcept;

} // namespace cuplug::python
