// Tests object creation and bookkeeping in core/src/registry.cpp: the table, create(),
// create_adaptor() and the generation that tells caches a name changed its plugin.
#define BOOST_TEST_MODULE registry
#include <boost/test/included/unit_test.hpp>

#include "test_support.hpp"

#include <cuplug/allocator.hpp>
#include <cuplug/compiler.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/interop.hpp>
#include <cuplug/launcher.hpp>
#include <cuplug/pool/make_upstream.hpp>
#include <cuplug/rng.hpp>

#include <dlfcn.h>

#include <atomic>
#include <thread>

using namespace cuplug;
using test_support::fake_plugin;
using test_support::opts;
namespace fs = std::filesystem;

namespace {

registry &reg() { return registry::instance(); }

// Loads the fake plugins these tests create objects from (once; loading is idempotent).
struct load_fakes {
  load_fakes() {
    for (const char *f : {"good_allocator", "good_compiler", "good_launcher", "good_rng",
                          "good_interop", "throwing_factory", "wrong_kind", "bad_abi_major"})
      reg().load(fake_plugin(f));
  }
};

// How many objects the good allocator plugin has alive, asked of the plugin itself.
int live_in_allocator_plugin() {
  void *lib = ::dlopen(fake_plugin("good_allocator").c_str(), RTLD_NOW | RTLD_NOLOAD);
  BOOST_REQUIRE(lib != nullptr);
  auto live = reinterpret_cast<int (*)()>(::dlsym(lib, "fake_live_objects"));
  BOOST_REQUIRE(live != nullptr);
  const int n = live();
  ::dlclose(lib); // drops only the reference RTLD_NOLOAD took
  return n;
}

template <class E> std::string message_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const E &e) {
    return e.what();
  } catch (const std::exception &e) {
    BOOST_ERROR("wrong exception type: " << e.what());
    return {};
  }
  BOOST_ERROR("nothing thrown");
  return {};
}

// An in-process allocator for add_builtin, counting its instances.
std::atomic<int> builtin_live{0};
class builtin_allocator : public allocator {
public:
  explicit builtin_allocator(const options &o) : size_(o.get_int("size", 0)) { ++builtin_live; }
  ~builtin_allocator() override { --builtin_live; }

private:
  device_ptr do_allocate(std::size_t, CUstream) override { return 0x1000; }
  void do_deallocate(device_ptr, std::size_t, CUstream) override {}
  memory_kind do_kind() const override { return memory_kind::host; }
  long long size_;
};

class not_an_allocator : public plugin_object {};

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(load_fakes);

BOOST_AUTO_TEST_CASE(creates_an_object_of_every_kind) {
  auto a = reg().create<allocator>(plugin_kind::allocator, "fake_alloc", options());
  auto c = reg().create<compiler>(plugin_kind::compiler, "fake_compiler", options());
  auto l = reg().create<launcher>(plugin_kind::launcher, "fake_launcher", options());
  auto r = reg().create<rng>(plugin_kind::rng, "fake_rng", options());
  auto i = reg().create<interop>(plugin_kind::interop, "fake_interop", options());
  BOOST_TEST(a->backend_name() == "fake_alloc");
  BOOST_TEST(c->backend_name() == "fake_compiler");
  BOOST_TEST(l->backend_name() == "fake_launcher");
  BOOST_TEST(r->backend_name() == "fake_rng");
  BOOST_TEST(i->backend_name() == "fake_interop");
  // The objects work across the library boundary.
  BOOST_TEST(a->kind() == memory_kind::host);
  const device_ptr p = a->allocate(64);
  BOOST_TEST(p != 0u);
  BOOST_TEST(a->stats().bytes_in_use == 64u);
  a->deallocate(p, 64);
  BOOST_TEST(c->version() == "echo 1");
  compile_request req;
  req.source = "__global__ void k() {}";
  BOOST_TEST(c->compile(req).data == req.source);
  r->set_offset(7);
  BOOST_TEST(r->offset() == 7u);
}

BOOST_AUTO_TEST_CASE(destroys_objects_inside_their_plugin) {
  const int before = live_in_allocator_plugin();
  {
    auto a = reg().create(plugin_kind::allocator, "fake_alloc", options());
    BOOST_TEST(live_in_allocator_plugin() == before + 1);
  }
  BOOST_TEST(live_in_allocator_plugin() == before);
}

