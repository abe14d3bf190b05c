// Tests of the compile cache's two layers: memory then disk then compile, what a compile read and
// its checks in both layers, corruption, permissions, eviction, the environment; with an
// in-process compiler that counts its calls (compile_cache_support.hpp).
#define BOOST_TEST_MODULE compile_cache
#include <boost/test/included/unit_test.hpp>

#include "compile_cache_support.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <random>

using namespace cache_test;
using test_support::contains;

BOOST_FIXTURE_TEST_SUITE(cache, fresh_cache)

BOOST_AUTO_TEST_CASE(memory_then_disk_then_compile) {
  test_support::temp_dir dir;
  auto c = make_compiler();
  auto policy = in(dir);
  compile_request req = base_request();
  req.name_expressions = {"k"};
  cache_request r(c, req);

  auto first = compile_cache::instance().compile(r, policy);
  BOOST_TEST(first.hit == cache_hit::none);
  BOOST_TEST(c->calls == 1);
  BOOST_TEST(first.image->data == "IMAGE[sm_90]" + req.source);
  BOOST_TEST(first.key.size() == 64u);
  BOOST_TEST(first.warning.empty());

  auto second = compile_cache::instance().compile(r, policy);
  BOOST_TEST(second.hit == cache_hit::memory);
  BOOST_TEST(second.image.get() == first.image.get());
  BOOST_TEST(second.key == first.key);
  BOOST_TEST(c->calls == 1);
  // A request built again from the same values finds the same entry.
  BOOST_TEST(compile_cache::instance().find(cache_request(c, req)) != nullptr);

  compile_cache::instance().clear_memory();
  auto third = compile_cache::instance().compile(cache_request(c, req), policy);
  BOOST_TEST(third.hit == cache_hit::disk);
  BOOST_TEST(c->calls == 1);
  BOOST_TEST(third.image->data == first.image->data);
  BOOST_TEST(third.image->lowered_names.at("k") == "_lowered_k");
  BOOST_TEST(third.image->command == "count kernel.cu");

  // Files 0600 in dirs 0700, one entry named after the key.
  auto files = entry_files(policy);
  BOOST_REQUIRE_EQUAL(files.size(), 1u);
  BOOST_TEST(files[0].filename().string() == compile_cache_key(r) + ".bin");
  BOOST_TEST(third.key == first.key);
  BOOST_TEST(mode_of(files[0]) == 0600u);
  BOOST_TEST(mode_of(entries_dir(policy)) == 0700u);
  BOOST_TEST(mode_of(policy.directory) == 0700u);
}

BOOST_AUTO_TEST_CASE(policy_and_environment_turn_layers_off) {
  test_support::temp_dir dir;
  auto c = make_compiler();
  auto policy = in(dir);
  cache_request r(c, base_request());
  cache_policy no_memory = policy;
  no_memory.memory = false;
  compile_cache::instance().compile(r, no_memory);
  compile_cache::instance().compile(r, no_memory);
  BOOST_TEST(c->calls == 1); // the second came from disk
  BOOST_TEST(compile_cache::instance().memory_entries() == 0u);

  cache_policy no_disk = policy;
  no_disk.disk = false;
  no_disk.directory = (dir.path() / "never").string();
  compile_cache::instance().compile(r, no_disk);
  BOOST_TEST(!fs::exists(no_disk.directory));

  ::setenv("CUPLUG_DISABLE_CACHE", "1", 1);
  auto a = compile_cache::instance().compile(r, policy);
  auto b = compile_cache::instance().compile(r, policy);
  BOOST_TEST(a.hit == cache_hit::none);
  BOOST_TEST(b.hit == cache_hit::none);
  BOOST_TEST(c->calls == 4);
  ::setenv("CUPLUG_DISABLE_CACHE", "0", 1);
  BOOST_TEST(compile_cache::instance().compile(r, policy).hit != cache_hit::none);
}

BOOST_AUTO_TEST_CASE(corrupt_or_truncated_entries_are_misses_and_get_rewritten) {
  test_support::temp_dir dir;
  auto c = make_compiler();
  auto policy = in(dir);
  policy.memory = false;
  cache_request r(c, base_request());
  auto first = compile_cache::instance().compile(r, policy);
  fs::path entry = entry_files(policy).at(0);
  const std::string good = test_support::read_file(entry.string());

  auto damage_and_check = [&](const std::string &bytes) {
    { std::ofstream(entry, std::ios::binary | std::ios::trunc) << bytes; }
    int before = c->calls;
    auto again = compile_cache::instance().compile(r, policy);
    BOOST_TEST(again.hit == cache_hit::none);
    BOOST_TEST(c->calls == before + 1);
    BOOST_TEST(again.image->data == first.image->data);
    BOOST_TEST(test_support::read_file(entry.string()) == good); // rewritten whole
    BOOST_TEST(compile_cache::instance().compile(r, policy).hit == cache_hit::disk);
  };
  damage_and_check(good.substr(0, good.size() / 2)); // truncated
  damage_and_check("");                              // empty
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x20;
  damage_and_check(flipped); // a flipped bit
  std::string other_version = good;
  other_version[8] = 99; // another format version
  damage_and_check(other_version);

  // An entry for another key under this key's name is not believed either.
  compiled_image img;
  BOOST_TEST(decode_cache_entry(good, compile_cache_key(r), img));
  BOOST_TEST(!decode_cache_entry(good, std::string(64, '0'), img));
}

