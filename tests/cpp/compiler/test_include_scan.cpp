// Tests of scan_includes(): every file NVRTC may read from a source, whatever way it is reached,
// and an honest "unknown" where the scan cannot follow.
#define BOOST_TEST_MODULE include_scan
#include <boost/test/included/unit_test.hpp>

#include "test_support.hpp"

#include <cuplug/compiler_support.hpp>
#include <cuplug/errors.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <future>

using namespace cuplug;
using test_support::contains;
namespace fs = std::filesystem;

namespace {

bool has(const std::vector<std::string> &v, const std::string &s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string names(const std::vector<std::string> &v) {
  std::string s;
  for (const auto &x : v)
    s += x + "; ";
  return s;
}

// A search over `dir` (its path as the compiler gets it) for `source`.
include_search in(const test_support::temp_dir &dir, const std::string &source) {
  include_search s;
  s.source = source;
  s.dirs.push_back({dir.path().string(), false});
  return s;
}

std::string at(const test_support::temp_dir &dir, const std::string &name) {
  return (dir.path() / name).string();
}

} // namespace

BOOST_AUTO_TEST_CASE(follows_quoted_and_angle_includes_through_headers) {
  test_support::temp_dir dir;
  fs::create_directories(dir.path() / "sub");
  dir.write("top.h", "#include \"sub/mid.h\"\n#include <cuda_fp16.h>\n");
  dir.write("sub/mid.h", "#include \"leaf.h\"\n  #  include \"../top.h\"\n"); // a cycle
  dir.write("sub/leaf.h", "// leaf\n");
  auto r = scan_includes(in(dir, "#include <top.h>\n"));
  BOOST_TEST(r.known, r.unknown_reason);
  BOOST_TEST(has(r.files, at(dir, "top.h")), names(r.files));
  BOOST_TEST(has(r.files, at(dir, "sub/mid.h")), names(r.files));
  BOOST_TEST(has(r.files, at(dir, "sub/leaf.h")), names(r.files)); // next to its includer
  // What was looked for and not found is listed: creating it would change the compile.
  BOOST_TEST(has(r.absent, at(dir, "cuda_fp16.h")), names(r.absent));
}

BOOST_AUTO_TEST_CASE(follows_a_computed_include_through_its_macro) {
  test_support::temp_dir dir;
  dir.write("h.cuh", "#define V 1\n");
  dir.write("g.cuh", "#define W 1\n");
  dir.write("config.h", "#define OTHER \"g.cuh\"\n");
  auto r = scan_includes(in(dir, "#define H \"h.cuh\"\n#define HH H\n#include HH\n"
                                 "#include \"config.h\"\n#include OTHER\n"));
  BOOST_TEST(r.known, r.unknown_reason);
  BOOST_TEST(has(r.files, at(dir, "h.cuh")), names(r.files));
  BOOST_TEST(has(r.files, at(dir, "g.cuh")), names(r.files)); // defined in a header
  // A -D definition counts too.
  include_search s = in(dir, "#include FROM_D\n");
  s.macros = {"FROM_D=<h.cuh>"};
  auto d = scan_includes(s);
  BOOST_TEST(d.known, d.unknown_reason);
  BOOST_TEST(has(d.files, at(dir, "h.cuh")), names(d.files));
}

BOOST_AUTO_TEST_CASE(an_include_it_cannot_follow_makes_the_result_unknown) {
  test_support::temp_dir dir;
  dir.write("h.cuh", "#define V 1\n");
  auto fn = scan_includes(in(dir, "#define STR(x) #x\n#define H STR(h.cuh)\n#include H\n"));
  BOOST_TEST(!fn.known);
  CHECK_CONTAINS(fn.unknown_reason, "STR(h.cuh)");
  BOOST_TEST(fn.files.empty());
  auto nowhere = scan_includes(in(dir, "#include NOT_DEFINED_ANYWHERE\n"));
  BOOST_TEST(!nowhere.known);
  CHECK_CONTAINS(nowhere.unknown_reason, "NOT_DEFINED_ANYWHERE");
  auto function_like = scan_includes(in(dir, "#define H(x) \"h.cuh\"\n#include H\n"));
  BOOST_TEST(!function_like.known);
}

BOOST_AUTO_TEST_CASE(reads_lines_as_the_preprocessor_does) {
  test_support::temp_dir dir;
  for (const char *n : {"a.h", "b.h", "c.h", "d.h", "e.h", "f.h", "g.h"})
    dir.write(n, "\n");
  auto r = scan_includes(in(dir, "#include \\\n  \"a.h\"\n"            // a continued line
                                 "#/* c */include /* c\n */ \"b.h\"\n" // comments are spaces
                                 "const char *s = \"/*\";\n#include \"c.h\"\n"
                                 "auto r = R\"x(/* )x\";\n#include \"d.h\"\n"
                                 "int n = 1'000;\n#include \"e.h\"\n"
                                 "#if __has_include(\"f.h\")\n#endif\n"
                                 "#if 0\n#include \"g.h\"\n#endif\n"));
  BOOST_TEST(r.known, r.unknown_reason);
  for (const char *n : {"a.h", "b.h", "c.h", "d.h", "e.h", "f.h", "g.h"})
    BOOST_TEST(has(r.files, at(dir, n)), n << " missing from " << names(r.files));
  // A backslash followed by blanks is no continuation (NVRTC says so too).
  auto no_splice = scan_includes(in(dir, "#include \"a.h\" \\  \n#include \"b.h\"\n"));
  BOOST_TEST(has(no_splice.files, at(dir, "b.h")));
}

BOOST_AUTO_TEST_CASE(pre_includes_and_the_source_directory) {
  test_support::temp_dir dir;
  fs::create_directories(dir.path() / "src");
  dir.write("pre.cuh", "#include \"from_pre.h\"\n");
  dir.write("from_pre.h", "\n");
  dir.write("src/near.h", "\n");
  include_search s = in(dir, "#include \"near.h\"\n");
  s.source_name = (dir.path() / "src" / "kernel.cu").string();
  s.pre_includes = {"pre.cuh"};
  auto r = scan_includes(s);
  BOOST_TEST(r.known, r.unknown_reason);
  BOOST_TEST(has(r.files, at(dir, "pre.cuh")), names(r.files));
  BOOST_TEST(has(r.files, at(dir, "from_pre.h")), names(r.files));
  BOOST_TEST(has(r.files, at(dir, "src/near.h")), names(r.files));
  // The pre-include was looked for in the working directory first (relative, as NVRTC does).
  BOOST_TEST(has(r.absent, "pre.cuh"), names(r.absent));
  s.search_source_dir = false; // --no-source-include
  auto off = scan_includes(s);
  BOOST_TEST(!has(off.files, at(dir, "src/near.h")));
}

BOOST_AUTO_TEST_CASE(an_earlier_directory_that_could_shadow_is_listed_as_absent) {
  test_support::temp_dir first, second;
  second.write("h.cuh", "\n");
  include_search s;
  s.source = "#include <h.cuh>\n";
  s.dirs = {{first.path().string(), false}, {second.path().string(), false}};
  auto r = scan_includes(s);
  BOOST_TEST(has(r.files, at(second, "h.cuh")));
  BOOST_TEST(has(r.absent, at(first, "h.cuh")));
}

BOOST_AUTO_TEST_CASE(toolkit_directories_are_neither_followed_nor_listed) {
  test_support::temp_dir user, toolkit;
  // CCCL-like: a computed include the scan could not follow, in a toolkit header.
  toolkit.write("thrust.h", "#define X(a) #a\n#include X(detail.h)\n");
  include_search s;
  s.source = "#include <thrust.h>\n";
  s.dirs = {{user.path().string(), false}, {toolkit.path().string(), true}};
  auto r = scan_includes(s);
  BOOST_TEST(r.known, r.unknown_reason);
  BOOST_TEST(r.files.empty(), names(r.files));
  BOOST_TEST(has(r.absent, at(user, "thrust.h")));
}

// Included, a FIFO would block the compiler forever: the compile is refused, naming it. Only
// probed (__has_include opens nothing), it just keeps the result out of the cache.
BOOST_AUTO_TEST_CASE(a_fifo_named_like_a_header_is_refused_without_waiting) {
  test_support::temp_dir dir;
  BOOST_REQUIRE(::mkfifo((dir.path() / "pipe.h").c_str(), 0600) == 0);
  auto job = std::async(std::launch::async, [&] {
    try {
      scan_includes(in(dir, "#include \"pipe.h\"\n"));
    } catch (const compile_error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  });
  BOOST_REQUIRE(job.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  std::string what = job.get();
  CHECK_CONTAINS(what, (dir.path() / "pipe.h").string());
  CHECK_CONTAINS(what, "a FIFO (named pipe), not a regular file");

  auto probed = std::async(std::launch::async, [&] {
    return scan_includes(in(dir, "#if __has_include(\"pipe.h\")\n#endif\n"));
  });
  BOOST_REQUIRE(probed.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto r = probed.get();
  BOOST_TEST(!r.known);
  CHECK_CONTAINS(r.unknown_reason, "not a regular file");
}

BOOST_AUTO_TEST_CASE(a_device_is_refused_naming_it) {
  test_support::temp_dir dir;
  for (const char *device : {"/dev/zero", "/dev/null"})
    BOOST_CHECK_EXCEPTION(scan_includes(in(dir, "#include \"" + std::string(device) + "\"\n")),
                          compile_error, [&](const compile_error &e) {
                            return std::string(e.what()).find(std::string(device) +
                                                              ", which is a character device") !=
                                   std::string::npos;
                          });
}

BOOST_AUTO_TEST_CASE(relative_directories_stay_relative) {
  test_support::temp_dir dir;
  fs::create_directories(dir.path() / "inc");
  dir.write("inc/h.cuh", "\n");
  auto old = fs::current_path();
  fs::current_path(dir.path());
  include_search s;
  s.source = "#include \"h.cuh\"\n";
  s.dirs = {{"inc", false}};
  auto r = scan_includes(s);
  fs::current_path(old);
  // As the compiler resolves them: against the working directory of each compile.
  BOOST_TEST(has(r.files, "inc/h.cuh"), names(r.files));
  BOOST_TEST(has(r.absent, "h.cuh"), names(r.absent)); // the source's own dir: the cwd
}
