// Tests of the nvcc compiler plugin: finding nvcc, outputs, name expressions, temp dirs, what a
// compile read, time limits and cancelling, debug / kept files / code, errors.
#define BOOST_TEST_MODULE compiler_nvcc
#include <boost/test/included/unit_test.hpp>

#include "compiler_test_support.hpp"
#include "test_support.hpp"

#include <cuplug/compiler.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/registry.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

using namespace cuplug;
using namespace compiler_test_support;
using test_support::contains;
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

namespace {

bool has_file(const compiled_image &out, const std::string &path) {
  const auto &f = out.inputs.files;
  return std::find(f.begin(), f.end(), path) != f.end();
}

// Alive and not a zombie (an orphan's zombie may wait long for a reaper in a container).
bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line))
    return false;
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// False once `pid` is gone, within a grace period: a SIGKILL is delivered asynchronously, and on a
// loaded machine (CI's two cores, shared) the process may run a moment after kill() returned.
bool outlives(pid_t pid) {
  for (int i = 0; i < 500 && alive(pid); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return alive(pid);
}

// An "nvcc" that answers the probes and otherwise never finishes; it records its pid and that of
// a child it starts in `pids`.
std::string hanging_nvcc(const test_support::temp_dir &dir) {
  fs::path script = dir.write("nvcc", "#!/bin/sh\n"
                                      "case \"$1\" in\n"
                                      "  --version) echo 'Cuda compilation tools, release 99.0, "
                                      "V99.0.1'; exit 0;;\n"
                                      "  --list-gpu-arch) echo compute_90; exit 0;;\n"
                                      "esac\n"
                                      "sleep 1000 &\n"
                                      "echo $$ $! > " +
                                          (dir.path() / "pids").string() +
                                          "\n"
                                          "wait\n");
  ::chmod(script.c_str(), 0755);
  return script.string();
}

std::vector<pid_t> read_pids(const test_support::temp_dir &dir) {
  std::ifstream in(dir.path() / "pids");
  std::vector<pid_t> pids;
  for (pid_t p; in >> p;)
    pids.push_back(p);
  return pids;
}

} // namespace

BOOST_AUTO_TEST_CASE(reports_what_it_read_as_nvcc_lists_it) {
  test_support::temp_dir dir;
  fs::create_directories(dir.path() / "sys");
  dir.write("h.cuh", "#define V 1\n");
  dir.write("pre.cuh", "#define P 2\n");
  dir.write("sys/s.cuh", "#define S 3\n");
  auto r = request("#define H \"h.cuh\"\n#include H\n#include <s.cuh>\n"
                   "extern \"C\" __global__ void k(int *a) { a[0] = V + P + S; }\n",
                   image_format::ptx);
  r.include_dirs = {dir.path().string()};
  r.options = {"-isystem", (dir.path() / "sys").string(), "-include",
               (dir.path() / "pre.cuh").string()};
  ::setenv("NVCC_APPEND_FLAGS", "-DAPPENDED=1", 1);
  auto out = nvcc()->compile(r);
  ::unsetenv("NVCC_APPEND_FLAGS");
  BOOST_TEST(out.inputs.known, out.inputs.unknown_reason);
  BOOST_TEST(has_file(out, (dir.path() / "h.cuh").string()));     // a computed include
  BOOST_TEST(has_file(out, (dir.path() / "sys/s.cuh").string())); // an -isystem dir
  BOOST_TEST(has_file(out, (dir.path() / "pre.cuh").string()));   // -include
  BOOST_TEST(out.inputs.environment.at("NVCC_APPEND_FLAGS") == "-DAPPENDED=1");
  BOOST_TEST(out.inputs.environment.at("NVCC_PREPEND_FLAGS") == "");
  // Its own temp files are not inputs; the toolkit's headers are covered by nvcc's version.
  fs::path toolkit = fs::canonical(out.command.substr(0, out.command.find(' '))).parent_path();
  toolkit = toolkit.parent_path();
  for (const auto &f : out.inputs.files) {
    BOOST_TEST(!contains(f, "cuplug-nvcc-"), f);
    BOOST_TEST(!contains(fs::weakly_canonical(f).string(), toolkit.string() + "/"), f);
  }
}