BOOST_AUTO_TEST_CASE(entries_round_trip) {
  compiled_image in_img;
  in_img.format = image_format::fatbin;
  in_img.data = std::string("\0\1binary\0", 9);
  in_img.log = "a log";
  in_img.command = "nvcc x";
  in_img.lowered_names = {{"f<int>", "_Z1fIiEvv"}, {"g", "g"}};
  std::string key(64, 'a');
  compiled_image out;
  BOOST_REQUIRE(decode_cache_entry(encode_cache_entry(key, in_img), key, out));
  BOOST_TEST(out.format == in_img.format);
  BOOST_TEST(out.data == in_img.data);
  BOOST_TEST(out.log == in_img.log);
  BOOST_TEST(out.command == in_img.command);
  BOOST_TEST((out.lowered_names == in_img.lowered_names));
}

BOOST_AUTO_TEST_CASE(unsafe_directories_are_not_used_and_said_once) {
  test_support::temp_dir dir;
  auto c = make_compiler();
  fs::create_directories(dir.path() / "shared");
  ::chmod((dir.path() / "shared").c_str(), 0777);
  cache_policy policy;
  policy.directory = (dir.path() / "shared").string();
  cache_request r(c, base_request());
  auto first = compile_cache::instance().compile(r, policy);
  CHECK_CONTAINS(first.warning, "writable by everyone");
  CHECK_CONTAINS(first.warning, "CUPLUG_CACHE_DIR");
  BOOST_TEST(compile_cache::instance().disk_status(policy.directory).state_ ==
             disk_cache_status::state::unsafe);
  compile_cache::instance().clear_memory();
  auto second = compile_cache::instance().compile(r, policy);
  BOOST_TEST(second.warning.empty()); // once per directory
  BOOST_TEST(c->calls == 2);          // nothing came from that directory
  // Nothing is created in an unsafe directory, not even the entries folder.
  BOOST_TEST(!fs::exists(dir.path() / "shared" / compile_cache::entries_subdir));

  // A directory owned by another user (only root can make one to test with).
  if (::geteuid() == 0) {
    fs::create_directories(dir.path() / "foreign");
    BOOST_REQUIRE(::chown((dir.path() / "foreign").c_str(), 4242, 4242) == 0);
    auto s = compile_cache::instance().disk_status((dir.path() / "foreign").string());
    BOOST_TEST(s.state_ == disk_cache_status::state::unsafe);
    CHECK_CONTAINS(s.reason, "owned by uid 4242");
  }
  // A file where the directory should be: unusable, not unsafe.
  dir.write("file", "x");
  auto s = compile_cache::instance().disk_status((dir.path() / "file").string());
  BOOST_TEST(s.state_ == disk_cache_status::state::unusable);
}

BOOST_AUTO_TEST_CASE(entries_writable_by_others_are_not_read) {
  test_support::temp_dir dir;
  auto c = make_compiler();
  auto policy = in(dir);
  policy.memory = false;
  cache_request r(c, base_request());
  compile_cache::instance().compile(r, policy);
  fs::path entry = entry_files(policy).at(0);
  ::chmod(entry.c_str(), 0666);
  compile_cache::instance().compile(r, policy);
  BOOST_TEST(c->calls == 2);
  BOOST_TEST(mode_of(entry) == 0600u); // replaced by a fresh private entry
}

