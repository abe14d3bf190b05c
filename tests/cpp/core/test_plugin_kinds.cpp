// Tests core/src/plugin_kinds.cpp: the one table of plugin kinds and what is derived from it.
#define BOOST_TEST_MODULE plugin_kinds
#include <boost/test/included/unit_test.hpp>

#include "test_support.hpp"

#include <cuplug/config.hpp>
#include <cuplug/plugin_kinds.hpp>

#include <cctype>
#include <set>
#include <string>

using namespace cuplug;

BOOST_AUTO_TEST_CASE(every_kind_of_the_table_is_listed_once_in_order) {
  const std::string names[] = {
#define NAME(name, id, version, default_backend) #name,
      CUPLUG_PLUGIN_KINDS(NAME)
#undef NAME
  };
  BOOST_REQUIRE(std::size(all_plugin_kinds) == std::size(names));
  std::set<std::uint32_t> ids;
  for (std::size_t i = 0; i < std::size(names); ++i) {
    BOOST_TEST(to_string(all_plugin_kinds[i]) == names[i]);
    BOOST_TEST(ids.insert(static_cast<std::uint32_t>(all_plugin_kinds[i])).second,
               names[i] << " reuses a manifest id");
  }
  BOOST_TEST(plugin_kind_list() == "allocator, compiler, launcher, rng, interop");
}

BOOST_AUTO_TEST_CASE(manifest_ids_are_fixed) {
  // Plugins carry these numbers in their manifests: they may never change.
  BOOST_TEST(static_cast<std::uint32_t>(plugin_kind::allocator) == 1u);
  BOOST_TEST(static_cast<std::uint32_t>(plugin_kind::compiler) == 2u);
  BOOST_TEST(static_cast<std::uint32_t>(plugin_kind::launcher) == 3u);
  BOOST_TEST(static_cast<std::uint32_t>(plugin_kind::rng) == 4u);
  BOOST_TEST(static_cast<std::uint32_t>(plugin_kind::interop) == 5u);
}

BOOST_AUTO_TEST_CASE(names_and_ids_round_trip) {
  for (plugin_kind k : all_plugin_kinds) {
    BOOST_TEST((plugin_kind_from_string(to_string(k)) == k));
    BOOST_TEST(is_plugin_kind(static_cast<std::uint32_t>(k)));
    BOOST_TEST(interface_version(k) >= 1u);
  }
  BOOST_TEST(!plugin_kind_from_string("gpu").has_value());
  BOOST_TEST(!plugin_kind_from_string("").has_value());
  for (std::uint32_t id : {0u, 6u, 42u, 0xffffffffu})
    BOOST_TEST(!is_plugin_kind(id), id);
  BOOST_TEST(std::string(to_string(static_cast<plugin_kind>(42))) == "unknown");
  BOOST_TEST(interface_version(static_cast<plugin_kind>(42)) == 0u);
}

BOOST_AUTO_TEST_CASE(interface_version_constants_come_from_the_table) {
  BOOST_TEST(interface_version(plugin_kind::allocator) == allocator_interface_version);
  BOOST_TEST(interface_version(plugin_kind::compiler) == compiler_interface_version);
  BOOST_TEST(interface_version(plugin_kind::launcher) == launcher_interface_version);
  BOOST_TEST(interface_version(plugin_kind::rng) == rng_interface_version);
  BOOST_TEST(interface_version(plugin_kind::interop) == interop_interface_version);
}

BOOST_AUTO_TEST_CASE(defaults_and_variables_come_from_the_table) {
  for (plugin_kind k : all_plugin_kinds) {
    BOOST_TEST(std::string(config::builtin_default(k)) == default_backend(k));
    BOOST_TEST(!std::string(default_backend(k)).empty());
    std::string var = "CUPLUG_";
    for (const char *p = to_string(k); *p; ++p)
      var += static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
    BOOST_TEST(config::env_var(k) == var);
  }
  BOOST_TEST(std::string(default_backend(plugin_kind::rng)) == "curand");
}
