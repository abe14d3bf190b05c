// Tests that the package's own plugins (plugins/allocator_device, plugins/launcher_driver) are
// found next to the core with no configuration, and make working objects without a GPU.
// ctest points CUPLUG_CUDA_DRIVER nowhere, so every driver call fails the same clear way.
#define BOOST_TEST_MODULE package_plugins
#include <boost/test/included/unit_test.hpp>

#include "test_support.hpp"

#include <cuplug/backends.hpp>
#include <cuplug/errors.hpp>

using namespace cuplug;
using test_support::opts;
namespace fs = std::filesystem;

namespace {

// The message of the cuda_error `f` throws, which must be the missing driver's.
template <class F> void expect_no_driver(F f) {
  try {
    f();
    BOOST_ERROR("no error without a driver");
  } catch (const cuda_error &e) {
    BOOST_TEST(e.code() == CUDA_ERROR_NO_DEVICE);
    BOOST_TEST(std::string(e.what()).find("/nonexistent/libcuda.so.1") != std::string::npos,
               e.what());
  }
}

} // namespace

BOOST_AUTO_TEST_CASE(the_package_folder_is_next_to_the_core) {
  BOOST_TEST(fs::equivalent(registry::package_plugin_dir(), CUPLUG_TEST_PACKAGE_PLUGIN_DIR));
}

BOOST_AUTO_TEST_CASE(both_plugins_are_found_without_configuration) {
  registry &r = registry::instance();
  const std::string dir = CUPLUG_TEST_PACKAGE_PLUGIN_DIR;
  const std::pair<plugin_kind, const char *> expected[] = {{plugin_kind::allocator, "device"},
                                                           {plugin_kind::launcher, "driver"}};
  for (const auto &[kind, name] : expected) {
    BOOST_REQUIRE_MESSAGE(r.has(kind, name), to_string(kind) << " '" << name << "' not loaded");
    const plugin_info info = r.info(kind, name);
    BOOST_TEST(info.source == "package");
    BOOST_TEST(fs::equivalent(fs::path(info.path).parent_path(), dir));
    BOOST_TEST(info.abi_tag == CUPLUG_ABI_TAG);
    BOOST_TEST(!info.description.empty());
  }
  for (const auto &c : r.diagnostics())
    BOOST_TEST_MESSAGE(c.path << ": " << to_string(c.outcome) << " " << c.reason);
}

BOOST_AUTO_TEST_CASE(the_device_allocator_is_created_without_a_gpu) {
  auto a = registry::instance().create<allocator>(plugin_kind::allocator, "device", options());
  BOOST_TEST(a->backend_name() == "device");
  BOOST_TEST((a->kind() == memory_kind::device));
  BOOST_TEST(!a->can_free_held());
  BOOST_TEST(a->allocate(0) == 0u); // no driver call for nothing
  expect_no_driver([&] { (void)a->allocate(256); });
  const allocator_stats s = a->stats();
  BOOST_TEST(s.failures == 1u);
  BOOST_TEST(s.allocations == 0u);
  BOOST_TEST(s.bytes_in_use == 0u);
  BOOST_CHECK_THROW(a->free_held(), not_supported);
}

BOOST_AUTO_TEST_CASE(the_driver_launcher_is_created_without_a_gpu) {
  auto l = registry::instance().create<launcher>(plugin_kind::launcher, "driver", options());
  BOOST_TEST(l->backend_name() == "driver");
  const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n";
  expect_no_driver([&] { (void)l->load_module(ptx, sizeof ptx - 1); });
  expect_no_driver([&] { (void)l->load_module_file("/nonexistent/kernel.cubin"); });
  expect_no_driver([&] { (void)l->parameter_layout(nullptr); });
  expect_no_driver([&] { l->launch(nullptr, launch_config{}, nullptr, 0); });
  l->unload_module(nullptr); // never throws
}

BOOST_AUTO_TEST_CASE(they_are_the_defaults) {
  BOOST_TEST(current_allocator()->backend_name() == "device");
  BOOST_TEST(current_launcher()->backend_name() == "driver");
  BOOST_TEST(current_allocator() == backend(plugin_kind::allocator, "device"));
}

BOOST_AUTO_TEST_CASE(they_take_no_options) {
  try {
    registry::instance().create(plugin_kind::allocator, "device", opts({{"bogus", "1"}}));
    BOOST_ERROR("unknown option accepted");
  } catch (const config_error &e) {
    BOOST_TEST(std::string(e.what()) ==
               "unknown option 'bogus' for allocator 'device'; it accepts no options");
  }
}
