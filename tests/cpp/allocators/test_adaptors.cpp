// The plugins' options and the adaptors (limiting, logging, pool) composed through the registry.
#include <cuplug/allocator.hpp>
#include <cuplug/config.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/registry.hpp>

#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using cuplug::allocator;
using cuplug::config;
using cuplug::plugin_kind;
using cuplug::plugin_ptr;

plugin_ptr<allocator> make(const std::string &name, std::map<std::string, std::string> opts) {
  return cuplug::registry::instance().create<allocator>(plugin_kind::allocator, name,
                                                        cuplug::options(std::move(opts)));
}

std::string error_of(const std::string &name, std::map<std::string, std::string> opts) {
  try {
    make(name, std::move(opts));
  } catch (const cuplug::config_error &e) {
    return e.what();
  }
  return "(no config_error)";
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// Sets plugin options as cuplug.use()/a config file would, and clears them again.
struct configured {
  std::vector<std::string> names;
  configured(std::map<std::string, std::map<std::string, std::string>> per_plugin) {
    for (auto &[name, values] : per_plugin) {
      config::instance().set_explicit_options(plugin_kind::allocator, name, values);
      names.push_back(name);
    }
  }
  ~configured() {
    for (const auto &name : names)
      config::instance().set_explicit_options(plugin_kind::allocator, name, {});
  }
};

// Runs `body` with stderr going into a pipe and returns what it wrote (kept short: a pipe holds
// 64 KiB).
std::string captured_stderr(const std::function<void()> &body) {
  std::fflush(stderr);
  int fds[2];
  BOOST_TEST_REQUIRE(pipe(fds) == 0);
  const int saved = dup(STDERR_FILENO);
  dup2(fds[1], STDERR_FILENO);
  close(fds[1]);
  struct restore {
    int saved;
    ~restore() {
      std::fflush(stderr);
      dup2(saved, STDERR_FILENO);
      close(saved);
    }
  };
  {
    restore guard{saved};
    body();
  }
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  return text;
}

// While it lives, files this process writes may not grow past `bytes` (a full disk, for one
// file): writes beyond fail with EFBIG instead of raising SIGXFSZ.
class file_size_limit {
public:
  explicit file_size_limit(rlim_t bytes) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGXFSZ, &ignore, &old_action_);
    getrlimit(RLIMIT_FSIZE, &old_limit_);
    rlimit small = old_limit_;
    small.rlim_cur = bytes;
    BOOST_TEST_REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  }
  ~file_size_limit() {
    setrlimit(RLIMIT_FSIZE, &old_limit_);
    sigaction(SIGXFSZ, &old_action_, nullptr);
  }

private:
  struct sigaction old_action_ {};
  rlimit old_limit_{};
};

// Logs `pairs` allocate/deallocate pairs while the log may not grow past 2000 bytes, then two
// events more with room again, and checks that every event is either in the log or counted and
// marked missing. Returns the last missing event.
std::uint64_t check_lost_events_are_reported(const std::map<std::string, std::string> &extra,
                                             int pairs) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("cuplug_logging_full_" + std::to_string(getpid()) + ".log"))
                               .string();
  std::map<std::string, std::string> opts{{"upstream", "host"}, {"path", path}};
  opts.insert(extra.begin(), extra.end());
  const std::string warnings = captured_stderr([&] {
    auto a = make("logging", opts);
    {
      file_size_limit full(2000);
      for (int i = 0; i < pairs; ++i)
        a->deallocate(a->allocate(64), 64);
    }
    a->deallocate(a->allocate(64), 64); // the log notes the gap before these
  });
  const std::uint64_t total = 2 * static_cast<std::uint64_t>(pairs) + 2;

  std::ifstream in(path);
  std::vector<std::string> marks;
  std::vector<std::uint64_t> written;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# ", 0) == 0 && contains(line, "events missing here")) {
      marks.push_back(line);
      continue;
    }
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;)
      f.push_back(w);
    if (f.size() == 7) // a line the failure cut short has fewer fields, or its seq is missing
      written.push_back(std::stoull(f[0]));
  }
  std::filesystem::remove(path);
  BOOST_TEST_REQUIRE(marks.size() == 1u);
  unsigned long long missing = 0, first = 0, last = 0;
  BOOST_TEST_REQUIRE(std::sscanf(marks[0].c_str(), "# %llu events missing here (%llu to %llu)",
                                 &missing, &first, &last) == 3);
  BOOST_TEST(contains(marks[0], "writing them failed: File too large"));
  BOOST_TEST(missing == last - first + 1);
  BOOST_TEST(first > 1u);
  std::set<std::uint64_t> seen;
  for (std::uint64_t seq : written)
    if (seq < first || seq > last)
      BOOST_TEST(seen.insert(seq).second); // each event once
  BOOST_TEST(seen.size() + missing == total);
  BOOST_TEST((seen.empty() || *seen.rbegin() == total));

  BOOST_TEST(contains(warnings, "writing event " + std::to_string(first) + " to the log '" + path +
                                    "' failed: File too large"));
  BOOST_TEST(warnings.find("writing event") == warnings.rfind("writing event")); // warned once
  BOOST_TEST(contains(warnings, std::to_string(missing) + " of " + std::to_string(total) +
                                    " events could not be written"));
  return last;
}

} // namespace