BOOST_AUTO_TEST_CASE(an_edited_input_misses_in_both_layers) {
  test_support::temp_dir dir;
  auto h = write_old(dir, "h.h", "#define V 1\n");
  auto c = make_compiler();
  c->inputs.files = {h.string()};
  auto policy = in(dir);
  cache_request r(c, base_request());
  auto a = compile_cache::instance().compile(r, policy);
  BOOST_TEST(compile_cache::instance().compile(r, policy).hit == cache_hit::memory);
  compile_cache::instance().clear_memory();
  BOOST_TEST(compile_cache::instance().compile(r, policy).hit == cache_hit::disk);

  write_old(dir, "h.h", "#define V 22\n"); // another size
  auto b = compile_cache::instance().compile(r, policy);
  BOOST_TEST(b.hit == cache_hit::none);
  BOOST_TEST(contains(b.image->data, "V 22"));
  BOOST_TEST(c->calls == 2);
  // Same size, same mtime: only the content says it changed.
  auto same_mtime = fs::last_write_time(h);
  dir.write("h.h", "#define V 33\n");
  fs::last_write_time(h, same_mtime);
  auto d = compile_cache::instance().compile(r, policy);
  BOOST_TEST(d.hit == cache_hit::none);
  BOOST_TEST(contains(d.image->data, "V 33"));
  compile_cache::instance().clear_memory();
  write_old(dir, "h.h", "#define V 44\n");
  auto e = compile_cache::instance().compile(r, policy); // the disk entry is checked too
  BOOST_TEST(e.hit == cache_hit::none);
  BOOST_TEST(contains(e.image->data, "V 44"));
  // A touched but unchanged file is still a hit (by its content hash).
  fs::last_write_time(h, fs::file_time_type::clock::now() - std::chrono::seconds(5));
  BOOST_TEST(compile_cache::instance().compile(r, policy).hit == cache_hit::memory);
  fs::remove(h);
  BOOST_TEST(compile_cache::instance().compile(r, policy).hit == cache_hit::none);
}

BOOST_AUTO_TEST_CASE(a_path_that_appears_or_a_variable_that_changes_misses) {
  test_support::temp_dir dir;
  auto c = make_compiler();
  c->inputs.absent = {(dir.path() / "shadow.h").string()};
  c->inputs.environment = {{"CUPLUG_TEST_FLAGS", ""}};
  ::unsetenv("CUPLUG_TEST_FLAGS");
  auto policy = in(dir);
  cache_request r(c, base_request());
  compile_cache::instance().compile(r, policy);
  BOOST_TEST(compile_cache::instance().compile(r, policy).hit == cache_hit::memory);
  ::setenv("CUPLUG_TEST_FLAGS", "-O0", 1);
  BOOST_TEST(compile_cache::instance().compile(r, policy).hit == cache_hit::none); // reports ""
  ::unsetenv("CUPLUG_TEST_FLAGS");
  BOOST_TEST(compile_cache::instance().compile(r, policy).hit == cache_hit::memory);
  compile_cache::instance().clear_memory();
  ::setenv("CUPLUG_TEST_FLAGS", "-O0", 1);
  BOOST_TEST(compile_cache::instance().compile(r, policy).hit == cache_hit::none); // disk too
  ::unsetenv("CUPLUG_TEST_FLAGS");
  BOOST_TEST(compile_cache::instance().compile(r, policy).hit != cache_hit::none);
  dir.write("shadow.h", "\n");
  BOOST_TEST(compile_cache::instance().compile(r, policy).hit == cache_hit::none);
  compile_cache::instance().clear_memory();
  BOOST_TEST(compile_cache::instance().compile(r, policy).hit == cache_hit::none);
}

BOOST_AUTO_TEST_CASE(relative_inputs_are_checked_in_the_current_directory) {
  test_support::temp_dir a, b;
  for (auto *d : {&a, &b})
    fs::create_directories(d->path() / "inc");
  write_old(a, "inc/h.h", "one\n");
  write_old(b, "inc/h.h", "two\n");
  auto c = make_compiler();
  c->inputs.files = {"inc/h.h"};
  auto policy = in(a);
  cache_request r(c, base_request());
  auto old = fs::current_path();
  fs::current_path(a.path());
  auto first = compile_cache::instance().compile(r, policy);
  fs::current_path(b.path()); // the compiler would read b/inc/h.h now
  auto second = compile_cache::instance().compile(r, policy);
  fs::current_path(old);
  BOOST_TEST(contains(first.image->data, "one"));
  BOOST_TEST(second.hit == cache_hit::none);
  BOOST_TEST(contains(second.image->data, "two"));
}

