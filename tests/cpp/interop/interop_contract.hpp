// The interop contract: what every interop backend must do with GL objects the case provides, as
// one Boost.Test suite per backend (instantiated by CUPLUG_INTEROP_CONTRACT).
#pragma once

#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/interop.hpp>
#include <cuplug/registry.hpp>

#include <boost/test/unit_test.hpp>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace cuplug::test {

// One backend under test, with a current CUDA context and a GL context (or the fake's stand-in)
// in which the functions below make GL objects.
struct interop_case {
  std::function<plugin_ptr<interop>()> make;
  // A GL buffer of `bytes` zeroed bytes.
  std::function<std::uint32_t(std::size_t bytes)> buffer;
  // What GL sees in a buffer (read back through GL, not CUDA).
  std::function<std::vector<unsigned char>(std::uint32_t buffer, std::size_t bytes)> read;
  // An RGBA8 image of `target`, width x height, `layers` layers (2D arrays) and `levels` levels.
  std::function<std::uint32_t(gl_image_target, int width, int height, int layers, int levels)>
      image;
};

// The CUresult of the cuda_error `f` throws; 0 when it throws nothing.
template <class F> int cuda_code(F &&f, std::string *message = nullptr) {
  try {
    f();
  } catch (const cuda_error &e) {
    if (message)
      *message = e.what();
    return e.code();
  }
  return 0;
}

inline void contract_buffer_round_trip(const interop_case &c) {
  auto gl = c.make();
  gl->initialize();
  const std::uint32_t name = c.buffer(4096);
  const CUgraphicsResource r = gl->register_buffer(name, interop_flags::write_discard);
  gl->map(r);
  const mapped_buffer m = gl->mapped_pointer(r);
  BOOST_TEST(m.ptr != 0u);
  BOOST_TEST(m.bytes == 4096u);
  std::vector<unsigned char> bytes(4096);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<unsigned char>(i * 7);
  CUPLUG_CALL(cuMemcpyHtoD, m.ptr, bytes.data(), bytes.size());
  CUPLUG_CALL(cuCtxSynchronize, nullptr);
  gl->unmap(r);
  BOOST_TEST(c.read(name, bytes.size()) == bytes); // GL sees what CUDA wrote
  gl->unregister(r);
}

inline void contract_map_state_errors(const interop_case &c) {
  auto gl = c.make();
  const CUgraphicsResource r = gl->register_buffer(c.buffer(256));
  BOOST_TEST(cuda_code([&] { gl->unmap(r); }) == CUDA_ERROR_NOT_MAPPED);
  BOOST_TEST(cuda_code([&] { (void)gl->mapped_pointer(r); }) == CUDA_ERROR_NOT_MAPPED);
  gl->map(r);
  std::string message;
  BOOST_TEST(cuda_code([&] { gl->map(r); }, &message) == CUDA_ERROR_ALREADY_MAPPED);
  BOOST_TEST(message.find("cuGraphicsMapResources") != std::string::npos, message);
  BOOST_TEST(cuda_code([&] { (void)gl->mapped_array(r); }) == CUDA_ERROR_NOT_MAPPED_AS_ARRAY);
  gl->unmap(r); // still mapped once: the failed map changed nothing
  BOOST_TEST(cuda_code([&] { gl->unmap(r); }) == CUDA_ERROR_NOT_MAPPED);
  gl->unregister(r);
}

inline void contract_maps_several_on_a_stream(const interop_case &c) {
  auto gl = c.make();
  const CUgraphicsResource a = gl->register_buffer(c.buffer(64));
  const CUgraphicsResource b = gl->register_buffer(c.buffer(128), interop_flags::read_only);
  CUstream stream = nullptr;
  CUPLUG_CALL(cuStreamCreate, &stream, 0);
  gl->map({a, b}, stream);
  BOOST_TEST(gl->mapped_pointer(a).bytes == 64u);
  BOOST_TEST(gl->mapped_pointer(b).bytes == 128u);
  BOOST_TEST(gl->mapped_pointer(a).ptr != gl->mapped_pointer(b).ptr);
  gl->unmap({a, b}, stream);
  gl->map(a, stream);
  // One of the list already mapped: the call fails.
  BOOST_TEST(cuda_code([&] { gl->map({b, a}, stream); }) == CUDA_ERROR_ALREADY_MAPPED);
  gl->unmap(a, stream);
  CUPLUG_CALL(cuStreamDestroy, stream);
  gl->unregister(a);
  gl->unregister(b);
}

