// The interop contract for the "gl" plugin against the fake driver, whose GL objects are declared
// through its control API (there is no GL here); plus what only the fake can show (no resource
// left behind). The same paths on a real GPU and GL: tests/python/gl/test_gl_gpu.py.
#define BOOST_TEST_MODULE interop_contract
#include <boost/test/included/unit_test.hpp>

#include "fake_context.hpp"
#include "interop_contract.hpp"

#include <fake_cuda.h>

namespace {

using namespace cuplug;

std::uint32_t next_name = 100;

test::interop_case fake_gl_case() {
  test::interop_case c;
  c.make = [] { return registry::instance().create<interop>(plugin_kind::interop, "gl", {}); };
  c.buffer = [](std::size_t bytes) {
    const std::uint32_t name = ++next_name;
    BOOST_REQUIRE(fake_cuda_gl_buffer(name, bytes) == 0);
    return name;
  };
  c.read = [](std::uint32_t name, std::size_t bytes) {
    const auto *p = static_cast<const unsigned char *>(fake_cuda_gl_buffer_data(name));
    BOOST_REQUIRE(p != nullptr);
    return std::vector<unsigned char>(p, p + bytes);
  };
  c.image = [](gl_image_target target, int width, int height, int layers, int levels) {
    const std::uint32_t name = ++next_name;
    BOOST_REQUIRE(fake_cuda_gl_image(static_cast<unsigned>(target), name, width, height, layers,
                                     levels, CU_AD_FORMAT_UNSIGNED_INT8, 4) == 0);
    return name;
  };
  return c;
}

// The fake context, and no graphics resource left behind by a test.
struct fake_gl_context : fake_context {
  long live = fake_cuda_live_graphics_resources();
  ~fake_gl_context() { BOOST_TEST(fake_cuda_live_graphics_resources() == live); }
};

} // namespace

CUPLUG_INTEROP_CONTRACT(gl_on_the_fake_driver, fake_gl_context, fake_gl_case)

BOOST_FIXTURE_TEST_SUITE(gl_plugin, fake_context)

BOOST_AUTO_TEST_CASE(the_gl_plugin_is_the_default_interop_backend) {
  BOOST_TEST(std::string(default_backend(plugin_kind::interop)) == "gl");
  const plugin_info info = registry::instance().info(plugin_kind::interop, "gl");
  BOOST_TEST(info.path.find("libcuplug_interop_gl.so") != std::string::npos, info.path);
}

BOOST_AUTO_TEST_CASE(a_driver_failure_reaches_the_caller_as_cuda_error_naming_the_call) {
  auto gl = registry::instance().create<interop>(plugin_kind::interop, "gl", {});
  fake_cuda_gl_buffer(42, 16);
  fake_cuda_fail_next("cuGraphicsGLRegisterBuffer", CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, 1);
  std::string message;
  BOOST_TEST(test::cuda_code([&] { (void)gl->register_buffer(42); }, &message) ==
             CUDA_ERROR_INVALID_GRAPHICS_CONTEXT);
  BOOST_TEST(message.find("cuGraphicsGLRegisterBuffer failed") == 0u, message);
  BOOST_TEST(message.find("no usable GL context is current") != std::string::npos, message);
  fake_cuda_gl_buffer(42, 0);
}

BOOST_AUTO_TEST_CASE(registering_needs_a_current_cuda_context) {
  auto gl = registry::instance().create<interop>(plugin_kind::interop, "gl", {});
  fake_cuda_gl_buffer(43, 16);
  CUPLUG_CALL(cuCtxSetCurrent, nullptr);
  BOOST_TEST(test::cuda_code([&] { (void)gl->register_buffer(43); }) == CUDA_ERROR_INVALID_CONTEXT);
  fake_cuda_gl_buffer(43, 0);
}

BOOST_AUTO_TEST_SUITE_END()