BOOST_AUTO_TEST_SUITE(adaptors)

BOOST_AUTO_TEST_CASE(limiting_caps_the_bytes_in_use) {
  auto a = make("limiting", {{"upstream", "host"}, {"limit", "1MiB"}});
  const std::uintptr_t p = a->allocate(1 << 20);
  try {
    (void)a->allocate(1);
    BOOST_ERROR("went beyond the limit");
  } catch (const cuplug::out_of_memory &e) {
    BOOST_TEST(contains(e.what(), "limiting_allocator::allocate failed: out of memory"), e.what());
    BOOST_TEST(contains(e.what(), "requested 1 bytes; in use 1048576"), e.what());
    BOOST_TEST(contains(e.what(), "limit 1048576"), e.what());
  }
  a->deallocate(p, 1 << 20);
  const std::uintptr_t q = a->allocate(1 << 19);
  const std::uintptr_t r = a->allocate(1 << 19);
  a->deallocate(q, 1 << 19);
  a->deallocate(r, 1 << 19);
  BOOST_TEST(a->stats().failures == 1u);
  BOOST_TEST(std::string(to_string(a->kind())) == "host");
}

BOOST_AUTO_TEST_CASE(limiting_needs_a_valid_limit) {
  BOOST_TEST(contains(error_of("limiting", {{"upstream", "host"}}), "option 'limit' is required"));
  BOOST_TEST(contains(error_of("limiting", {{"upstream", "host"}, {"limit", "lots"}}), "'lots'"));
}

BOOST_AUTO_TEST_CASE(a_pool_over_a_limit_releases_held_blocks_to_fit) {
  configured c({{"limiting", {{"upstream", "host"}, {"limit", "4MiB"}}}});
  auto pool = make("pool", {{"upstream", "limiting"}});
  const std::uintptr_t p = pool->allocate(3 << 20);
  pool->deallocate(p, 3 << 20);
  BOOST_TEST(pool->stats().bytes_held == (3u << 20));
  // 3 MiB held + 2 MiB new > 4 MiB: the pool must give its held block back first.
  const std::uintptr_t q = pool->allocate(2 << 20);
  BOOST_TEST(q != 0u);
  BOOST_TEST(pool->stats().bytes_held == 0u);
  try {
    (void)pool->allocate(3 << 20); // 2 + 3 > 4 with nothing left to release
    BOOST_ERROR("went beyond the limit");
  } catch (const cuplug::out_of_memory &e) {
    BOOST_TEST(contains(e.what(), "memory_pool::allocate failed: out of memory"), e.what());
    BOOST_TEST(contains(e.what(), "limit 4194304"), e.what()); // from the upstream's message
  }
  pool->deallocate(q, 2 << 20);
  BOOST_TEST(pool->free_held() == (2u << 20));
}

BOOST_AUTO_TEST_CASE(a_cycle_of_upstreams_is_a_config_error) {
  configured c({{"pool", {{"upstream", "limiting"}}},
                {"limiting", {{"upstream", "pool"}, {"limit", "1GiB"}}}});
  const std::string msg = error_of("pool", {{"upstream", "limiting"}});
  BOOST_TEST(contains(msg, "cycle"), msg);
}

BOOST_AUTO_TEST_CASE(bad_pool_options_name_the_problem) {
  const std::string unknown = error_of("pool", {{"upstream", "host"}, {"upsteam", "x"}});
  BOOST_TEST(contains(unknown, "unknown option 'upsteam'"), unknown);
  BOOST_TEST(contains(unknown, "upstream"), unknown);
  const std::string missing = error_of("pool", {{"upstream", "nosuch"}});
  BOOST_TEST(contains(missing, "upstream 'nosuch'"), missing);
  BOOST_TEST(contains(missing, "host"), missing); // lists what is available
}