BOOST_AUTO_TEST_CASE(relative_paths_in_options_and_the_nvcc_path_mean_the_callers_cwd) {
  test_support::temp_dir dir;
  fs::create_directories(dir.path() / "sys");
  dir.write("sys/scale.h", "#define SCALE 6.0f\n");
  auto old = fs::current_path();
  fs::current_path(dir.path());
  std::string real = nvcc()->compile(request(double_array, image_format::ptx)).command;
  real = real.substr(0, real.find(' ')); // the absolute nvcc it ran
  fs::path relative = fs::relative(real, dir.path());
  auto r =
      request("#include <scale.h>\nextern \"C\" __global__ void k(float *a) { a[0] = SCALE; }\n",
              image_format::ptx);
  r.options = {"-isystem", "sys"};
  auto from_option = make_nvcc({{"nvcc", relative.string()}});
  auto out = from_option->compile(r);
  fs::current_path(old);
  BOOST_TEST(stores_six(out.data), out.data);
  BOOST_TEST(has_file(out, "sys/scale.h"));                 // relative, as nvcc read it
  BOOST_TEST(out.command.rfind("/", 0) == 0u, out.command); // nvcc by its absolute path
}

BOOST_AUTO_TEST_CASE(a_stuck_nvcc_is_stopped_with_what_it_started) {
  test_support::temp_dir dir;
  auto c = make_nvcc({{"nvcc", hanging_nvcc(dir)}, {"timeout", "1"}});
  auto start = std::chrono::steady_clock::now();
  try {
    c->compile(request(double_array, image_format::cubin, ""));
    BOOST_FAIL("expected compile_error");
  } catch (const compile_error &e) {
    CHECK_CONTAINS(e.what(), "did not finish compiling kernel.cu within 1 s");
    CHECK_CONTAINS(e.what(), "CUPLUG_COMPILE_TIMEOUT");
  }
  BOOST_TEST((std::chrono::steady_clock::now() - start < std::chrono::seconds(20)));
  auto pids = read_pids(dir);
  BOOST_REQUIRE_EQUAL(pids.size(), 2u);
  for (pid_t p : pids)
    BOOST_TEST(!outlives(p), "process " << p << " outlived the compile");

  // Cancelling stops it the same way.
  auto patient = make_nvcc({{"nvcc", hanging_nvcc(dir)}, {"timeout", "0"}});
  auto r = request(double_array, image_format::cubin, "");
  auto asked_at = std::chrono::steady_clock::now();
  r.cancelled = [&] {
    return std::chrono::steady_clock::now() - asked_at > std::chrono::milliseconds(300);
  };
  try {
    patient->compile(r);
    BOOST_FAIL("expected compile_error");
  } catch (const compile_error &e) {
    CHECK_CONTAINS(e.what(), "was cancelled");
  }
  for (pid_t p : read_pids(dir))
    BOOST_TEST(!outlives(p), "process " << p << " outlived the cancelled compile");
  BOOST_CHECK_THROW(make_nvcc({{"timeout", "-1"}}), config_error);
}

BOOST_AUTO_TEST_CASE(debug_keep_files_code_and_program_are_its_own_flags) {
  scoped_tmpdir tmp;
  auto r = request(double_array, image_format::cubin);
  r.debug = true;
  r.code = "sm_90";
  r.keep_files = true;
  auto out = nvcc()->compile(r);
  CHECK_CONTAINS(out.command, " -g -G");
  CHECK_CONTAINS(out.command, "-arch=compute_90 -code=sm_90");
  BOOST_REQUIRE(!out.kept_directory.empty());
  BOOST_TEST(fs::exists(fs::path(out.kept_directory) / "kernel.cu"));
  BOOST_TEST(fs::exists(fs::path(out.kept_directory) / "kernel.ptx"));
  BOOST_TEST(tmp.entries() == 1u);

  auto p = request(double_array, image_format::ptx);
  p.program = "/nonexistent/nvcc";
  try {
    nvcc()->compile(p);
    BOOST_FAIL("expected config_error");
  } catch (const config_error &e) {
    CHECK_CONTAINS(e.what(), "nvcc='/nonexistent/nvcc'");
  }
  p.program = out.command.substr(0, out.command.find(' '));
  auto with_program = nvcc()->compile(p);
  BOOST_TEST(has_file(with_program, p.program)); // not covered by the version in the key
}

BOOST_AUTO_TEST_CASE(clear_errors_for_an_unknown_arch_and_a_missing_tmpdir) {
  try {
    nvcc()->compile(request(double_array, image_format::cubin, "sm_9999"));
    BOOST_FAIL("expected config_error");
  } catch (const config_error &e) {
    CHECK_CONTAINS(e.what(), "cannot compile for arch sm_9999");
    CHECK_CONTAINS(e.what(), "it supports sm_");
  }
  const char *old = std::getenv("TMPDIR");
  std::string saved = old ? old : "";
  ::setenv("TMPDIR", "/nonexistent/tmp", 1);
  try {
    nvcc()->compile(request(double_array, image_format::cubin));
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