BOOST_AUTO_TEST_CASE(what_cannot_be_recorded_is_not_cached) {
  test_support::temp_dir dir;
  auto policy = in(dir);
  // A compiler that does not say what it read.
  auto c = make_compiler();
  c->inputs = compile_inputs{};
  c->inputs.unknown_reason = "a computed include";
  cache_request r(c, base_request());
  auto a = compile_cache::instance().compile(r, policy);
  BOOST_TEST(a.not_cached == "a computed include");
  BOOST_TEST(compile_cache::instance().compile(r, policy).hit == cache_hit::none);
  BOOST_TEST(c->calls == 2);
  BOOST_TEST(fs::is_empty(entries_dir(policy)));
  // Equal images still get equal keys (loaded modules are shared by key).
  BOOST_TEST(compile_cache::instance().compile(r, policy).key == a.key);

  // A file written while the compile ran: what the compiler read is not known for sure.
  auto d = make_compiler();
  auto h = write_old(dir, "h.h", "before\n");
  d->inputs.files = {h.string()};
  d->while_compiling = [&] { dir.write("h.h", "during\n"); };
  cache_request r2(d, base_request());
  auto b = compile_cache::instance().compile(r2, policy);
  CHECK_CONTAINS(b.not_cached, "was written while compiling");
  d->while_compiling = nullptr;
  BOOST_TEST(compile_cache::instance().compile(r2, policy).hit == cache_hit::none);

  // A request to keep the compiler's files always runs the compiler.
  auto k = make_compiler();
  compile_request kr = base_request();
  kr.keep_files = true;
  cache_request r3(k, kr);
  compile_cache::instance().compile(r3, policy);
  BOOST_TEST(compile_cache::instance().compile(r3, policy).hit == cache_hit::none);
  BOOST_TEST(k->calls == 2);
}

BOOST_AUTO_TEST_CASE(least_recently_used_entries_are_evicted_over_the_cap) {
  test_support::temp_dir dir;
  auto c = make_compiler();
  auto policy = in(dir);
  policy.memory = false;
  auto request_n = [&](int i) {
    compile_request r = base_request();
    r.source += "// " + std::to_string(i) + std::string(2000, 'x') + "\n";
    return cache_request(c, r);
  };
  std::vector<std::string> keys;
  for (int i = 0; i < 4; ++i) {
    compile_cache::instance().compile(request_n(i), policy);
    keys.push_back(compile_cache_key(request_n(i)));
    // Distinct mtimes however coarse the file system's clock.
    fs::path p = entries_dir(policy) / (keys.back() + ".bin");
    fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::hours(10 - i));
  }
  // Entry 0 is used again: it becomes the most recent.
  BOOST_TEST(compile_cache::instance().compile(request_n(0), policy).hit == cache_hit::disk);
  std::size_t one = fs::file_size(entries_dir(policy) / (keys[0] + ".bin"));
  ::setenv("CUPLUG_CACHE_MAX_SIZE", std::to_string(one * 3 + one / 2).c_str(), 1);
  compile_cache::instance().compile(request_n(4), policy); // over the cap: evicts 1, then 2
  auto present = [&](int i) { return fs::exists(entries_dir(policy) / (keys[i] + ".bin")); };
  BOOST_TEST(present(0));
  BOOST_TEST(!present(1));
  BOOST_TEST(present(3));
  std::size_t total = 0;
  for (auto &f : entry_files(policy))
    total += fs::file_size(f);
  BOOST_TEST(total <= one * 3 + one / 2);

  ::setenv("CUPLUG_CACHE_MAX_SIZE", "lots", 1);
  BOOST_CHECK_THROW(compile_cache::max_disk_bytes(), config_error);
}

BOOST_AUTO_TEST_CASE(default_directory_follows_the_environment) {
  ::setenv("CUPLUG_CACHE_DIR", "/somewhere/cache", 1);
  BOOST_TEST(compile_cache::default_directory() == "/somewhere/cache");
  ::unsetenv("CUPLUG_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  BOOST_TEST(compile_cache::default_directory() == "/xdg/cuplug");
  ::unsetenv("XDG_CACHE_HOME");
  const char *old_home = std::getenv("HOME");
  std::string saved = old_home ? old_home : "";
  ::setenv("HOME", "/home/someone", 1);
  BOOST_TEST(compile_cache::default_directory() == "/home/someone/.cache/cuplug");
  if (old_home)
    ::setenv("HOME", saved.c_str(), 1);
  else
    ::unsetenv("HOME");
}

BOOST_AUTO_TEST_CASE(compile_errors_are_not_cached) {
  class failing final : public compiler {
    compiled_image do_compile(const compile_request &) override {
      ++calls;
      throw compile_error("bad", "kernel.cu(1): error", "fail");
    }
    std::string do_version() const override { return "1"; }
    std::vector<int> do_supported_archs() const override { return {90}; }

  public:
    int calls = 0;
  };
  test_support::temp_dir dir;
  auto f = std::make_shared<failing>();
  f->set_backend_name("failing");
  cache_request r(f, base_request());
  BOOST_CHECK_THROW(compile_cache::instance().compile(r, in(dir)), compile_error);
  BOOST_CHECK_THROW(compile_cache::instance().compile(r, in(dir)), compile_error);
  BOOST_TEST(f->calls == 2);
  BOOST_TEST(fs::is_empty(entries_dir(in(dir))));
}

BOOST_AUTO_TEST_SUITE_END()
