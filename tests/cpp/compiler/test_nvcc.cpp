// Tests of the nvcc compiler plugin: finding nvcc, outputs, name expressions, temp dirs, errors.
#define BOOST_TEST_MODULE compiler_nvcc
#include <boost/test/included/unit_test.hpp>

#include "compiler_test_support.hpp"
#include "test_support.hpp"

#include <cuplug/compiler.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/registry.hpp>

#include <cstdlib>

using namespace cuplug;
using namespace compiler_test_support;
namespace fs = std::filesystem;

namespace {

plugin_ptr<compiler> make_nvcc(std::map<std::string, std::string> opts = {}) {
  return registry::instance().create<compiler>(plugin_kind::compiler, "nvcc",
                                               options(std::move(opts)));
}

plugin_ptr<compiler> nvcc() {
  static plugin_ptr<compiler> c = make_nvcc();
  return c;
}

// Points TMPDIR at a fresh folder for the scope, so the test sees what nvcc runs leave behind.
struct scoped_tmpdir {
  test_support::temp_dir dir;
  std::string old;
  bool had;
  scoped_tmpdir() {
    const char *o = std::getenv("TMPDIR");
    had = o != nullptr;
    if (had)
      old = o;
    ::setenv("TMPDIR", dir.path().c_str(), 1);
  }
  ~scoped_tmpdir() {
    if (had)
      ::setenv("TMPDIR", old.c_str(), 1);
    else
      ::unsetenv("TMPDIR");
  }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir.path()), {}));
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(reports_version_and_archs) {
  std::string v = nvcc()->version();
  BOOST_TEST(v.rfind("nvcc ", 0) == 0u, v);
  CHECK_CONTAINS(v, "V"); // the full build, e.g. "nvcc 13.0 (V13.0.88, cuda_13.0.r13.0/...)"
  auto archs = nvcc()->supported_archs();
  BOOST_REQUIRE(!archs.empty());
  BOOST_TEST(std::is_sorted(archs.begin(), archs.end()));
  BOOST_TEST((std::find(archs.begin(), archs.end(), 90) != archs.end()));
}

BOOST_AUTO_TEST_CASE(compiles_to_ptx_cubin_and_fatbin_and_cleans_up) {
  scoped_tmpdir tmp;
  auto ptx = nvcc()->compile(request(double_array, image_format::ptx));
  CHECK_CONTAINS(ptx.data, ".entry double_array");
  CHECK_CONTAINS(ptx.data, ".target sm_90");
  CHECK_CONTAINS(ptx.command, "-arch=compute_90");
  auto cubin = nvcc()->compile(request(double_array, image_format::cubin));
  BOOST_TEST(is_elf(cubin.data));
  CHECK_CONTAINS(cubin.command, "-arch=sm_90");
  auto fatbin = nvcc()->compile(request(double_array, image_format::fatbin));
  BOOST_TEST(fatbin.data.size() > 16u);
  BOOST_TEST(tmp.entries() == 0u); // every temp dir removed
}

BOOST_AUTO_TEST_CASE(lowers_name_expressions_for_every_target) {
  scoped_tmpdir tmp;
  for (auto target : {image_format::ptx, image_format::cubin, image_format::fatbin}) {
    auto r = request(templates, target);
    r.name_expressions = {"scale<float>", "scale<double>", "ns::fill<3>"};
    auto out = nvcc()->compile(r);
    BOOST_TEST(out.lowered_names.at("scale<float>") == "_Z5scaleIfEvPT_S0_");
    BOOST_TEST(out.lowered_names.at("scale<double>") == "_Z5scaleIdEvPT_S0_");
    BOOST_TEST(out.lowered_names.at("ns::fill<3>") == "_ZN2ns4fillILi3EEEvPf");
  }
  // Relocatable code: the helper variables stay out of the linked symbols.
  auto r = request(templates, image_format::ptx);
  r.relocatable = true;
  r.name_expressions = {"scale<float>"};
  BOOST_TEST(nvcc()->compile(r).lowered_names.at("scale<float>") == "_Z5scaleIfEvPT_S0_");
  BOOST_TEST(tmp.entries() == 0u);
}

