// Tests core/src/config.cpp: selection precedence, origins, options layers, generations.
#define BOOST_TEST_MODULE config
#include <boost/test/included/unit_test.hpp>

#include "test_support.hpp"

#include <cuplug/config.hpp>
#include <cuplug/errors.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>

using namespace cuplug;

namespace {

config &cfg() { return config::instance(); }

namespace fs = std::filesystem;
using test_support::temp_dir;

// The config_error config::open_file gives for `path` ("" if it opened it).
std::string open_error(const std::string &path) {
  try {
    ::close(config::open_file(path));
  } catch (const config_error &e) {
    return e.what();
  }
  return {};
}

// The config_error a read of a dangerous option gives ("" if it read it).
std::string program_error(const options &o, const std::string &key) {
  try {
    o.get_program(key, "");
  } catch (const config_error &e) {
    return e.what();
  }
  return {};
}

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

// Issue 13 item 2: the config file is trusted only as plugins are (owner, group, folders).
BOOST_AUTO_TEST_CASE(opens_only_config_files_nobody_else_can_change) {
  temp_dir dir;
  const fs::path good = dir.write("good.toml", "[backends]\n");
  ::chmod(good.c_str(), 0644);
  BOOST_TEST(open_error(good.string()) == "");
  const int fd = config::open_file(good.string());
  char buffer[16] = {};
  BOOST_TEST(::read(fd, buffer, sizeof buffer) == 11);
  ::close(fd);

  CHECK_CONTAINS(open_error("cuplug.toml"), "'cuplug.toml' is a relative path");
  const fs::path open_to_all = dir.write("open.toml", "");
  ::chmod(open_to_all.c_str(), 0666);
  CHECK_CONTAINS(open_error(open_to_all.string()), "is writable by everyone (mode 0666)");
  CHECK_CONTAINS(open_error(open_to_all.string()), "does not read a config file someone else");

  // In a folder others can write, or below one.
  fs::create_directories(dir.path() / "shared" / "inner");
  const fs::path below = dir.write("shared/inner/c.toml", "");
  ::chmod((dir.path() / "shared").c_str(), 0777);
  CHECK_CONTAINS(open_error(below.string()), "the folder " + (dir.path() / "shared").string() +
                                                 " (on the way to the config file");
  ::chmod((dir.path() / "shared").c_str(), 0755);
  BOOST_TEST(open_error(below.string()) == "");

  const fs::path fifo = dir.path() / "fifo.toml";
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto opening = std::async(std::launch::async, [&] { return open_error(fifo.string()); });
  if (opening.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    const int unblock = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
    opening.wait();
    ::close(unblock);
    BOOST_ERROR("config::open_file blocked on a FIFO");
  }
  const std::string refused = opening.get();
  CHECK_CONTAINS(refused, "is not a regular file (it is a FIFO)");

  if (::geteuid() != 0) {
    BOOST_TEST_MESSAGE("not root: cannot give a file to another user; owner checks skipped");
    return;
  }
  BOOST_REQUIRE(::chown(good.c_str(), 65534, static_cast<gid_t>(-1)) == 0);
  CHECK_CONTAINS(open_error(good.string()), "is owned by nobody, not by root or by you");
  BOOST_REQUIRE(::chown(good.c_str(), 0, 65534) == 0);
  ::chmod(good.c_str(), 0664);
  CHECK_CONTAINS(open_error(good.string()), "is writable by its group");
}

// Issue 13 item 2: options naming a program or a file to write are taken only from trusted
// sources, whoever installed the file layer.
BOOST_AUTO_TEST_CASE(dangerous_options_come_only_from_trusted_sources) {
  temp_dir dir;
  const fs::path trusted = dir.write("trusted.toml", "");
  ::chmod(trusted.c_str(), 0644);
  const std::map<std::string, std::map<std::string, std::string>> table = {
      {"compiler.nvcc", {{"nvcc", "/opt/evil/nvcc"}, {"keep", "true"}}}};
  cfg().set_file_layer(trusted.string(), {{plugin_kind::compiler, "nvcc"}}, table);
  BOOST_TEST(cfg().plugin_options(plugin_kind::compiler, "nvcc").get_program("nvcc", "") ==
             "/opt/evil/nvcc");

  const fs::path untrusted = dir.write("untrusted.toml", "");
  ::chmod(untrusted.c_str(), 0666);
  cfg().set_file_layer(untrusted.string(), {{plugin_kind::compiler, "nvcc"}}, table);
  BOOST_TEST(cfg().selected(plugin_kind::compiler).name == "nvcc"); // choices still apply
  const options o = cfg().plugin_options(plugin_kind::compiler, "nvcc");
  BOOST_TEST(o.get_string("keep", "") == "true"); // harmless options too
  const std::string why = program_error(o, "nvcc");
  CHECK_CONTAINS(why, "option 'nvcc' names a program to run, but its value '/opt/evil/nvcc' "
                      "was set by the config file " +
                          untrusted.string() + ", which cuplug does not trust (");
  CHECK_CONTAINS(why, "writable by everyone");
  CHECK_CONTAINS(why, "cuplug.use(");
  try {
    o.get_output_path("keep", "");
    BOOST_ERROR("a file to write was taken from an untrusted file");
  } catch (const config_error &e) {
    CHECK_CONTAINS(e.what(), "option 'keep' names a file to write");
  }
  // The same value given explicitly, or by a caller for one object, is the program's own.
  BOOST_TEST(cfg()
                 .plugin_options(plugin_kind::compiler, "nvcc", {{"nvcc", "/usr/bin/nvcc"}})
                 .get_program("nvcc", "") == "/usr/bin/nvcc");
  cfg().set_explicit_options(plugin_kind::compiler, "nvcc", {{"nvcc", "/usr/local/bin/nvcc"}});
  BOOST_TEST(cfg().plugin_options(plugin_kind::compiler, "nvcc").get_program("nvcc", "") ==
             "/usr/local/bin/nvcc");
  cfg().set_explicit_options(plugin_kind::compiler, "nvcc", {});

  // A layer naming no file, or a file that is not there, could not be checked.
  cfg().set_file_layer("", {}, table);
  CHECK_CONTAINS(program_error(cfg().plugin_options(plugin_kind::compiler, "nvcc"), "nvcc"),
                 "names no file");
  cfg().set_file_layer("/nonexistent/cuplug.toml", {}, table);
  CHECK_CONTAINS(program_error(cfg().plugin_options(plugin_kind::compiler, "nvcc"), "nvcc"),
                 "cannot inspect /nonexistent");
  cfg().clear_file_layer();
  BOOST_TEST(cfg().plugin_options(plugin_kind::compiler, "nvcc").values().empty());
}

// The marks travel with the options into create(): the registry's copy keeps them.
BOOST_AUTO_TEST_CASE(distrusted_options_reach_the_plugin) {
  registry::instance().add_builtin(plugin_kind::allocator, "test_trust_probe", "reads 'path'",
                                   [](const options &o) -> plugin_object * {
                                     o.get_output_path("path", "");
                                     throw config_error("unreachable: the path was accepted");
                                   });
  options o({{"path", "/etc/passwd"}}, {{"path", "a test source"}});
  try {
    registry::instance().create(plugin_kind::allocator, "test_trust_probe", o);
    BOOST_ERROR("create() accepted a distrusted output path");
  } catch (const config_error &e) {
    CHECK_CONTAINS(e.what(), "option 'path' names a file to write, but its value '/etc/passwd' "
                             "was set by a test source");
  }
}

BOOST_AUTO_TEST_CASE(source_names) {
  BOOST_TEST(std::string(to_string(config_source::explicit_call)) == "explicit");
  BOOST_TEST(std::string(to_string(config_source::environment)) == "environment");
  BOOST_TEST(std::string(to_string(config_source::config_file)) == "config file");
  BOOST_TEST(std::string(to_string(config_source::builtin_default)) == "built-in default");
}

BOOST_AUTO_TEST_SUITE_END()
