// The graphics interop interface: share GL buffers with CUDA without a host copy.
#pragma once

#include <cuplug/plugin_abi.hpp>

#include <cuplug/plugin.hpp>

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace cuplug {

enum class interop_flags : unsigned { none = 0, read_only = 1, write_discard = 2 };

// Registered resources are identified by the driver's CUgraphicsResource. map() makes the
// buffer visible to CUDA work on `stream` and returns its device address and size.
class CUPLUG_API interop : public plugin_object {
public:
  void initialize() { do_initialize(); }
  CUgraphicsResource register_buffer(std::uint32_t gl_buffer, interop_flags flags) {
    return do_register_buffer(gl_buffer, flags);
  }
  void unregister(CUgraphicsResource resource) noexcept;
  std::pair<CUdeviceptr, std::size_t> map(CUgraphicsResource resource, CUstream stream = nullptr) {
    return do_map(resource, stream);
  }
  void unmap(CUgraphicsResource resource, CUstream stream = nullptr) { do_unmap(resource, stream); }

private:
  virtual void do_initialize() = 0;
  virtual CUgraphicsResource do_register_buffer(std::uint32_t gl_buffer, interop_flags flags) = 0;
  virtual void do_unregister(CUgraphicsResource resource) = 0;
  virtual std::pair<CUdeviceptr, std::size_t> do_map(CUgraphicsResource resource,
                                                     CUstream stream) = 0;
  virtual void do_unmap(CUgraphicsResource resource, CUstream stream) = 0;
};

} // namespace cuplug