BOOST_AUTO_TEST_CASE(passes_options_and_rejects_unknown_ones) {
  auto a = reg().create<allocator>(plugin_kind::allocator, "fake_alloc",
                                   opts({{"capacity", "1KiB"}, {"label", "x"}}));
  BOOST_CHECK_THROW((void)a->allocate(2048), out_of_memory);

  const int before = live_in_allocator_plugin();
  const std::string msg = message_of<config_error>([] {
    reg().create(plugin_kind::allocator, "fake_alloc",
                 opts({{"capacity", "1"}, {"colour", "red"}}));
  });
  BOOST_TEST(msg ==
             "unknown option 'colour' for allocator 'fake_alloc'; it accepts: capacity, label");
  BOOST_TEST(live_in_allocator_plugin() == before); // destroyed before the error

  const std::string two = message_of<config_error>([] {
    reg().create(plugin_kind::allocator, "fake_alloc", opts({{"a", "1"}, {"b", "2"}}));
  });
  CHECK_CONTAINS(two, "unknown options 'a', 'b' for allocator 'fake_alloc'");

  const std::string none = message_of<config_error>([] {
    reg().create(plugin_kind::compiler, "fake_compiler", opts({{"x", "1"}}));
  });
  CHECK_CONTAINS(none, "it accepts no options");
}

BOOST_AUTO_TEST_CASE(bad_option_values_name_the_plugin) {
  const std::string msg = message_of<config_error>([] {
    reg().create(plugin_kind::allocator, "fake_alloc", opts({{"capacity", "lots"}}));
  });
  CHECK_CONTAINS(msg, "plugin 'fake_alloc' (" + fake_plugin("good_allocator") + ")");
  CHECK_CONTAINS(msg, "capacity");
  CHECK_CONTAINS(msg, "lots");
}

BOOST_AUTO_TEST_CASE(unknown_names_list_what_is_available) {
  const std::string msg =
      message_of<config_error>([] { reg().create(plugin_kind::rng, "no_such_rng", options()); });
  CHECK_CONTAINS(msg, "unknown rng 'no_such_rng'; available: ");
  CHECK_CONTAINS(msg, "fake_rng");
  BOOST_CHECK_THROW(reg().info(plugin_kind::rng, "no_such_rng"), config_error);
}

BOOST_AUTO_TEST_CASE(unknown_names_say_why_a_plugin_of_that_name_was_refused) {
  const std::string msg = message_of<config_error>(
      [] { reg().create(plugin_kind::allocator, "fake_abi2", options()); });
  CHECK_CONTAINS(msg, "unknown allocator 'fake_abi2'");
  CHECK_CONTAINS(msg, fake_plugin("bad_abi_major") + " provides it but was not loaded");
  CHECK_CONTAINS(msg, "was built for plugin ABI");
}

BOOST_AUTO_TEST_CASE(a_throwing_factory_becomes_plugin_error) {
  const std::string msg = message_of<plugin_error>(
      [] { reg().create(plugin_kind::allocator, "fake_throwing", options()); });
  BOOST_TEST(msg == "plugin 'fake_throwing' (" + fake_plugin("throwing_factory") +
                        ") failed to create its allocator: no fake device in this machine");
  // The process and the registry stay usable.
  BOOST_TEST(reg().create(plugin_kind::allocator, "fake_alloc", options()) != nullptr);
}

BOOST_AUTO_TEST_CASE(an_object_of_the_wrong_kind_is_refused) {
  const std::string msg = message_of<plugin_error>(
      [] { reg().create(plugin_kind::compiler, "fake_wrong_kind", options()); });
  CHECK_CONTAINS(msg, "plugin 'fake_wrong_kind' (" + fake_plugin("wrong_kind") + ")");
  CHECK_CONTAINS(msg, "host_allocator");
  CHECK_CONTAINS(msg, "is not a cuplug::compiler");
}

BOOST_AUTO_TEST_CASE(lists_names_sorted_and_reports_kinds) {
  const auto allocators = reg().names(plugin_kind::allocator);
  BOOST_TEST(std::is_sorted(allocators.begin(), allocators.end()));
  BOOST_TEST(std::count(allocators.begin(), allocators.end(), "fake_alloc") == 1);
  for (const auto &info : reg().available(plugin_kind::launcher))
    BOOST_TEST(info.kind == plugin_kind::launcher);
  std::size_t total = 0;
  for (plugin_kind k : {plugin_kind::allocator, plugin_kind::compiler, plugin_kind::launcher,
                        plugin_kind::rng, plugin_kind::interop})
    total += reg().available(k).size();
  BOOST_TEST(reg().available().size() == total);
  BOOST_TEST(reg().has(plugin_kind::allocator, "fake_alloc"));
  BOOST_TEST(!reg().has(plugin_kind::compiler, "fake_alloc"));
}

