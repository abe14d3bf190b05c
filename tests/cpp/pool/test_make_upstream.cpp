// make_upstream (core/src/pool/make_upstream.cpp) with in-process backends: the option it reads,
// the configured options it passes on, and the errors for empty names, unknown names and cycles.
#include <cuplug/config.hpp>
#include <cuplug/errors.hpp>
#include <cuplug/pool/make_upstream.hpp>
#include <cuplug/registry.hpp>

#include <boost/test/unit_test.hpp>

#include <map>
#include <string>

using namespace cuplug;

namespace {

// A leaf allocator that remembers its option "tag".
class leaf final : public allocator {
public:
  explicit leaf(const options &o) : tag(o.get_string("tag", "")) {}
  const std::string tag;

private:
  device_ptr do_allocate(std::size_t, CUstream) override { return 0x100; }
  void do_deallocate(device_ptr, std::size_t, CUstream) override {}
  memory_kind do_kind() const override { return memory_kind::host; }
};

// The smallest adaptor: everything goes to its upstream.
class adaptor final : public allocator {
public:
  explicit adaptor(const options &o) : upstream(pool::make_upstream(o, "test_adaptor")) {}
  const plugin_ptr<allocator> upstream;

private:
  device_ptr do_allocate(std::size_t bytes, CUstream s) override {
    return upstream->allocate(bytes, s);
  }
  void do_deallocate(device_ptr p, std::size_t bytes, CUstream s) override {
    upstream->deallocate(p, bytes, s);
  }
  memory_kind do_kind() const override { return upstream->kind(); }
};

struct builtins {
  builtins() {
    registry::instance().add_builtin(plugin_kind::allocator, "test_leaf", "leaf",
                                     [](const options &o) { return new leaf(o); });
    registry::instance().add_builtin(plugin_kind::allocator, "test_adaptor", "adaptor",
                                     [](const options &o) { return new adaptor(o); });
  }
};

plugin_ptr<adaptor> make(std::map<std::string, std::string> opts) {
  return registry::instance().create<adaptor>(plugin_kind::allocator, "test_adaptor",
                                              options(std::move(opts)));
}

std::string config_error_of(std::map<std::string, std::string> opts) {
  try {
    make(std::move(opts));
  } catch (const config_error &e) {
    return e.what();
  }
  return "(no config_error)";
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(builtins);

BOOST_AUTO_TEST_SUITE(make_upstream)

BOOST_AUTO_TEST_CASE(the_upstream_option_names_the_backend_with_its_configured_options) {
  config::instance().set_explicit_options(plugin_kind::allocator, "test_leaf", {{"tag", "x"}});
  auto a = make({{"upstream", "test_leaf"}});
  config::instance().set_explicit_options(plugin_kind::allocator, "test_leaf", {});
  BOOST_TEST(a->upstream->backend_name() == "test_leaf");
  BOOST_TEST(std::static_pointer_cast<leaf>(a->upstream)->tag == "x");
  // A fresh object for each adaptor, so each upstream counts only its adaptor's requests.
  auto b = make({{"upstream", "test_leaf"}});
  BOOST_TEST(b->upstream != a->upstream);
  a->deallocate(a->allocate(64), 64);
  BOOST_TEST(a->upstream->stats().allocations == 1u);
  BOOST_TEST(b->upstream->stats().allocations == 0u);
}

BOOST_AUTO_TEST_CASE(an_empty_or_unknown_upstream_is_a_config_error_naming_the_adaptor) {
  const std::string empty = config_error_of({{"upstream", ""}});
  BOOST_TEST(contains(empty, "allocator 'test_adaptor': option 'upstream' is empty"), empty);
  const std::string unknown = config_error_of({{"upstream", "no_such_backend"}});
  BOOST_TEST(contains(unknown, "allocator 'test_adaptor': cannot create its upstream "
                               "'no_such_backend'"),
             unknown);
  BOOST_TEST(contains(unknown, "test_leaf"), unknown); // lists what is available
}

BOOST_AUTO_TEST_CASE(a_cycle_of_upstreams_is_a_config_error) {
  config::instance().set_explicit_options(plugin_kind::allocator, "test_adaptor",
                                          {{"upstream", "test_adaptor"}});
  const std::string msg = config_error_of({{"upstream", "test_adaptor"}});
  config::instance().set_explicit_options(plugin_kind::allocator, "test_adaptor", {});
  BOOST_TEST(contains(msg, "more than 16 allocators deep"), msg);
  BOOST_TEST(contains(msg, "cycle"), msg);
  // The guard unwound: a good chain works again at once.
  BOOST_TEST(make({{"upstream", "test_leaf"}})->upstream->backend_name() == "test_leaf");
}

BOOST_AUTO_TEST_SUITE_END()
