// Tests core/src/registry_discovery.cpp: which files a path stands for, and the places searched
// at first use, in order, without loading anything.
#define BOOST_TEST_MODULE registry discovery
#include <boost/test/included/unit_test.hpp>

#include "registry_discovery.hpp"
#include "test_support.hpp"

#include <cstdlib>

using namespace cuplug;
using test_support::temp_dir;
namespace fs = std::filesystem;

BOOST_AUTO_TEST_CASE(a_folder_stands_for_its_lib_so_files_sorted) {
  temp_dir dir;
  dir.write("libzeta.so", "x");
  dir.write("libalpha.so", "x");
  dir.write("notes.txt", "x");
  dir.write("libshort.so.1", "x"); // versioned names are not plugins
  dir.write("lib.so", "x");        // no name between "lib" and ".so"
  fs::create_directory(dir.path() / "libfolder.so");
  const detail::candidate_files found = detail::find_candidates(dir.path().string(), "explicit");
  BOOST_TEST(found.problem.empty(), found.problem);
  BOOST_TEST_REQUIRE(found.files.size() == 2u);
  BOOST_TEST(found.files[0] == dir.path() / "libalpha.so");
  BOOST_TEST(found.files[1] == dir.path() / "libzeta.so");
}

BOOST_AUTO_TEST_CASE(a_file_stands_for_itself_whatever_its_name) {
  temp_dir dir;
  const fs::path file = dir.write("plugin.bin", "x");
  const detail::candidate_files found = detail::find_candidates(file.string(), "explicit");
  BOOST_TEST(found.problem.empty());
  BOOST_TEST_REQUIRE(found.files.size() == 1u);
  BOOST_TEST(found.files[0] == file);
}

BOOST_AUTO_TEST_CASE(missing_and_empty_paths_say_what_to_give) {
  const detail::candidate_files missing =
      detail::find_candidates("/nonexistent/cuplug/x", "CUPLUG_PLUGIN_PATH");
  CHECK_CONTAINS(missing.problem,
                 "CUPLUG_PLUGIN_PATH entry '/nonexistent/cuplug/x' does not exist: give a plugin "
                 "file or a folder of lib*.so plugins");
  BOOST_TEST(missing.files.empty());
  CHECK_CONTAINS(detail::find_candidates("/nonexistent/y", "explicit").problem,
                 "'/nonexistent/y' does not exist");
  CHECK_CONTAINS(detail::find_candidates("", "explicit").problem, "empty plugin path");
}

BOOST_AUTO_TEST_CASE(the_plugin_path_comes_first_in_order_then_the_package) {
  ::setenv("CUPLUG_PLUGIN_PATH", "/abs/one::relative/two:/abs/three", 1);
  const std::vector<detail::search_entry> places = detail::default_search_path();
  ::unsetenv("CUPLUG_PLUGIN_PATH");
  BOOST_TEST_REQUIRE(places.size() >= 3u);
  BOOST_TEST(places[0].path == "/abs/one");
  BOOST_TEST(places[0].source == "CUPLUG_PLUGIN_PATH");
  BOOST_TEST(places[0].problem.empty());
  BOOST_TEST(places[1].path == "relative/two");
  CHECK_CONTAINS(places[1].problem, "is a relative path; only absolute paths are searched");
  BOOST_TEST(places[2].path == "/abs/three");
  for (std::size_t i = 3; i < places.size(); ++i) {
    BOOST_TEST(places[i].source == "package");
    BOOST_TEST(fs::is_directory(places[i].path));
  }
}

BOOST_AUTO_TEST_CASE(the_package_folder_is_next_to_the_core_library) {
  // The build tree puts libcuplug_core.so in the package's lib/ folder, plugins/ beside it.
  BOOST_TEST(fs::path(detail::package_plugin_dir()) == fs::path(CUPLUG_TEST_PACKAGE_PLUGIN_DIR));
  BOOST_TEST(registry::package_plugin_dir() == detail::package_plugin_dir());
}