BOOST_AUTO_TEST_CASE(a_bad_name_expression_points_at_itself) {
  auto r = request(templates, image_format::cubin);
  r.name_expressions = {"scale<float>", "scael<int>"};
  try {
    nvcc()->compile(r);
    BOOST_FAIL("expected compile_error");
  } catch (const compile_error &e) {
    CHECK_CONTAINS(e.log(), "name_expressions(2)");
    CHECK_CONTAINS(e.log(), "scael");
  }
}

BOOST_AUTO_TEST_CASE(errors_carry_log_line_numbers_and_command) {
  scoped_tmpdir tmp;
  auto r = request("__global__ void k(float *a) {\n  a[0] = 1;\n  undefined_thing = 2;\n}\n",
                   image_format::cubin);
  try {
    nvcc()->compile(r);
    BOOST_FAIL("expected compile_error");
  } catch (const compile_error &e) {
    CHECK_CONTAINS(e.what(), "nvcc compilation of kernel.cu failed");
    CHECK_CONTAINS(e.log(), "kernel.cu(3): error");
    CHECK_CONTAINS(e.log(), "undefined_thing");
    CHECK_CONTAINS(e.command(), "nvcc");
    CHECK_CONTAINS(e.command(), "--cubin");
  }
  BOOST_TEST(tmp.entries() == 0u);
}

BOOST_AUTO_TEST_CASE(keep_leaves_the_temp_dir) {
  scoped_tmpdir tmp;
  auto r = request(double_array, image_format::cubin);
  r.options = {"--keep"};
  auto out = nvcc()->compile(r);
  BOOST_REQUIRE(tmp.entries() == 1u);
  fs::path kept = *fs::directory_iterator(tmp.dir.path());
  BOOST_TEST(fs::exists(kept / "kernel.cu"));
  BOOST_TEST(fs::exists(kept / "kernel.ptx"));
  CHECK_CONTAINS(out.command, kept.string());
}

BOOST_AUTO_TEST_CASE(relative_include_dirs_resolve_from_the_callers_cwd) {
  test_support::temp_dir dir;
  fs::create_directories(dir.path() / "inc");
  dir.write("inc/scale.h", "#define SCALE 6.0f\n");
  auto old = fs::current_path();
  fs::current_path(dir.path());
  auto r =
      request("#include \"scale.h\"\nextern \"C\" __global__ void k(float *a) { a[0] = SCALE; }\n",
              image_format::ptx);
  r.include_dirs = {"inc"};
  auto a = nvcc()->compile(r);
  r.include_dirs.clear();
  r.options = {"-Iinc"};
  auto b = nvcc()->compile(r);
  fs::current_path(old);
  BOOST_TEST(stores_six(a.data), a.data);
  BOOST_TEST(stores_six(b.data), b.data);
}

BOOST_AUTO_TEST_CASE(finds_nvcc_by_option_and_environment) {
  try {
    make_nvcc({{"nvcc", "/nonexistent/bin/nvcc"}});
    BOOST_FAIL("expected config_error");
  } catch (const config_error &e) {
    CHECK_CONTAINS(e.what(), "nvcc='/nonexistent/bin/nvcc'");
  }
  ::setenv("NVCC", "/nonexistent/nvcc-from-env", 1);
  try {
    make_nvcc();
    BOOST_FAIL("expected config_error");
  } catch (const config_error &e) {
    CHECK_CONTAINS(e.what(), "NVCC='/nonexistent/nvcc-from-env'");
  }
  // A real nvcc given by path, through the environment and as the option: the same toolchain.
  std::string real;
  for (const char *candidate : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (::access(candidate, X_OK) == 0)
      real = candidate;
  if (real.empty())
    return; // no toolkit at a standard path; the PATH lookup was tested above
  ::setenv("NVCC", real.c_str(), 1);
  auto from_env = make_nvcc();
  ::unsetenv("NVCC");
  auto from_option = make_nvcc({{"nvcc", real}});
  BOOST_TEST(from_env->version() == nvcc()->version());
  BOOST_TEST(from_option->version() == nvcc()->version());
  BOOST_TEST(is_elf(from_option->compile(request(double_array, image_format::cubin)).data));
}
