// Tests core/src/backends.cpp: objects follow the selection, are cached and shared, and reset.
#define BOOST_TEST_MODULE backends
#include <boost/test/included/unit_test.hpp>

#include "test_support.hpp"

#include <cuplug/backends.hpp>
#include <cuplug/config.hpp>
#include <cuplug/errors.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

using namespace cuplug;

namespace {

std::atomic<int> made{0};

// An in-process allocator that remembers its option "tag".
class tagged_allocator : public allocator {
public:
  explicit tagged_allocator(const options &o) : tag(o.get_string("tag", "")) { ++made; }
  const std::string tag;

private:
  device_ptr do_allocate(std::size_t, CUstream) override { return 0x100; }
  void do_deallocate(device_ptr, std::size_t, CUstream) override {}
  memory_kind do_kind() const override { return memory_kind::host; }
};

class fixed_rng : public rng {
public:
  explicit fixed_rng(const options &) {}

private:
  void do_seed(std::uint64_t) override {}
  void do_set_offset(std::uint64_t) override {}
  std::uint64_t do_offset() const override { return 0; }
  bool do_supports(rng_distribution, rng_dtype) const override { return false; }
  void do_generate(rng_distribution, rng_dtype, CUdeviceptr, std::size_t, const rng_params &,
                   CUstream) override {}
};

struct builtins {
  builtins() {
    for (const char *name : {"alloc_a", "alloc_b"})
      registry::instance().add_builtin(plugin_kind::allocator, name, "test allocator",
                                       [](const options &o) { return new tagged_allocator(o); });
    registry::instance().add_builtin(plugin_kind::rng, "fixed", "test rng",
                                     [](const options &o) { return new fixed_rng(o); });
  }
};

// Each test starts from no explicit choice, no env and no options, and ends the same way.
struct clean {
  clean() { reset(); }
  ~clean() { reset(); }
  static void reset() {
    config::instance().set_explicit(plugin_kind::allocator, std::nullopt);
    config::instance().set_explicit_options(plugin_kind::allocator, "alloc_a", {});
    ::unsetenv("CUPLUG_ALLOCATOR");
    reset_backends();
  }
};

void use(const char *name) {
  config::instance().set_explicit(plugin_kind::allocator, std::string(name));
}

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(builtins);
BOOST_FIXTURE_TEST_SUITE(backend_tests, clean)

BOOST_AUTO_TEST_CASE(follows_the_selection_and_reuses_objects) {
  use("alloc_a");
  const int before = made;
  plugin_ptr<allocator> a = current_allocator();
  BOOST_TEST(a->backend_name() == "alloc_a");
  BOOST_TEST(current_allocator() == a);
  BOOST_TEST(current_allocator() == a);
  BOOST_TEST(made == before + 1); // made once

  use("alloc_b");
  plugin_ptr<allocator> b = current_allocator();
  BOOST_TEST(b->backend_name() == "alloc_b");
  BOOST_TEST(b != a);
  use("alloc_a");
  BOOST_TEST(current_allocator() ==
             a); // switching back gives the same object (a pool keeps its memory)
  BOOST_TEST(made == before + 2);
  BOOST_TEST(backend(plugin_kind::allocator, "alloc_a") == a);
}

BOOST_AUTO_TEST_CASE(new_options_make_a_new_object) {
  use("alloc_a");
  auto first = std::static_pointer_cast<tagged_allocator>(current_allocator());
  BOOST_TEST(first->tag == "");
  config::instance().set_explicit_options(plugin_kind::allocator, "alloc_a", {{"tag", "x"}});
  auto second = std::static_pointer_cast<tagged_allocator>(current_allocator());
  BOOST_TEST(second != first);
  BOOST_TEST(second->tag == "x");
}

BOOST_AUTO_TEST_CASE(environment_is_read_once_per_generation) {
  ::setenv("CUPLUG_ALLOCATOR", "alloc_b", 1);
  BOOST_TEST(current_allocator()->backend_name() == "alloc_b");
  // Changed behind config's back: the cached answer stands until the next change or reset.
  ::setenv("CUPLUG_ALLOCATOR", "alloc_a", 1);
  BOOST_TEST(current_allocator()->backend_name() == "alloc_b");
  reset_backends();
  BOOST_TEST(current_allocator()->backend_name() == "alloc_a");
  ::setenv("CUPLUG_ALLOCATOR", "alloc_b", 1);
  config::instance().set_explicit_options(plugin_kind::allocator, "alloc_b", {{"tag", "y"}});
  BOOST_TEST(current_allocator()->backend_name() == "alloc_b");
  config::instance().set_explicit_options(plugin_kind::allocator, "alloc_b", {});
}

BOOST_AUTO_TEST_CASE(an_unavailable_selection_says_where_it_came_from) {
  use("no_such_allocator");
  try {
    current_allocator();
    BOOST_ERROR("no error for an unknown allocator");
  } catch (const config_error &e) {
    const std::string msg = e.what();
    BOOST_TEST(msg.find("unknown allocator 'no_such_allocator'; available: ") != std::string::npos,
               msg);
    BOOST_TEST(msg.find("alloc_a, alloc_b") != std::string::npos, msg);
    BOOST_TEST(msg.find("(selected by cuplug.use())") != std::string::npos, msg);
  }
  ::setenv("CUPLUG_ALLOCATOR", "also_missing", 1);
  config::instance().set_explicit(plugin_kind::allocator, std::nullopt);
  try {
    current_allocator();
    BOOST_ERROR("no error for an unknown allocator");
  } catch (const config_error &e) {
    BOOST_TEST(std::string(e.what()).find("(selected by CUPLUG_ALLOCATOR)") != std::string::npos);
  }
  // The failure is not cached: a good selection works at once.
  use("alloc_a");
  BOOST_TEST(current_allocator()->backend_name() == "alloc_a");
}

BOOST_AUTO_TEST_CASE(reset_drops_cached_objects_but_not_their_holders) {
  use("alloc_a");
  plugin_ptr<allocator> held = current_allocator();
  reset_backends();
  plugin_ptr<allocator> fresh = current_allocator();
  BOOST_TEST(fresh != held);
  BOOST_TEST(held->backend_name() == "alloc_a"); // still usable
  held->deallocate(held->allocate(8), 8);
}

BOOST_AUTO_TEST_CASE(reregistering_a_builtin_drops_its_cached_object) {
  use("alloc_b");
  plugin_ptr<allocator> old = current_allocator();
  registry::instance().add_builtin(plugin_kind::allocator, "alloc_b", "test allocator",
                                   [](const options &o) { return new tagged_allocator(o); });
  BOOST_TEST(current_allocator() != old);
}

BOOST_AUTO_TEST_CASE(threads_share_one_object) {
  use("alloc_a");
  plugin_ptr<allocator> mine = current_allocator();
  std::vector<plugin_ptr<allocator>> seen(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i)
    threads.emplace_back([&seen, i] {
      for (int n = 0; n < 1000; ++n)
        seen[i] = current_allocator();
    });
  for (auto &t : threads)
    t.join();
  for (const auto &p : seen)
    BOOST_TEST(p == mine);
}

BOOST_AUTO_TEST_CASE(other_kinds_are_independent) {
  config::instance().set_explicit(plugin_kind::rng, std::string("fixed"));
  use("alloc_a");
  plugin_ptr<rng> r = current_rng();
  BOOST_TEST(r->backend_name() == "fixed");
  use("alloc_b");
  BOOST_TEST(current_rng() == r); // a change elsewhere does not remake it
  config::instance().set_explicit(plugin_kind::rng, std::nullopt);
}

BOOST_AUTO_TEST_CASE(the_repeated_call_is_cheap) {
  use("alloc_a");
  current_allocator();
  constexpr int calls = 1000000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i)
    current_allocator();
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
      calls;
  BOOST_TEST_MESSAGE("current_allocator(): " << ns << " ns per call");
  // The cached path is a few ns; the slow one (two locks, getenv, map lookups, an options copy)
  // is most of a microsecond. The bound leaves room for a loaded CI machine.
  BOOST_TEST(ns < 250.0);
}

BOOST_AUTO_TEST_SUITE_END()
