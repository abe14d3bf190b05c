// The "gl" interop plugin: OpenGL buffers and images shared with CUDA through the driver's
// cuGraphicsGL* entry points.
#pragma once

#include <cuplug/interop.hpp>
#include <cuplug/options.hpp>

namespace cuplug::plugins {

// Every operation is one driver call (through the core's driver table) in the current CUDA
// context, with the GL context the resource belongs to current on the calling thread. The plugin
// itself links no GL library: the driver talks to GL. Takes no options.
class gl_interop final : public interop {
public:
  explicit gl_interop(const options &opts);

private:
  void do_initialize() override;
  CUgraphicsResource do_register_buffer(std::uint32_t gl_buffer, interop_flags flags) override;
  CUgraphicsResource do_register_image(const gl_image &image, interop_flags flags) override;
  void do_unregister(CUgraphicsResource resource) override;
  void do_map(const CUgraphicsResource *resources, std::size_t count, CUstream stream) override;
  void do_unmap(const CUgraphicsResource *resources, std::size_t count, CUstream stream) override;
  mapped_buffer do_mapped_pointer(CUgraphicsResource resource) override;
  CUarray do_mapped_array(CUgraphicsResource resource, unsigned array_index,
                          unsigned mip_level) override;
};

} // namespace cuplug::plugins
