// Tests core/src/config.cpp: selection precedence, origins, options layers, generations.
#define BOOST_TEST_MODULE config
#include <boost/test/included/unit_test.hpp>

#include "test_support.hpp"

#include <cuplug/config.hpp>
#include <cuplug/errors.hpp>

#include <cstdlib>

using namespace cuplug;

namespace {

config &cfg() { return config::instance(); }

// Leaves the configuration as the test found it: no explicit choices, no file, no env.
struct clean_config {
  clean_config() { reset(); }
  ~clean_config() { reset(); }
  static void reset() {
    for (plugin_kind k : {plugin_kind::allocator, plugin_kind::compiler, plugin_kind::launcher,
                          plugin_kind::rng, plugin_kind::interop}) {
      cfg().set_explicit(k, std::nullopt);
      ::unsetenv(config::env_var(k).c_str());
    }
    cfg().clear_file_layer();
    cfg().set_explicit_options(plugin_kind::allocator, "pool", {});
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(config_tests, clean_config)

BOOST_AUTO_TEST_CASE(built_in_defaults) {
  const std::pair<plugin_kind, const char *> defaults[] = {{plugin_kind::allocator, "device"},
                                                           {plugin_kind::compiler, "nvrtc"},
                                                           {plugin_kind::launcher, "driver"},
                                                           {plugin_kind::rng, "curand"},
                                                           {plugin_kind::interop, "gl"}};
  for (const auto &[kind, name] : defaults) {
    BOOST_TEST(std::string(config::builtin_default(kind)) == name);
    const selection s = cfg().selected(kind);
    BOOST_TEST(s.name == name);
    BOOST_TEST(s.source == config_source::builtin_default);
    BOOST_TEST(s.origin == "built-in default");
  }
}

BOOST_AUTO_TEST_CASE(environment_variable_names) {
  BOOST_TEST(config::env_var(plugin_kind::allocator) == "CUPLUG_ALLOCATOR");
  BOOST_TEST(config::env_var(plugin_kind::compiler) == "CUPLUG_COMPILER");
  BOOST_TEST(config::env_var(plugin_kind::launcher) == "CUPLUG_LAUNCHER");
  BOOST_TEST(config::env_var(plugin_kind::rng) == "CUPLUG_RNG");
  BOOST_TEST(config::env_var(plugin_kind::interop) == "CUPLUG_INTEROP");
}

BOOST_AUTO_TEST_CASE(explicit_beats_environment_beats_file_beats_default) {
  const plugin_kind k = plugin_kind::allocator;
  cfg().set_file_layer("/etc/cuplug.toml", {{k, "pool"}}, {});
  BOOST_TEST(cfg().selected(k).name == "pool");
  BOOST_TEST(cfg().selected(k).source == config_source::config_file);
  BOOST_TEST(cfg().selected(k).origin == "/etc/cuplug.toml");
  BOOST_TEST(cfg().file_path() == "/etc/cuplug.toml");

  ::setenv("CUPLUG_ALLOCATOR", "async", 1);
  BOOST_TEST(cfg().selected(k).name == "async"); // read at each query
  BOOST_TEST(cfg().selected(k).source == config_source::environment);
  BOOST_TEST(cfg().selected(k).origin == "CUPLUG_ALLOCATOR");

  BOOST_TEST(!cfg().set_explicit(k, std::string("managed")).has_value());
  BOOST_TEST(cfg().selected(k).name == "managed");
  BOOST_TEST(cfg().selected(k).source == config_source::explicit_call);
  BOOST_TEST(cfg().selected(k).origin == "cuplug.use()");
  BOOST_TEST(*cfg().explicit_choice(k) == "managed");

  BOOST_TEST(*cfg().set_explicit(k, std::nullopt) == "managed");
  BOOST_TEST(cfg().selected(k).name == "async");
  ::unsetenv("CUPLUG_ALLOCATOR");
  BOOST_TEST(cfg().selected(k).name == "pool");
  cfg().clear_file_layer();
  BOOST_TEST(cfg().selected(k).name == "device");
  BOOST_TEST(cfg().file_path().empty());
  // Other kinds were never affected.
  BOOST_TEST(cfg().selected(plugin_kind::compiler).name == "nvrtc");
}

BOOST_AUTO_TEST_CASE(blank_environment_values_are_ignored_and_values_trimmed) {
  ::setenv("CUPLUG_COMPILER", "   ", 1);
  BOOST_TEST(cfg().selected(plugin_kind::compiler).source == config_source::builtin_default);
  ::setenv("CUPLUG_COMPILER", " nvcc\n", 1);
  BOOST_TEST(cfg().selected(plugin_kind::compiler).name == "nvcc");
}

BOOST_AUTO_TEST_CASE(set_explicit_returns_the_previous_choice) {
  const plugin_kind k = plugin_kind::rng;
  BOOST_TEST(!cfg().set_explicit(k, std::string("philox")).has_value());
  BOOST_TEST(*cfg().set_explicit(k, std::string("curand")) == "philox");
  BOOST_TEST(*cfg().set_explicit(k, std::nullopt) == "curand");
  BOOST_TEST(!cfg().explicit_choice(k).has_value());
  BOOST_CHECK_THROW(cfg().set_explicit(k, std::string(" ")), config_error);
}

BOOST_AUTO_TEST_CASE(generation_changes_with_every_change_only) {
  const plugin_kind k = plugin_kind::launcher;
  unsigned long g = cfg().generation();
  auto changed = [&] {
    const unsigned long now = cfg().generation();
    const bool moved = now != g;
    g = now;
    return moved;
  };
  cfg().set_explicit(k, std::string("graph"));
  BOOST_TEST(changed());
  cfg().set_explicit(k, std::string("graph"));
  BOOST_TEST(!changed()); // same value: nothing changed
  cfg().set_explicit(k, std::nullopt);
  BOOST_TEST(changed());
  cfg().set_file_layer("f.toml", {}, {});
  BOOST_TEST(changed());
  cfg().clear_file_layer();
  BOOST_TEST(changed());
  cfg().set_explicit_options(plugin_kind::allocator, "pool", {{"initial", "1MiB"}});
  BOOST_TEST(changed());
  cfg().set_explicit_options(plugin_kind::allocator, "pool", {{"initial", "1MiB"}});
  BOOST_TEST(!changed());
  cfg().set_explicit_options(plugin_kind::allocator, "pool", {});
  BOOST_TEST(changed());
  BOOST_TEST(cfg().selected(k).name == "driver");
  BOOST_TEST(!changed()); // queries change nothing
}

BOOST_AUTO_TEST_CASE(plugin_options_overlay_explicit_on_file) {
  cfg().set_file_layer("c.toml", {},
                       {{"allocator.pool", {{"initial", "64MiB"}, {"release", "true"}}},
                        {"compiler.nvrtc", {{"std", "c++17"}}}});
  options o = cfg().plugin_options(plugin_kind::allocator, "pool");
  BOOST_TEST(o.values().size() == 2u);
  BOOST_TEST(o.get_string("initial", "") == "64MiB");
  cfg().set_explicit_options(plugin_kind::allocator, "pool",
                             {{"initial", "1GiB"}, {"max", "2GiB"}});
  o = cfg().plugin_options(plugin_kind::allocator, "pool");
  BOOST_TEST(o.values().size() == 3u);
  BOOST_TEST(o.get_string("initial", "") == "1GiB");
  BOOST_TEST(o.get_string("release", "") == "true");
  BOOST_TEST(o.get_string("max", "") == "2GiB");
  // Keys are per kind and name.
  BOOST_TEST(cfg().plugin_options(plugin_kind::compiler, "pool").values().empty());
  BOOST_TEST(cfg().plugin_options(plugin_kind::compiler, "nvrtc").values().size() == 1u);
  cfg().set_explicit_options(plugin_kind::allocator, "pool", {});
  BOOST_TEST(cfg().plugin_options(plugin_kind::allocator, "pool").values().size() == 2u);
}

BOOST_AUTO_TEST_CASE(source_names) {
  BOOST_TEST(std::string(to_string(config_source::explicit_call)) == "explicit");
  BOOST_TEST(std::string(to_string(config_source::environment)) == "environment");
  BOOST_TEST(std::string(to_string(config_source::config_file)) == "config file");
  BOOST_TEST(std::string(to_string(config_source::builtin_default)) == "built-in default");
}

BOOST_AUTO_TEST_SUITE_END()