inline void contract_image_arrays(const interop_case &c) {
  auto gl = c.make();
  const std::uint32_t name = c.image(gl_image_target::texture_2d_array, 64, 32, 3, 2);
  const CUgraphicsResource r =
      gl->register_image({gl_image_target::texture_2d_array, name}, interop_flags::none);
  BOOST_TEST(cuda_code([&] { (void)gl->mapped_array(r); }) == CUDA_ERROR_NOT_MAPPED);
  gl->map(r);
  const CUarray layer0 = gl->mapped_array(r, 0, 0), layer2 = gl->mapped_array(r, 2, 0);
  const CUarray level1 = gl->mapped_array(r, 0, 1);
  BOOST_TEST((layer0 != layer2 && layer0 != level1));
  CUDA_ARRAY3D_DESCRIPTOR d0{}, d1{};
  CUPLUG_CALL(cuArray3DGetDescriptor, &d0, layer0);
  CUPLUG_CALL(cuArray3DGetDescriptor, &d1, level1);
  BOOST_TEST(d0.Width == 64u);
  BOOST_TEST(d0.Height == 32u);
  BOOST_TEST(d0.NumChannels == 4u);
  BOOST_TEST(d0.Format == CU_AD_FORMAT_UNSIGNED_INT8);
  BOOST_TEST(d1.Width == 32u); // mip level 1: half of level 0
  BOOST_TEST(cuda_code([&] { (void)gl->mapped_pointer(r); }) == CUDA_ERROR_NOT_MAPPED_AS_POINTER);
  BOOST_TEST(cuda_code([&] { (void)gl->mapped_array(r, 3, 0); }) == CUDA_ERROR_INVALID_VALUE);
  BOOST_TEST(cuda_code([&] { (void)gl->mapped_array(r, 0, 2); }) == CUDA_ERROR_INVALID_VALUE);
  gl->unmap(r);
  gl->unregister(r);
}

inline void contract_unknown_gl_objects_are_named(const interop_case &c) {
  auto gl = c.make();
  std::string message;
  BOOST_TEST(cuda_code([&] { (void)gl->register_buffer(987654); }, &message) != 0);
  BOOST_TEST(message.find("GL buffer 987654") != std::string::npos, message);
  BOOST_TEST(cuda_code(
                 [&] {
                   (void)gl->register_image({gl_image_target::texture_2d, 987655});
                 },
                 &message) != 0);
  BOOST_TEST(message.find("GL_TEXTURE_2D 987655") != std::string::npos, message);
}

inline void contract_unregister_while_mapped(const interop_case &c) {
  auto gl = c.make();
  const std::uint32_t name = c.buffer(512);
  const CUgraphicsResource r = gl->register_buffer(name);
  gl->map(r);
  gl->unregister(r); // never throws; the driver releases the mapping with the registration
  // The GL buffer can be registered and mapped again.
  const CUgraphicsResource again = gl->register_buffer(name);
  gl->map(again);
  BOOST_TEST(gl->mapped_pointer(again).bytes == 512u);
  gl->unmap(again);
  gl->unregister(again);
}

} // namespace cuplug::test

// One suite named `suite` running every contract test on the case `make_case()` returns; the
// fixture `fixture` provides the CUDA (and GL) context.
#define CUPLUG_INTEROP_CONTRACT(suite, fixture, make_case, ...)                                    \
  BOOST_FIXTURE_TEST_SUITE(suite, fixture __VA_ARGS__)                                             \
  BOOST_AUTO_TEST_CASE(a_buffer_written_by_cuda_holds_those_bytes_in_gl) {                         \
    cuplug::test::contract_buffer_round_trip(make_case());                                         \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(double_map_unmap_of_unmapped_and_pointer_of_unmapped_fail) {                \
    cuplug::test::contract_map_state_errors(make_case());                                          \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(several_resources_map_at_once_on_a_stream) {                                \
    cuplug::test::contract_maps_several_on_a_stream(make_case());                                  \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(an_image_maps_to_one_cuda_array_per_layer_and_level) {                      \
    cuplug::test::contract_image_arrays(make_case());                                              \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(registering_what_gl_does_not_have_names_the_gl_object) {                    \
    cuplug::test::contract_unknown_gl_objects_are_named(make_case());                              \
  }                                                                                                \
  BOOST_AUTO_TEST_CASE(unregistering_a_mapped_resource_releases_it) {                              \
    cuplug::test::contract_unregister_while_mapped(make_case());                                   \
  }                                                                                                \
  BOOST_AUTO_TEST_SUITE_END()
