// Tests of the compile cache: hashing, key completeness, what a compile read and its checks in
// both layers, memory and disk layers, corruption, hostile entries, permissions, eviction; with an
// in-process compiler that counts its calls.
#define BOOST_TEST_MODULE compile_cache
#include <boost/test/included/unit_test.hpp>

#include "cache_entry.hpp"
#include "cache_key.hpp"
#include "sha256.hpp"
#include "test_support.hpp"

#include <cuplug/compile_cache.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/gpu_arch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <random>

using namespace cuplug;
using test_support::contains;
namespace fs = std::filesystem;

namespace cuplug { // so Boost.Test can print them
std::ostream &operator<<(std::ostream &os, cache_hit h) { return os << to_string(h); }
std::ostream &operator<<(std::ostream &os, disk_cache_status::state s) {
  return os << to_string(s);
}
std::ostream &operator<<(std::ostream &os, image_format f) { return os << to_string(f); }
} // namespace cuplug

namespace {

// Deterministic: the image is the request spelled out, and the content of each file it says it
// read, so a wrong hit shows in the data. It reports `inputs` as what it read.
class counting_compiler final : public compiler {
public:
  explicit counting_compiler(std::string version = "1.0") : version_(std::move(version)) {
    inputs.known = true;
  }
  std::atomic<int> calls{0};
  compile_inputs inputs;
  std::function<void()> while_compiling; // runs inside do_compile

private:
  compiled_image do_compile(const compile_request &r) override {
    ++calls;
    compiled_image out;
    out.format = r.target;
    out.data = "IMAGE[" + r.arch + "]" + r.source;
    for (const auto &f : inputs.files)
      out.data += "|" + test_support::read_file(f);
    out.log = r.source.find("warn") != std::string::npos ? "kernel.cu(1): warning: careful" : "";
    out.command = "count " + r.source_name;
    for (const auto &e : r.name_expressions)
      out.lowered_names[e] = "_lowered_" + e;
    out.inputs = inputs;
    if (while_compiling)
      while_compiling();
    return out;
  }
  std::string do_version() const override { return version_; }
  std::vector<int> do_supported_archs() const override { return {75, 80, 86, 89, 90}; }
  std::string version_;
};

std::shared_ptr<counting_compiler> make_compiler(const std::string &name = "counting",
                                                 const std::string &version = "1.0") {
  auto c = std::make_shared<counting_compiler>(version);
  c->set_backend_name(name);
  return c;
}

compile_request base_request() {
  compile_request r;
  r.source = "__global__ void k(float *a) { a[0] = 1; }\n";
  r.arch = "sm_90";
  return r;
}

std::string key_of(const plugin_ptr<compiler> &c, const compile_request &r) {
  return compile_cache_key(cache_request(c, r));
}

// Every case starts from an empty memory layer and no cache-related environment.
struct fresh_cache {
  fresh_cache() {
    ::unsetenv("CUPLUG_DISABLE_CACHE");
    ::unsetenv("CUPLUG_CACHE_MAX_SIZE");
    compile_cache::instance().clear_memory();
  }
  ~fresh_cache() {
    ::unsetenv("CUPLUG_DISABLE_CACHE");
    ::unsetenv("CUPLUG_CACHE_MAX_SIZE");
  }
};

cache_policy in(const test_support::temp_dir &dir, const std::string &sub = "cache") {
  cache_policy p;
  p.directory = (dir.path() / sub).string();
  return p;
}

// Writes a file that looks written long ago: the cache does not record a file written just before
// a compile (file times lag the clock), and tests want their compiles recorded.
fs::path write_old(const test_support::temp_dir &dir, const std::string &name,
                   const std::string &text) {
  fs::path p = dir.write(name, text);
  fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::seconds(30));
  return p;
}

fs::path entries_dir(const cache_policy &p) {
  return fs::path(p.directory) / compile_cache::entries_subdir;
}

std::vector<fs::path> entry_files(const cache_policy &p) {
  std::vector<fs::path> out;
  for (auto &e : fs::directory_iterator(entries_dir(p)))
    out.push_back(e.path());
  return out;
}

