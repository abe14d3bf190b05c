// Tests of the nvrtc compiler plugin: outputs, name expressions, include paths, what a compile
// read, debug / kept files / code, cancelling and time limits, errors.
#define BOOST_TEST_MODULE compiler_nvrtc
#include <boost/test/included/unit_test.hpp>

#include "compiler_test_support.hpp"
#include "test_support.hpp"

#include <cuplug/compile_cache.hpp>
#include <cuplug/compiler.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/registry.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

using namespace cuplug;
using namespace compiler_test_support;
using test_support::contains;
namespace fs = std::filesystem;

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

BOOST_AUTO_TEST_CASE(reports_the_files_a_compile_can_read) {
  test_support::temp_dir dir;
  dir.write("h.cuh", "#define V 1\n");
  dir.write("pre.cuh", "#define P 2\n");
  dir.write("cont.cuh", "#define C 3\n");
  auto r = request("#define H \"h.cuh\"\n#include H\n#include \\\n \"cont.cuh\"\n"
                   "extern \"C\" __global__ void k(int *a) { a[0] = V + P + C; }\n",
                   image_format::ptx);
  r.include_dirs = {dir.path().string()};
  r.options = {"-include", (dir.path() / "pre.cuh").string()};
  auto out = nvrtc()->compile(r);
  BOOST_TEST(out.inputs.known, out.inputs.unknown_reason);
  auto has = [&](const std::string &name) {
    const auto &f = out.inputs.files;
    return std::find(f.begin(), f.end(), (dir.path() / name).string()) != f.end();
  };
  BOOST_TEST(has("h.cuh"));    // a computed include
  BOOST_TEST(has("pre.cuh"));  // -include
  BOOST_TEST(has("cont.cuh")); // a continued #include line
  // The toolkit's own headers are the compiler's (its version covers them): not listed.
  for (const auto &f : out.inputs.files)
    BOOST_TEST(!contains(f, "/cuda/include/"), f);

  auto unknown =
      request("#define S(x) #x\n#include S(h.cuh)\n__global__ void k() {}\n", image_format::ptx);
  unknown.include_dirs = {dir.path().string()};
  auto u = nvrtc()->compile(unknown);
  BOOST_TEST(!u.inputs.known);
  CHECK_CONTAINS(u.inputs.unknown_reason, "S(h.cuh)");
}

BOOST_AUTO_TEST_CASE(an_arch_it_cannot_compile_for_names_those_it_can) {
  try {
    nvrtc()->compile(request(double_array, image_format::cubin, "sm_9999"));
    BOOST_FAIL("expected config_error");
  } catch (const config_error &e) {
    CHECK_CONTAINS(e.what(), "cannot compile for arch sm_9999");
    CHECK_CONTAINS(e.what(), "it supports sm_");
    BOOST_TEST(!contains(e.what(), "the options ''"));
  }
}

BOOST_AUTO_TEST_CASE(debug_keep_files_and_code_are_its_own_flags) {
  auto r = request(double_array, image_format::cubin);
  r.debug = true;
  r.code = "sm_86";
  r.keep_files = true;
  auto out = nvrtc()->compile(r);
  CHECK_CONTAINS(out.command, " -G");
  CHECK_CONTAINS(out.command, "-arch=sm_86"); // NVRTC has no -code: the real arch is built
  BOOST_REQUIRE(!out.kept_directory.empty());
  fs::path kept(out.kept_directory);
  BOOST_TEST(test_support::read_file((kept / "kernel.cu").string()) == r.source);
  BOOST_TEST(test_support::read_file((kept / "kernel.cubin").string()) == out.data);
  fs::remove_all(kept);
}

