// Tests of the nvrtc compiler plugin: outputs, name expressions, include paths, errors.
#define BOOST_TEST_MODULE compiler_nvrtc
#include <boost/test/included/unit_test.hpp>

#include "compiler_test_support.hpp"
#include "test_support.hpp"

#include <cuplug/compile_cache.hpp>
#include <cuplug/compiler.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/registry.hpp>

using namespace cuplug;
using namespace compiler_test_support;
using test_support::contains;

namespace {

plugin_ptr<compiler> nvrtc() {
  static plugin_ptr<compiler> c =
      registry::instance().create<compiler>(plugin_kind::compiler, "nvrtc", options{});
  return c;
}

} // namespace

BOOST_AUTO_TEST_CASE(reports_version_and_archs) {
  BOOST_TEST(nvrtc()->backend_name() == "nvrtc");
  BOOST_TEST(nvrtc()->version().rfind("nvrtc ", 0) == 0u, nvrtc()->version());
  auto archs = nvrtc()->supported_archs();
  BOOST_REQUIRE(!archs.empty());
  BOOST_TEST(std::is_sorted(archs.begin(), archs.end()));
  BOOST_TEST((std::find(archs.begin(), archs.end(), 90) != archs.end()));
}

BOOST_AUTO_TEST_CASE(compiles_to_ptx_and_cubin) {
  auto ptx = nvrtc()->compile(request(double_array, image_format::ptx));
  BOOST_TEST(ptx.format == image_format::ptx);
  CHECK_CONTAINS(ptx.data, ".entry double_array");
  CHECK_CONTAINS(ptx.data, ".target sm_90");
  BOOST_TEST(ptx.data.back() != '\0');
  CHECK_CONTAINS(ptx.command, "-arch=compute_90");

  auto cubin = nvrtc()->compile(request(double_array, image_format::cubin));
  BOOST_TEST(is_elf(cubin.data));
  CHECK_CONTAINS(cubin.data, "double_array");
  CHECK_CONTAINS(cubin.command, "-arch=sm_90");

  auto lto = nvrtc()->compile(request(double_array, image_format::ltoir));
  BOOST_TEST(!lto.data.empty());
}

BOOST_AUTO_TEST_CASE(lowers_name_expressions) {
  auto r = request(std::string(templates) + "__device__ int counter;\n", image_format::cubin);
  r.name_expressions = {"scale<float>", "scale<double>", "ns::fill<3>", "&counter"};
  auto out = nvrtc()->compile(r);
  BOOST_TEST(out.lowered_names.at("scale<float>") == "_Z5scaleIfEvPT_S0_");
  BOOST_TEST(out.lowered_names.at("scale<double>") == "_Z5scaleIdEvPT_S0_");
  BOOST_TEST(out.lowered_names.at("ns::fill<3>") == "_ZN2ns4fillILi3EEEvPf");
  BOOST_TEST(out.lowered_names.at("&counter") == "counter");
  CHECK_CONTAINS(out.data, "_Z5scaleIdEvPT_S0_");
}

BOOST_AUTO_TEST_CASE(errors_carry_log_line_numbers_and_command) {
  auto r = request("__global__ void k(float *a) {\n  a[0] = 1;\n  undefined_thing = 2;\n}\n",
                   image_format::cubin);
  try {
    nvrtc()->compile(r);
    BOOST_FAIL("expected compile_error");
  } catch (const compile_error &e) {
    CHECK_CONTAINS(e.what(), "nvrtc compilation of kernel.cu failed");
    CHECK_CONTAINS(e.log(), "kernel.cu(3): error");
    CHECK_CONTAINS(e.log(), "undefined_thing");
    CHECK_CONTAINS(e.command(), "nvrtc");
    CHECK_CONTAINS(e.command(), "-arch=sm_90");
  }
}

BOOST_AUTO_TEST_CASE(warnings_of_a_good_compile_are_in_the_log) {
  auto r = request("#warning cuplug says hello\n__global__ void k(float *a) { a[0] = 1; }\n",
                   image_format::ptx);
  auto out = nvrtc()->compile(r);
  CHECK_CONTAINS(out.log, "cuplug says hello");
  CHECK_CONTAINS(out.log, "kernel.cu(1): warning");
}

BOOST_AUTO_TEST_CASE(names_the_option_it_rejects) {
  auto r = request(double_array, image_format::ptx);
  r.options = {"-DFOO=1", "-Wall"};
  try {
    nvrtc()->compile(r);
    BOOST_FAIL("expected config_error");
  } catch (const config_error &e) {
    CHECK_CONTAINS(e.what(), "nvrtc does not accept option '-Wall'");
    BOOST_TEST(!contains(e.what(), "'-DFOO=1'"));
  }
}

BOOST_AUTO_TEST_CASE(refuses_what_it_cannot_make) {
  BOOST_CHECK_THROW(nvrtc()->compile(request(double_array, image_format::fatbin)), not_supported);
  BOOST_CHECK_THROW(nvrtc()->compile(request(double_array, image_format::cubin, "")), config_error);
  BOOST_CHECK_THROW(nvrtc()->compile(request(double_array, image_format::cubin, "sm_nope")),
                    config_error);
}

BOOST_AUTO_TEST_CASE(user_include_dirs_and_macros) {
  test_support::temp_dir dir;
  dir.write("scale.h", "#define SCALE (FACTOR * 2.0f)\n");
  auto r =
      request("#include \"scale.h\"\nextern \"C\" __global__ void k(float *a) { a[0] = SCALE; }\n",
              image_format::ptx);
  r.include_dirs = {dir.path().string()};
  r.options = {"-DFACTOR=3"};
  auto out = nvrtc()->compile(r);
  BOOST_TEST(stores_six(out.data), out.data);
}

BOOST_AUTO_TEST_CASE(cub_compiles_from_the_toolkit_headers) {
  auto r = request(R"(#include <cub/block/block_reduce.cuh>
extern "C" __global__ void block_sum(const float *in, float *out) {
  using reduce = cub::BlockReduce<float, 128>;
  __shared__ typename reduce::TempStorage tmp;
  float s = reduce(tmp).Sum(in[threadIdx.x]);
  if (threadIdx.x == 0) *out = s;
}
)",
                   image_format::cubin);
  auto out = nvrtc()->compile(r);
  BOOST_TEST(is_elf(out.data));
}

BOOST_AUTO_TEST_CASE(relocatable_code_links_later) {
  const char *src = "extern __device__ float helper(float);\n"
                    "extern \"C\" __global__ void k(float *a) { a[0] = helper(a[0]); }\n";
  auto r = request(src, image_format::cubin);
  BOOST_CHECK_THROW(nvrtc()->compile(r), compile_error); // unresolved without -rdc
  r.relocatable = true;
  auto out = nvrtc()->compile(r);
  BOOST_TEST(is_elf(out.data));
  CHECK_CONTAINS(out.command, "-rdc=true");
}