BOOST_AUTO_TEST_CASE(the_pool_plugin_takes_its_upstream_kind) {
  auto pool = make("pool", {{"upstream", "host"}, {"trace", "false"}});
  BOOST_TEST(std::string(to_string(pool->kind())) == "host");
  BOOST_TEST(pool->can_free_held());
}

BOOST_AUTO_TEST_CASE(logging_writes_one_replayable_line_per_event) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("cuplug_logging_" + std::to_string(getpid()) + ".log"))
                               .string();
  {
    auto a = make("logging", {{"upstream", "host"}, {"path", path}});
    const auto stream = reinterpret_cast<CUstream>(0x5);
    const std::uintptr_t p = a->allocate(100, stream);
    a->deallocate(p, 100, stream);
    BOOST_CHECK_THROW((void)a->allocate(std::size_t{1} << 62), cuplug::out_of_memory);
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    BOOST_TEST_REQUIRE(lines.size() == 4u);
    BOOST_TEST(lines[0].rfind("# cuplug allocator log v1", 0) == 0u);
    std::ostringstream ptr;
    ptr << "0x" << std::hex << p;
    auto fields = [](const std::string &l) {
      std::istringstream s(l);
      std::vector<std::string> f;
      for (std::string w; s >> w;)
        f.push_back(w);
      return f;
    };
    auto f1 = fields(lines[1]), f2 = fields(lines[2]), f3 = fields(lines[3]);
    BOOST_TEST_REQUIRE(f1.size() == 7u);
    BOOST_TEST(f1[0] == "1");
    BOOST_TEST(f1[3] == "allocate");
    BOOST_TEST(f1[4] == ptr.str());
    BOOST_TEST(f1[5] == "100");
    BOOST_TEST(f1[6] == "0x5");
    BOOST_TEST(f2[0] == "2");
    BOOST_TEST(f2[3] == "deallocate");
    BOOST_TEST(f2[4] == ptr.str());
    BOOST_TEST(f3[3] == "allocate_failed");
    BOOST_TEST(f3[5] == std::to_string(std::size_t{1} << 62));
    BOOST_TEST(std::stoll(f2[1]) >= std::stoll(f1[1])); // time goes forward
  }
  std::filesystem::remove(path);
  BOOST_TEST(contains(error_of("logging", {{"upstream", "host"}}), "option 'path' is required"));
  BOOST_TEST(
      contains(error_of("logging", {{"upstream", "host"}, {"path", "/nonexistent/dir/x.log"}}),
               "cannot open the log"));
}

BOOST_AUTO_TEST_CASE(logging_refuses_a_log_it_cannot_write) {
  const std::string error = error_of("logging", {{"upstream", "host"}, {"path", "/dev/full"}});
  BOOST_TEST(contains(error, "cannot write the log '/dev/full': No space left on device"));
}

BOOST_AUTO_TEST_CASE(logging_counts_marks_and_reports_events_it_could_not_write) {
  // Each line is written as it happens: everything from the first failure until there is room
  // again is missing.
  BOOST_TEST(check_lost_events_are_reported({}, 100) == 200u);
  // Batches of 256 lines: the lines of a batch that reached the file before the failure count
  // as written, the rest of it and the next failed batch as missing; the batch that was still
  // in memory when room came back is written (at destruction).
  BOOST_TEST(check_lost_events_are_reported({{"flush", "false"}}, 300) == 512u);
}

BOOST_AUTO_TEST_CASE(host_options_are_checked) {
  auto a = make("host", {{"alignment", "4096"}});
  const std::uintptr_t p = a->allocate(10);
  BOOST_TEST(p % 4096 == 0u);
  a->deallocate(p, 10);
  BOOST_TEST(contains(error_of("host", {{"alignment", "3"}}), "power of two"));
}

BOOST_AUTO_TEST_CASE(gpu_plugin_options_are_checked_without_a_gpu) {
  BOOST_TEST(contains(error_of("managed", {{"attach", "device"}}), "'global'"));
  BOOST_TEST(contains(error_of("async", {{"pool", "mine"}}), "'own'"));
  BOOST_TEST(contains(error_of("async", {{"release_threshold", "some"}}), "'some'"));
  BOOST_TEST(contains(error_of("pinned", {{"flags", "64"}}), "CU_MEMHOSTALLOC_PORTABLE"));
}

BOOST_AUTO_TEST_SUITE_END()