BOOST_AUTO_TEST_CASE(state_names) {
  BOOST_TEST(std::string(to_string(plugin_candidate::state::loaded)) == "loaded");
  BOOST_TEST(std::string(to_string(plugin_candidate::state::rejected)) == "rejected");
  BOOST_TEST(std::string(to_string(plugin_candidate::state::duplicate)) == "duplicate");
}

BOOST_AUTO_TEST_CASE(builtins_are_created_destroyed_and_replaced) {
  reg().add_builtin(plugin_kind::allocator, "test_builtin", "in-process allocator",
                    [](const options &o) { return new builtin_allocator(o); });
  const plugin_info info = reg().info(plugin_kind::allocator, "test_builtin");
  BOOST_TEST(info.source == "builtin");
  BOOST_TEST(info.description == "in-process allocator");
  {
    auto a = reg().create<allocator>(plugin_kind::allocator, "test_builtin", opts({{"size", "3"}}));
    BOOST_TEST(a->backend_name() == "test_builtin");
    BOOST_TEST(builtin_live == 1);
  }
  BOOST_TEST(builtin_live == 0);
  BOOST_CHECK_THROW(reg().create(plugin_kind::allocator, "test_builtin", opts({{"sise", "3"}})),
                    config_error);
  BOOST_TEST(builtin_live == 0);

  // Registering the name again replaces the factory.
  reg().add_builtin(plugin_kind::allocator, "test_builtin", "second",
                    [](const options &) -> plugin_object * { return new not_an_allocator(); });
  BOOST_TEST(reg().info(plugin_kind::allocator, "test_builtin").description == "second");
  const std::string msg = message_of<plugin_error>(
      [] { reg().create(plugin_kind::allocator, "test_builtin", options()); });
  CHECK_CONTAINS(msg, "plugin 'test_builtin' (built-in)");
  CHECK_CONTAINS(msg, "not_an_allocator");

  reg().add_builtin(plugin_kind::allocator, "test_null", "returns nothing",
                    [](const options &) -> plugin_object * { return nullptr; });
  CHECK_CONTAINS(message_of<plugin_error>(
                     [] { reg().create(plugin_kind::allocator, "test_null", options()); }),
                 "returned no object");
}

BOOST_AUTO_TEST_CASE(builtin_names_and_factories_are_checked) {
  auto make = [](const options &o) -> plugin_object * { return new builtin_allocator(o); };
  BOOST_CHECK_THROW(reg().add_builtin(plugin_kind::allocator, "Bad Name", "", make), config_error);
  BOOST_CHECK_THROW(reg().add_builtin(plugin_kind::allocator, "", "", make), config_error);
  BOOST_CHECK_THROW(reg().add_builtin(plugin_kind::allocator, "ok_name", "", nullptr),
                    config_error);
  BOOST_CHECK_THROW(reg().add_builtin(static_cast<plugin_kind>(9), "ok_name", "", make),
                    config_error);
  BOOST_TEST(!reg().has(plugin_kind::allocator, "ok_name"));
}

BOOST_AUTO_TEST_CASE(creation_is_thread_safe) {
  std::atomic<int> made{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        try {
          auto a = reg().create<allocator>(plugin_kind::allocator, "fake_alloc", options());
          a->deallocate(a->allocate(16), 16);
          reg().has(plugin_kind::rng, "fake_rng");
          reg().diagnostics();
          ++made;
        } catch (...) {
          ++failed;
        }
      }
    });
  for (auto &t : threads)
    t.join();
  BOOST_TEST(made == 1600);
  BOOST_TEST(failed == 0);
}

// ---- adaptors: create_adaptor hands an object to pool::make_upstream
// -----------------------------

