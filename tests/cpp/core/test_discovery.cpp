// Tests discovery at first use (core/src/registry.cpp): CUPLUG_PLUGIN_PATH, then the package
// folder, then explicit loads winning over both. ctest sets CUPLUG_PLUGIN_PATH to
// "relative/plugins:<fake plugins>/env:/nonexistent/cuplug/plugins".
#define BOOST_TEST_MODULE discovery
#include <boost/test/included/unit_test.hpp>

#include "test_support.hpp"

using namespace cuplug;
using state = plugin_candidate::state;

namespace {

const std::string env_dir = std::string(CUPLUG_FAKE_PLUGIN_DIR) + "/env";
const std::string package_dir = CUPLUG_TEST_PACKAGE_PLUGIN_DIR;

std::ptrdiff_t position_of(const std::vector<plugin_candidate> &all, const std::string &path) {
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i].path == path)
      return static_cast<std::ptrdiff_t>(i);
  return -1;
}

} // namespace

BOOST_AUTO_TEST_CASE(the_plugin_path_is_scanned_at_first_use) {
  const char *env = std::getenv("CUPLUG_PLUGIN_PATH");
  BOOST_REQUIRE_MESSAGE(env != nullptr, "run through ctest, which sets CUPLUG_PLUGIN_PATH");
  registry &r = registry::instance();
  const plugin_info alloc = r.info(plugin_kind::allocator, "fake_env_alloc");
  BOOST_TEST(alloc.source == "CUPLUG_PLUGIN_PATH");
  BOOST_TEST(alloc.path == env_dir + "/libfake_env_alloc.so");
}

BOOST_AUTO_TEST_CASE(relative_and_missing_entries_are_diagnosed) {
  const plugin_candidate relative = test_support::diagnostic_for("relative/plugins");
  BOOST_TEST(relative.outcome == state::rejected);
  CHECK_CONTAINS(relative.reason, "CUPLUG_PLUGIN_PATH entry 'relative/plugins' is a relative path");
  CHECK_CONTAINS(relative.reason, "absolute");
  const plugin_candidate missing = test_support::diagnostic_for("/nonexistent/cuplug/plugins");
  BOOST_TEST(missing.outcome == state::rejected);
  CHECK_CONTAINS(missing.reason,
                 "CUPLUG_PLUGIN_PATH entry '/nonexistent/cuplug/plugins' does not exist");
}

BOOST_AUTO_TEST_CASE(the_plugin_path_wins_over_the_package) {
  registry &r = registry::instance();
  const std::string env_device = env_dir + "/libfake_env_device.so";
  const std::string package_device = package_dir + "/libcuplug_allocator_device.so";
  BOOST_TEST(r.info(plugin_kind::allocator, "device").path == env_device);
  const auto all = r.diagnostics();
  BOOST_TEST(position_of(all, env_device) >= 0);
  BOOST_TEST(position_of(all, package_device) > position_of(all, env_device)); // scanned later
  const plugin_candidate pkg = test_support::diagnostic_for(package_device);
  BOOST_TEST(pkg.outcome == state::duplicate);
  CHECK_CONTAINS(pkg.reason, "allocator 'device' is already provided by " + env_device +
                                 " (CUPLUG_PLUGIN_PATH)");
  // Names nobody else claims still come from the package.
  const plugin_info driver = r.info(plugin_kind::launcher, "driver");
  BOOST_TEST(driver.source == "package");
  BOOST_TEST(driver.path == package_dir + "/libcuplug_launcher_driver.so");
}

BOOST_AUTO_TEST_CASE(an_explicit_load_wins_over_the_plugin_path) {
  registry &r = registry::instance();
  const std::string explicit_device =
      std::string(CUPLUG_FAKE_PLUGIN_DIR) + "/explicit/libfake_explicit_device.so";
  const plugin_candidate c = test_support::only(r.load(explicit_device));
  BOOST_TEST(c.outcome == state::loaded, c.reason);
  BOOST_TEST(r.info(plugin_kind::allocator, "device").path == explicit_device);
  BOOST_TEST(r.info(plugin_kind::allocator, "device").source == "explicit");
  const plugin_candidate env = test_support::diagnostic_for(env_dir + "/libfake_env_device.so");
  BOOST_TEST(env.outcome == state::duplicate);
  CHECK_CONTAINS(env.reason, "provided by " + explicit_device + " (explicit)");
  // Created objects come from the winner.
  auto a = r.create(plugin_kind::allocator, "device", options());
  BOOST_TEST(a->backend_name() == "device");
}