unsigned mode_of(const fs::path &p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 07777;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(cache, fresh_cache)

BOOST_AUTO_TEST_CASE(sha256_matches_the_fips_vectors) {
  BOOST_TEST(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  BOOST_TEST(sha256_hex("abc") ==
             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  BOOST_TEST(sha256_hex(std::string(1000000, 'a')) ==
             "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Lengths around the 55/56/64-byte padding boundaries against a split update.
  for (std::size_t n : {55u, 56u, 63u, 64u, 65u, 119u, 120u, 128u})
    BOOST_TEST(sha256_hex(std::string(n, 'x')).size() == 64u);
}

BOOST_AUTO_TEST_CASE(arch_spellings_and_clamping) {
  BOOST_TEST(parse_arch("sm_90").number == 90);
  BOOST_TEST(parse_arch("compute_86").number == 86);
  BOOST_TEST(parse_arch("sm_90a").suffix == "a");
  BOOST_TEST(parse_arch("9.0").number == 90);
  BOOST_TEST(parse_arch("12.1").number == 121);
  BOOST_TEST(parse_arch("100").number == 100);
  BOOST_CHECK_THROW(parse_arch("sm_nine"), config_error);
  BOOST_CHECK_THROW(parse_arch(""), config_error);
  BOOST_CHECK_THROW(parse_arch("sm_90x"), config_error);

  std::vector<int> supported{75, 80, 86, 89, 90, 100, 120};
  auto exact = choose_arch(90, supported);
  BOOST_TEST(exact.arch == 90);
  BOOST_TEST(!exact.clamped);
  auto minor = choose_arch(87, supported); // same major: an sm_86 cubin runs on 8.7
  BOOST_TEST(minor.arch == 86);
  BOOST_TEST(minor.clamped);
  BOOST_TEST(!minor.use_ptx);
  auto newer = choose_arch(130, supported); // newer major: only PTX can run there
  BOOST_TEST(newer.arch == 120);
  BOOST_TEST(newer.clamped);
  BOOST_TEST(newer.use_ptx);
  try {
    choose_arch(61, supported, "nvrtc 13.0");
    BOOST_FAIL("expected config_error");
  } catch (const config_error &e) {
    CHECK_CONTAINS(e.what(), "sm_61");
    CHECK_CONTAINS(e.what(), "nvrtc 13.0 supports (sm_75)");
  }
}

BOOST_AUTO_TEST_CASE(options_are_normalised) {
  std::vector<std::string> in{
      " -DX=1 ",           "-D",     "Y", "--define-macro=Z", "-I/a", "-I", "/b",
      "--include-path=/c", "--keep", "",  "-use_fast_math"};
  std::vector<std::string> want{"-DX=1", "-DY", "-DZ", "-I/a", "-I/b", "-I/c", "-use_fast_math"};
  BOOST_TEST(normalized_options(in) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(every_ingredient_of_the_request_changes_its_key) {
  auto c = make_compiler();
  compile_request base = base_request();
  base.include_dirs = {"/inc"};
  base.options = {"-DA=1"};
  base.name_expressions = {"k"};
  const std::string k0 = key_of(c, base);
  BOOST_TEST(k0.size() == 64u);
  BOOST_TEST(key_of(c, base) == k0); // deterministic

  auto changed = [&](const std::function<void(compile_request &)> &edit) {
    compile_request r = base;
    edit(r);
    return key_of(c, r) != k0;
  };
  BOOST_TEST(changed([](auto &r) { r.source += " "; }));
  BOOST_TEST(changed([](auto &r) { r.arch = "sm_89"; }));
  BOOST_TEST(changed([](auto &r) { r.code = "sm_90"; }));
  BOOST_TEST(changed([](auto &r) { r.target = image_format::ptx; }));
  BOOST_TEST(changed([](auto &r) { r.relocatable = true; }));
  BOOST_TEST(changed([](auto &r) { r.debug = true; }));
  BOOST_TEST(changed([](auto &r) { r.program = "/opt/nvcc"; }));
  BOOST_TEST(changed([](auto &r) { r.options = {"-DA=2"}; }));
  BOOST_TEST(changed([](auto &r) { r.options.push_back("-use_fast_math"); }));
  BOOST_TEST(changed([](auto &r) { r.options.push_back("-I/other"); }));
  BOOST_TEST(changed([](auto &r) { r.include_dirs = {"/moved"}; })); // decides what is read
  BOOST_TEST(changed([](auto &r) { r.source_name = "other.cu"; }));
  BOOST_TEST(changed([](auto &r) { r.name_expressions = {"k", "j"}; }));
  BOOST_TEST(changed([](auto &r) { r.name_expressions.clear(); }));
  BOOST_TEST(key_of(make_compiler("counting", "1.1"), base) != k0); // backend version
  BOOST_TEST(key_of(make_compiler("other", "1.0"), base) != k0);    // backend name

  // And what cannot change the output does not: how a macro is spelled, keeping intermediates,
  // the hook that stops a compile.
  compile_request r = base;
  r.options = {"-D", "A=1", "--keep"};
  r.cancelled = [] { return false; };
  BOOST_TEST(key_of(c, r) == k0);
}

BOOST_AUTO_TEST_CASE(what_the_compile_read_is_in_the_image_key) {
  test_support::temp_dir dir;
  auto h = write_old(dir, "h.h", "#define V 1\n");
  auto c = make_compiler();
  c->inputs.files = {h.string()};
  auto policy = in(dir);
  cache_request r(c, base_request());
  auto a = compile_cache::instance().compile(r, policy);
  BOOST_TEST(a.not_cached.empty(), a.not_cached);
  BOOST_TEST(a.key.size() == 64u);
  BOOST_TEST(a.key != compile_cache_key(r)); // the request key names the entry
  BOOST_TEST(fs::exists(entries_dir(policy) / (compile_cache_key(r) + ".bin")));
  write_old(dir, "h.h", "#define V 2\n");
  auto b = compile_cache::instance().compile(r, policy);
  BOOST_TEST(b.hit == cache_hit::none);
  BOOST_TEST(b.key != a.key);
  BOOST_TEST(contains(b.image->data, "V 2"));
}

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

BOOST_AUTO_TEST_CASE(hostile_entries_are_misses_without_waiting_or_reading_them) {
  test_support::temp_dir dir;
  auto c = make_compiler();
  auto policy = in(dir);
  policy.memory = false;
  cache_request r(c, base_request());
  auto first = compile_cache::instance().compile(r, policy);
  const fs::path entry = entries_dir(policy) / (compile_cache_key(r) + ".bin");
  const std::string good = test_support::read_file(entry.string());

  auto timed_miss = [&](const char *what) {
    int before = c->calls;
    auto job = std::async(std::launch::async,
                          [&] { return compile_cache::instance().compile(r, policy); });
    if (job.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      // Let a reader stuck on the FIFO go (a writer opening it ends its wait), then fail.
      int fd = ::open(entry.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0)
        ::close(fd);
      job.wait();
      BOOST_FAIL(what << ": the lookup waited on the entry");
    }
    auto res = job.get();
    BOOST_TEST(res.hit == cache_hit::none, what);
    BOOST_TEST(c->calls == before + 1, what);
    BOOST_TEST(test_support::read_file(entry.string()) == good, what); // rewritten
  };
  // A FIFO under the entry's name: opening it for reading would wait for a writer forever.
  fs::remove(entry);
  BOOST_REQUIRE(::mkfifo(entry.c_str(), 0600) == 0);
  timed_miss("fifo");
  // A huge sparse file: its size is not believed (no allocation of it, no reading it).
  fs::remove(entry);
  {
    int fd = ::open(entry.c_str(), O_WRONLY | O_CREAT, 0600);
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(::ftruncate(fd, off_t(1) << 40) == 0); // 1 TiB of nothing
    ::close(fd);
  }
  auto start = std::chrono::steady_clock::now();
  timed_miss("sparse 1 TiB");
  BOOST_TEST((std::chrono::steady_clock::now() - start < std::chrono::seconds(5)));
  // Garbage below the cap is rejected by its header, before the rest is read.
  {
    int fd = ::open(entry.c_str(), O_WRONLY | O_TRUNC, 0600);
    BOOST_REQUIRE(::ftruncate(fd, off_t(200) << 20) == 0);
    ::close(fd);
  }
  timed_miss("200 MiB of zeros");
}

// The decoder sees whatever is on disk: random bytes, truncations, flips, and entries whose
// checksum is right but whose lengths and counts lie. Always a miss, never a crash or a huge
// allocation (the test runs with no memory limit, so a lie believed would show as bad_alloc).
BOOST_AUTO_TEST_CASE(the_entry_decoder_survives_random_and_damaged_input) {
  compiled_image img;
  img.format = image_format::cubin;
  img.data = std::string("\x7f"
                         "ELF",
                         4) +
             std::string(300, 'x');
  img.log = "log";
  img.command = "cmd";
  img.lowered_names = {{"f<int>", "_Z1fIiEvv"}};
  const std::string key(64, 'b');
  const std::string good = encode_cache_entry(key, img);
  compiled_image out;
  BOOST_REQUIRE(decode_cache_entry(good, key, out));

  std::mt19937_64 rng(12345);
  auto random_bytes = [&](std::size_t n) {
    std::string s(n, '\0');
    for (auto &ch : s)
      ch = static_cast<char>(rng());
    return s;
  };
  for (int i = 0; i < 2000; ++i) {
    BOOST_TEST(!decode_cache_entry(random_bytes(rng() % 512), key, out));
    std::string cut = good.substr(0, rng() % good.size());
    BOOST_TEST(!decode_cache_entry(cut, key, out));
    std::string flipped = good;
    flipped[rng() % flipped.size()] ^= static_cast<char>(1 + rng() % 255);
    BOOST_TEST(!decode_cache_entry(flipped, key, out));
  }
  // Lying lengths behind a valid checksum: the payload's first string claims 2^62 bytes, a count
  // claims 4 billion items.
  auto reseal = [&](std::string bytes) {
    bytes.resize(bytes.size() - 32);
    std::string digest = sha256_hex(bytes);
    for (std::size_t i = 0; i < 64; i += 2)
      bytes.push_back(static_cast<char>(std::stoi(digest.substr(i, 2), nullptr, 16)));
    return bytes;
  };
  BOOST_TEST(decode_cache_entry(reseal(good), key, out)); // resealing alone keeps it valid
  const std::size_t data_len_at = 8 + 4 + 4 + 64 + 8 + 64;
  std::string long_string = good;
  for (int b = 0; b < 8; ++b)
    long_string[data_len_at + b] = b == 7 ? 0x40 : 0;
  BOOST_TEST(!decode_cache_entry(reseal(long_string), key, out));
  std::string many = good;
  const std::size_t names_at = data_len_at + 8 + img.data.size() + 8 + 3 + 8 + 3;
  for (int b = 0; b < 4; ++b)
    many[names_at + b] = static_cast<char>(0xff);
  BOOST_TEST(!decode_cache_entry(reseal(many), key, out));
}

BOOST_AUTO_TEST_SUITE_END()