BOOST_AUTO_TEST_CASE(a_missing_tmpdir_is_named) {
  const char *old = std::getenv("TMPDIR");
  std::string saved = old ? old : "";
  ::setenv("TMPDIR", "/nonexistent/tmp", 1);
  auto r = request(double_array, image_format::cubin);
  r.keep_files = true;
  try {
    nvrtc()->compile(r);
    BOOST_FAIL("expected config_error");
  } catch (const config_error &e) {
    CHECK_CONTAINS(e.what(), "/nonexistent/tmp");
    CHECK_CONTAINS(e.what(), "TMPDIR");
  }
  if (old)
    ::setenv("TMPDIR", saved.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
}

BOOST_AUTO_TEST_CASE(a_compile_stops_when_cancelled_or_out_of_time) {
  auto r = request(double_array, image_format::cubin);
  int asked = 0;
  r.cancelled = [&] { return ++asked > 0; };
  try {
    nvrtc()->compile(r);
    BOOST_FAIL("expected compile_error");
  } catch (const compile_error &e) {
    CHECK_CONTAINS(e.what(), "was cancelled");
  }
  BOOST_TEST(asked > 0);

  auto hasty = registry::instance().create<compiler>(plugin_kind::compiler, "nvrtc",
                                                     test_support::opts({{"timeout", "0.000001"}}));
  try {
    hasty->compile(request(double_array, image_format::cubin));
    BOOST_FAIL("expected compile_error");
  } catch (const compile_error &e) {
    CHECK_CONTAINS(e.what(), "did not finish");
    CHECK_CONTAINS(e.what(), "timeout");
  }
  BOOST_CHECK_THROW(registry::instance().create<compiler>(
                        plugin_kind::compiler, "nvrtc", test_support::opts({{"timeout", "soon"}})),
                    config_error);
}

BOOST_AUTO_TEST_CASE(a_nul_byte_in_the_source_is_refused) {
  std::string src = std::string(double_array) + std::string(1, '\0') + "garbage";
  try {
    nvrtc()->compile(request(src, image_format::ptx));
    BOOST_FAIL("expected invalid_argument");
  } catch (const std::invalid_argument &e) {
    CHECK_CONTAINS(e.what(), "NUL byte");
    CHECK_CONTAINS(e.what(), "line 5");
  }
}

// libnvrtc's front end installs its own SIGINT handler while it compiles, which printed
// "Compilation terminated" and ended the process with status 4: a Ctrl-C lost a notebook's
// state, with no KeyboardInterrupt and no `finally`. The plugin keeps the process's handler in
// place. In a child process (a regression ends it), with a SIGINT every 5 ms during a compile.
BOOST_AUTO_TEST_CASE(sigint_during_a_compile_reaches_the_process_handler) {
  std::string source;
  for (int i = 0; i < 3000; ++i)
    source += "template <typename T> struct S" + std::to_string(i) +
              " { T v; __device__ T get() const { return v + T(" + std::to_string(i) + "); } };\n";
  source += "extern \"C\" __global__ void k(float *a) { a[0] = S0<float>{a[0]}.get(); }\n";
  auto c = nvrtc();
  pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    static volatile sig_atomic_t got = 0;
    ::signal(SIGINT, [](int) { got = got + 1; });
    std::atomic<bool> done{false};
    std::thread sender([&] {
      while (!done) {
        ::kill(::getpid(), SIGINT);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
    int status = 0;
    try {
      auto out = c->compile(request(source, image_format::ptx));
      status = contains(out.data, ".entry k") ? 0 : 2;
    } catch (...) {
      status = 3;
    }
    done = true;
    sender.join();
    ::_exit(status != 0 ? status : got > 0 ? 0 : 5);
  }
  // Without the fix the child ends with 4, or hangs (EDG's handler calls exit() in a signal
  // handler while another thread runs): two minutes, then it counts as a failure.
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 1200 && done == 0; ++i) {
    done = ::waitpid(pid, &status, WNOHANG);
    if (done == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    BOOST_FAIL("the child still ran after two minutes of SIGINTs during a compile");
  }
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0, "the child ended with status " << WEXITSTATUS(status));
}
