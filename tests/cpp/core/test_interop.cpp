// Tests core/src/interop.cpp: the graphics interop door (flags, GL image registration, mapping
// several resources, mapped pointers and arrays) with an in-test interop plugin.
#define BOOST_TEST_MODULE interop
#include <boost/test/included/unit_test.hpp>

#include "door_support.hpp"

#include <cuplug/interop.hpp>

#include <ostream>
#include <vector>

// Printers for BOOST_TEST's failure messages (found by ADL).
namespace cuplug {
std::ostream &operator<<(std::ostream &os, interop_flags f) {
  return os << "interop_flags(" << static_cast<unsigned>(f) << ")";
}
std::ostream &operator<<(std::ostream &os, gl_image_target t) { return os << to_string(t); }
} // namespace cuplug

using namespace cuplug;
using door_test::failure;
using door_test::invalid_argument_message;

namespace {

CUgraphicsResource fake_resource(std::uintptr_t n) {
  return reinterpret_cast<CUgraphicsResource>(n);
}

// Records what reaches it; throws what `fail` says; returns what `result_*` say.
class fake_interop : public interop {
public:
  fake_interop() { set_backend_name("fake_gl"); }
  failure fail = failure::none;
  CUgraphicsResource result_resource = fake_resource(0x100);
  mapped_buffer result_buffer{0x20000, 4096};
  CUarray result_array = reinterpret_cast<CUarray>(0x300);

  interop_flags last_flags = interop_flags::none;
  gl_image last_image;
  std::vector<CUgraphicsResource> last_mapped, last_unmapped;
  CUstream last_stream = nullptr;
  unsigned last_index = 99, last_level = 99;
  int unregistered = 0;

private:
  void do_initialize() override { door_test::raise(fail); }
  CUgraphicsResource do_register_buffer(std::uint32_t, interop_flags flags) override {
    door_test::raise(fail);
    last_flags = flags;
    return result_resource;
  }
  CUgraphicsResource do_register_image(const gl_image &image, interop_flags flags) override {
    door_test::raise(fail);
    last_image = image;
    last_flags = flags;
    return result_resource;
  }
  void do_unregister(CUgraphicsResource) override {
    door_test::raise(fail);
    ++unregistered;
  }
  void do_map(const CUgraphicsResource *r, std::size_t n, CUstream s) override {
    door_test::raise(fail);
    last_mapped.assign(r, r + n);
    last_stream = s;
  }
  void do_unmap(const CUgraphicsResource *r, std::size_t n, CUstream s) override {
    door_test::raise(fail);
    last_unmapped.assign(r, r + n);
    last_stream = s;
  }
  mapped_buffer do_mapped_pointer(CUgraphicsResource) override {
    door_test::raise(fail);
    return result_buffer;
  }
  CUarray do_mapped_array(CUgraphicsResource, unsigned index, unsigned level) override {
    door_test::raise(fail);
    last_index = index;
    last_level = level;
    return result_array;
  }
};

const CUgraphicsResource a = fake_resource(0x100), b = fake_resource(0x200);
const CUstream stream = reinterpret_cast<CUstream>(0x77);

} // namespace

BOOST_AUTO_TEST_CASE(flags_combine_like_cudas_register_flags) {
  constexpr interop_flags f = interop_flags::surface_load_store | interop_flags::texture_gather;
  static_assert(static_cast<unsigned>(f) == (CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST |
                                             CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER));
  BOOST_TEST(has_any(f, interop_flags::texture_gather));
  BOOST_TEST(!has_any(f, interop_flags::read_only));
  BOOST_TEST((f & interop_flags::texture_gather) == interop_flags::texture_gather);
  interop_flags g = interop_flags::none;
  g |= interop_flags::write_discard;
  BOOST_TEST(static_cast<unsigned>(g) == unsigned(CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD));
  g &= interop_flags::read_only;
  BOOST_TEST(g == interop_flags::none);
}

BOOST_AUTO_TEST_CASE(every_call_translates_foreign_exceptions) {
  fake_interop i;
  door_test::check_translation("interop", "fake_gl", "initialize", i.fail, [&] { i.initialize(); });
  door_test::check_translation("interop", "fake_gl", "register_buffer", i.fail,
                               [&] { (void)i.register_buffer(7); });
  door_test::check_translation("interop", "fake_gl", "register_image", i.fail, [&] {
    (void)i.register_image({gl_image_target::texture_2d, 3});
  });
  door_test::check_translation("interop", "fake_gl", "map", i.fail, [&] { i.map({a, b}); });
  door_test::check_translation("interop", "fake_gl", "unmap", i.fail, [&] { i.unmap(a); });
  door_test::check_translation("interop", "fake_gl", "mapped_pointer", i.fail,
                               [&] { (void)i.mapped_pointer(a); });
  door_test::check_translation("interop", "fake_gl", "mapped_array", i.fail,
                               [&] { (void)i.mapped_array(a, 1, 2); });
}

BOOST_AUTO_TEST_CASE(unregister_never_throws) {
  fake_interop i;
  for (failure f : {failure::foreign, failure::not_std, failure::core}) {
    i.fail = f;
    i.unregister(a); // reported on stderr, not thrown
  }
  i.fail = failure::none;
  i.unregister(nullptr);
  BOOST_TEST(i.unregistered == 0);
  i.unregister(a);
  BOOST_TEST(i.unregistered == 1);
}