namespace {

// A leaf and an adaptor that draws from pool::make_upstream, registered as builtins.
class leaf_allocator final : public allocator {
public:
  explicit leaf_allocator(const options &) {}

private:
  device_ptr do_allocate(std::size_t, CUstream) override { return 0x2000; }
  void do_deallocate(device_ptr, std::size_t, CUstream) override {}
  memory_kind do_kind() const override { return memory_kind::host; }
};

class adaptor_allocator final : public allocator {
public:
  explicit adaptor_allocator(const options &o) : upstream(pool::make_upstream(o, "test_adaptor")) {}
  const plugin_ptr<allocator> upstream;

private:
  device_ptr do_allocate(std::size_t n, CUstream s) override { return upstream->allocate(n, s); }
  void do_deallocate(device_ptr p, std::size_t n, CUstream s) override {
    upstream->deallocate(p, n, s);
  }
  memory_kind do_kind() const override { return upstream->kind(); }
};

// Makes another adaptor by name inside its own constructor before asking for its upstream.
class nesting_allocator final : public allocator {
public:
  explicit nesting_allocator(const options &o)
      : inner(reg().create<adaptor_allocator>(plugin_kind::allocator, "test_adaptor",
                                              opts({{"upstream", "test_leaf"}}))),
        upstream(pool::make_upstream(o, "test_nesting")) {}
  const plugin_ptr<adaptor_allocator> inner;
  const plugin_ptr<allocator> upstream;

private:
  device_ptr do_allocate(std::size_t n, CUstream s) override { return upstream->allocate(n, s); }
  void do_deallocate(device_ptr p, std::size_t n, CUstream s) override {
    upstream->deallocate(p, n, s);
  }
  memory_kind do_kind() const override { return upstream->kind(); }
};

struct adaptor_builtins {
  adaptor_builtins() {
    reg().add_builtin(plugin_kind::allocator, "test_leaf", "leaf",
                      [](const options &o) { return new leaf_allocator(o); });
    reg().add_builtin(plugin_kind::allocator, "test_adaptor", "adaptor",
                      [](const options &o) { return new adaptor_allocator(o); });
    reg().add_builtin(plugin_kind::allocator, "test_nesting", "nesting adaptor",
                      [](const options &o) { return new nesting_allocator(o); });
  }
};

plugin_ptr<allocator> a_leaf() {
  return reg().create<allocator>(plugin_kind::allocator, "test_leaf", options());
}

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(adaptor_builtins);

BOOST_AUTO_TEST_CASE(an_adaptor_is_created_over_the_given_object) {
  const plugin_ptr<allocator> given = a_leaf();
  // The object wins over a configured or given `upstream` option, which is not "unknown".
  auto a = std::static_pointer_cast<adaptor_allocator>(
      reg().create_adaptor("test_adaptor", opts({{"upstream", "no_such_backend"}}), given));
  BOOST_TEST(a->upstream == given);
  BOOST_TEST(a->backend_name() == "test_adaptor");
  a->deallocate(a->allocate(64), 64);
  BOOST_TEST(given->stats().allocations == 1u);
  // Without an object, the option names the upstream as before.
  auto b = reg().create<adaptor_allocator>(plugin_kind::allocator, "test_adaptor",
                                           opts({{"upstream", "test_leaf"}}));
  BOOST_TEST(b->upstream != given);
  BOOST_TEST(b->upstream->backend_name() == "test_leaf");
}

BOOST_AUTO_TEST_CASE(only_adaptors_are_created_over_an_object) {
  const int before = live_in_allocator_plugin();
  const std::string msg =
      message_of<config_error>([] { reg().create_adaptor("fake_alloc", options(), a_leaf()); });
  CHECK_CONTAINS(msg, "plugin 'fake_alloc' (" + fake_plugin("good_allocator") + ")");
  CHECK_CONTAINS(msg, "is not an allocator adaptor");
  BOOST_TEST(live_in_allocator_plugin() == before); // destroyed inside its plugin
  CHECK_CONTAINS(
      message_of<config_error>([] { reg().create_adaptor("test_adaptor", options(), nullptr); }),
      "needs an upstream allocator");
  CHECK_CONTAINS(message_of<config_error>(
                     [] { reg().create_adaptor("no_such_adaptor", options(), a_leaf()); }),
                 "unknown allocator 'no_such_adaptor'");
}

BOOST_AUTO_TEST_CASE(a_creation_inside_the_factory_does_not_take_the_offered_object) {
  const plugin_ptr<allocator> given = a_leaf();
  auto n = std::static_pointer_cast<nesting_allocator>(
      reg().create_adaptor("test_nesting", options(), given));
  BOOST_TEST(n->upstream == given);
  BOOST_TEST(n->inner->upstream != given);
  BOOST_TEST(n->inner->upstream->backend_name() == "test_leaf");
  // And the offer ends with the creation: a later plain one makes its upstream by name.
  auto later = reg().create<adaptor_allocator>(plugin_kind::allocator, "test_adaptor",
                                               opts({{"upstream", "test_leaf"}}));
  BOOST_TEST(later->upstream != given);
}

BOOST_AUTO_TEST_CASE(the_generation_moves_only_when_a_name_changes_its_plugin) {
  const unsigned long start = registry::generation();
  reg().add_builtin(plugin_kind::allocator, "test_generation", "first",
                    [](const options &o) { return new builtin_allocator(o); });
  BOOST_TEST(registry::generation() == start); // a new name replaces nothing
  reg().load(fake_plugin("good_allocator"));   // loading again is idempotent
  BOOST_TEST(registry::generation() == start);
  reg().add_builtin(plugin_kind::allocator, "test_generation", "second",
                    [](const options &o) { return new builtin_allocator(o); });
  BOOST_TEST(registry::generation() == start + 1);
}
