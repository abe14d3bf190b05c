// Tests plugins/launcher_driver against the fake driver: modules, functions, globals, launches.
#define BOOST_TEST_MODULE driver_launcher
#include <boost/test/included/unit_test.hpp>

#include "fake_context.hpp"
#include "test_support.hpp"

#include <cuplug/errors.hpp>
#include <cuplug/launcher.hpp>

#include <cstring>

using namespace cuplug;

namespace {

const std::string ptx = R"(.version 8.0
.target sm_90
.address_size 64

.visible .global .align 4 .u32 counter = 7;

.visible .entry scale(
	.param .u64 scale_param_0,
	.param .f32 scale_param_1,
	.param .u32 scale_param_2
)
{
	ret;
}

.visible .entry empty()
{
	ret;
}
)";

plugin_ptr<launcher> make() {
  return registry::instance().create<launcher>(plugin_kind::launcher, "driver", options());
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(driver_launcher_tests, fake_context)

BOOST_AUTO_TEST_CASE(loads_ptx_with_or_without_a_terminating_nul) {
  auto l = make();
  std::string info;
  CUmodule with_nul = l->load_module(ptx.c_str(), ptx.size() + 1, {}, &info);
  CUmodule without_nul = l->load_module(ptx.data(), ptx.size()); // not NUL-terminated
  BOOST_TEST(with_nul != nullptr);
  BOOST_TEST(without_nul != nullptr);
  BOOST_TEST(with_nul != without_nul);
  l->unload_module(with_nul);
  l->unload_module(without_nul);
}

BOOST_AUTO_TEST_CASE(a_bad_image_carries_the_jit_log) {
  auto l = make();
  const std::string bad = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry (";
  try {
    l->load_module(bad.data(), bad.size(), {{CU_JIT_OPTIMIZATION_LEVEL, 3}});
    BOOST_ERROR("bad PTX loaded");
  } catch (const cuda_error &e) {
    const std::string msg = e.what();
    BOOST_TEST(e.code() == CUDA_ERROR_INVALID_PTX);
    BOOST_TEST(
        msg.rfind("cuModuleLoadDataEx failed: a PTX JIT compilation failed - ptxas", 0) == 0u, msg);
    CHECK_CONTAINS(msg, "expected a kernel name after .entry");
  }
}

BOOST_AUTO_TEST_CASE(finds_functions_globals_and_parameter_layouts) {
  auto l = make();
  CUmodule m = l->load_module(ptx.data(), ptx.size());
  CUfunction scale = l->get_function(m, "scale");
  BOOST_TEST(scale != nullptr);
  using layout = std::vector<std::pair<std::size_t, std::size_t>>;
  BOOST_TEST((*l->parameter_layout(scale) == layout{{0, 8}, {8, 4}, {12, 4}}));
  const auto none = l->parameter_layout(l->get_function(m, "empty"));
  BOOST_TEST((none.has_value() && none->empty()));

  const auto [address, bytes] = l->get_global(m, "counter");
  BOOST_TEST(address != 0u);
  BOOST_TEST(bytes == 4u);
  std::uint32_t value = 0;
  CUPLUG_CALL(cuMemcpyDtoH, &value, address, sizeof value);
  BOOST_TEST(value == 7u);

  try {
    l->get_function(m, "nope");
    BOOST_ERROR("found a function that is not there");
  } catch (const cuda_error &e) {
    BOOST_TEST(std::string(e.what()) ==
               "cuModuleGetFunction failed: named symbol not found - function 'nope'");
  }
  BOOST_CHECK_THROW(l->get_global(m, "nothing"), cuda_error);
  l->unload_module(m);
}

BOOST_AUTO_TEST_CASE(launches_with_the_packed_buffer) {
  auto l = make();
  CUmodule m = l->load_module(ptx.data(), ptx.size());
  CUfunction scale = l->get_function(m, "scale");
  unsigned char args[16];
  const std::uint64_t ptr = 0x1234500;
  const float factor = 2.5f;
  const std::uint32_t n = 1000;
  std::memcpy(args, &ptr, 8);
  std::memcpy(args + 8, &factor, 4);
  std::memcpy(args + 12, &n, 4);
  launch_config c;
  c.grid = {4, 2, 1};
  c.block = {256, 1, 1};
  c.shared_bytes = 128;
  fake_cuda_clear_launches();
  l->launch(scale, c, args, sizeof args);
  BOOST_TEST(fake_cuda_launch_count() == 1u);
  char name[32];
  unsigned grid[3], block[3], shared = 0;
  unsigned char seen[64];
  std::size_t seen_size = sizeof seen;
  BOOST_REQUIRE(fake_cuda_last_launch(name, sizeof name, grid, block, &shared, nullptr, seen,
                                      &seen_size) == 0);
  BOOST_TEST(std::string(name) == "scale");
  BOOST_TEST(grid[0] == 4u);
  BOOST_TEST(grid[1] == 2u);
  BOOST_TEST(block[0] == 256u);
  BOOST_TEST(shared == 128u);
  BOOST_TEST(seen_size == sizeof args);
  BOOST_TEST(std::memcmp(seen, args, sizeof args) == 0);

  // No parameters: no buffer at all.
  l->launch(l->get_function(m, "empty"), launch_config{}, nullptr, 0);
  BOOST_TEST(fake_cuda_launch_count() == 2u);
  l->unload_module(m);
}

BOOST_AUTO_TEST_CASE(launch_failures_are_cuda_errors) {
  auto l = make();
  CUmodule m = l->load_module(ptx.data(), ptx.size());
  CUfunction f = l->get_function(m, "empty");
  fake_cuda_fail_next("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 1);
  try {
    l->launch(f, launch_config{}, nullptr, 0);
    BOOST_ERROR("no error");
  } catch (const cuda_error &e) {
    BOOST_TEST(std::string(e.what()) ==
               "cuLaunchKernel failed: too many resources requested for launch");
    BOOST_TEST((e.classification() == error_class::launch));
  }
  // More argument bytes than the kernel's parameters take: the driver refuses.
  CUfunction scale = l->get_function(m, "scale");
  unsigned char large[64] = {};
  BOOST_CHECK_THROW(l->launch(scale, launch_config{}, large, sizeof large), cuda_error);
  l->unload_module(m);
}

BOOST_AUTO_TEST_CASE(attributes_and_occupancy) {
  auto l = make();
  CUmodule m = l->load_module(ptx.data(), ptx.size());
  CUfunction f = l->get_function(m, "scale");
  BOOST_TEST(l->function_attribute(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) == 1024);
  l->set_function_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000);
  BOOST_TEST(l->function_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) == 100000);
  BOOST_TEST(l->max_active_blocks_per_multiprocessor(f, 256, 0) > 0);
  l->unload_module(m);
}

BOOST_AUTO_TEST_CASE(loads_a_module_file) {
  auto l = make();
  test_support::temp_dir dir;
  const auto file = dir.write("kernel.ptx", ptx);
  CUmodule m = l->load_module_file(file.string());
  BOOST_TEST(l->get_function(m, "scale") != nullptr);
  l->unload_module(m);
  try {
    l->load_module_file((dir.path() / "missing.cubin").string());
    BOOST_ERROR("loaded a missing file");
  } catch (const cuda_error &e) {
    BOOST_TEST(e.code() == CUDA_ERROR_FILE_NOT_FOUND);
    CHECK_CONTAINS(e.what(), "missing.cubin");
  }
}

BOOST_AUTO_TEST_SUITE_END()