BOOST_AUTO_TEST_CASE(buffers_are_registered_with_buffer_flags_only) {
  fake_interop i;
  BOOST_TEST(i.register_buffer(7, interop_flags::write_discard) == a);
  BOOST_TEST(i.last_flags == interop_flags::write_discard);
  BOOST_TEST(invalid_argument_message([&] { (void)i.register_buffer(0); }) ==
             "interop::register_buffer: GL buffer 0 is not a buffer object; pass a name from "
             "glGenBuffers");
  CHECK_CONTAINS(
      invalid_argument_message([&] { (void)i.register_buffer(7, interop_flags::texture_gather); }),
      "surface_load_store and texture_gather are for images; register images with "
      "register_image");
  BOOST_TEST(invalid_argument_message([&] {
               (void)i.register_buffer(7, interop_flags::read_only | interop_flags::write_discard);
             }) == "interop::register_buffer: read_only and write_discard exclude each other "
                   "(CUDA either only reads the resource or overwrites it without reading)");
  BOOST_TEST(invalid_argument_message([&] {
               (void)i.register_buffer(7, static_cast<interop_flags>(0x40));
             }) == "interop::register_buffer: flags 0x40 hold bits that are not interop_flags "
                   "(read_only, write_discard, surface_load_store, texture_gather)");
}

BOOST_AUTO_TEST_CASE(images_are_registered_with_a_gl_target) {
  fake_interop i;
  const gl_image cube{gl_image_target::texture_cube_map, 5};
  BOOST_TEST(i.register_image(cube, interop_flags::surface_load_store | interop_flags::read_only) ==
             a);
  BOOST_TEST(i.last_image.target == gl_image_target::texture_cube_map);
  BOOST_TEST(i.last_image.name == 5u);
  BOOST_TEST(static_cast<unsigned>(i.last_flags) ==
             (CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST | CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY));
  BOOST_TEST(static_cast<std::uint32_t>(gl_image_target::renderbuffer) == 0x8D41u);
  BOOST_TEST(std::string(to_string(gl_image_target::renderbuffer)) == "GL_RENDERBUFFER");

  BOOST_TEST(invalid_argument_message([&] {
               (void)i.register_image({gl_image_target::renderbuffer, 0});
             }) == "interop::register_image: GL GL_RENDERBUFFER image 0 is not an image "
                   "object; pass a name from glGenTextures or glGenRenderbuffers");
  CHECK_CONTAINS(invalid_argument_message([&] {
                   (void)i.register_image({static_cast<gl_image_target>(0x0DE0), 5}); // 1D
                 }),
                 "GL target 0xde0 cannot be registered; use GL_TEXTURE_2D");
}

BOOST_AUTO_TEST_CASE(several_resources_map_and_unmap_at_once) {
  fake_interop i;
  i.map({a, b}, stream);
  BOOST_TEST((i.last_mapped == std::vector<CUgraphicsResource>{a, b}));
  BOOST_TEST(i.last_stream == stream);
  i.unmap(b, stream);
  BOOST_TEST((i.last_unmapped == std::vector<CUgraphicsResource>{b}));
  i.last_mapped.clear();
  i.map(std::vector<CUgraphicsResource>{}); // nothing to map: the plugin is not asked
  BOOST_TEST(i.last_mapped.empty());

  BOOST_TEST(invalid_argument_message([&] {
               i.map({a, nullptr});
             }) == "interop::map: resource 1 of 2 is null; register it first");
  BOOST_TEST(invalid_argument_message([&] {
               i.unmap({a, b, a});
             }) == "interop::unmap: resources 0 and 2 are the same resource; list each once");
}

BOOST_AUTO_TEST_CASE(mapped_buffers_and_arrays) {
  fake_interop i;
  const mapped_buffer m = i.mapped_pointer(a);
  BOOST_TEST(m.ptr == device_ptr(0x20000));
  BOOST_TEST(m.bytes == 4096u);
  BOOST_TEST(i.mapped_array(a, 3, 1) == i.result_array);
  BOOST_TEST(i.last_index == 3u);
  BOOST_TEST(i.last_level == 1u);
  BOOST_TEST(invalid_argument_message([&] { (void)i.mapped_pointer(nullptr); }) ==
             "interop::mapped_pointer: the resource is null");
  BOOST_TEST(invalid_argument_message([&] { (void)i.mapped_array(nullptr); }) ==
             "interop::mapped_array: the resource is null");
}

BOOST_AUTO_TEST_CASE(a_plugin_that_returns_nothing_is_a_plugin_error) {
  fake_interop i;
  i.result_resource = nullptr;
  BOOST_CHECK_THROW((void)i.register_buffer(7), plugin_error);
  BOOST_CHECK_THROW((void)i.register_image({gl_image_target::texture_2d, 3}), plugin_error);
  i.result_buffer = {};
  BOOST_CHECK_THROW((void)i.mapped_pointer(a), plugin_error);
  i.result_array = nullptr;
  try {
    (void)i.mapped_array(a, 2, 0);
    BOOST_ERROR("no plugin_error");
  } catch (const plugin_error &e) {
    BOOST_TEST(std::string(e.what()) == "interop 'fake_gl' returned no CUDA array for array index "
                                        "2, mip level 0 instead of raising an error");
  }
}
