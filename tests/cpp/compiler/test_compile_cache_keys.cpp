// Tests of the compile cache's keys and entries: hashing, arch spellings, key completeness, what a
// compile read in the image key, hostile entries on disk and the entry decoder under damage.
#define BOOST_TEST_MODULE compile_cache_keys
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
    (void)choose_arch(61, supported, "nvrtc 13.0");
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
