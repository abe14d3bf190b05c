// The allocation observer (core/src/allocator.cpp): told of the outermost allocate/deallocate
// only, never of a pool's calls to its upstream, and not at all once removed.
#include <cuplug/allocation_observer.hpp>
#include <cuplug/allocator.hpp>
#include <cuplug/registry.hpp>

#include <boost/test/unit_test.hpp>

#include <map>
#include <string>
#include <vector>

namespace {

using cuplug::allocator;
using cuplug::device_ptr;

struct seen {
  std::string what, backend;
  device_ptr ptr;
  std::size_t bytes;
  bool operator==(const seen &o) const {
    return what == o.what && backend == o.backend && ptr == o.ptr && bytes == o.bytes;
  }
};

std::ostream &operator<<(std::ostream &os, const seen &s) {
  return os << s.what << " " << s.backend << " " << s.ptr << " " << s.bytes;
}

class recorder final : public cuplug::allocation_observer {
public:
  std::vector<seen> events;
  void allocated(const allocator &a, device_ptr ptr, std::size_t bytes,
                 CUstream) noexcept override {
    events.push_back({"alloc", a.backend_name(), ptr, bytes});
  }
  void deallocated(const allocator &a, device_ptr ptr, std::size_t bytes) noexcept override {
    events.push_back({"free", a.backend_name(), ptr, bytes});
  }
};

// Installs the recorder for a test and removes it again, whatever happens.
struct observed {
  recorder r;
  observed() { cuplug::set_allocation_observer(&r); }
  ~observed() { cuplug::set_allocation_observer(nullptr); }
};

cuplug::plugin_ptr<allocator> make(const std::string &name,
                                   std::map<std::string, std::string> opts = {}) {
  return cuplug::registry::instance().create<allocator>(cuplug::plugin_kind::allocator, name,
                                                        cuplug::options(std::move(opts)));
}

} // namespace

BOOST_AUTO_TEST_SUITE(allocation_observer)

BOOST_AUTO_TEST_CASE(none_is_installed_by_default) {
  BOOST_TEST(cuplug::current_allocation_observer() == nullptr);
}

BOOST_AUTO_TEST_CASE(a_plain_allocator_reports_each_block) {
  auto host = make("host");
  observed o;
  BOOST_TEST(cuplug::current_allocation_observer() == &o.r);
  const device_ptr p = host->allocate(100);
  BOOST_TEST(host->allocate(0) == 0u); // nothing allocated: nothing reported
  host->deallocate(p, 100);
  host->deallocate(0, 10);
  const std::vector<seen> want{{"alloc", "host", p, 100}, {"free", "host", p, 100}};
  BOOST_TEST(o.r.events == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_pool_reports_the_users_block_not_its_upstream_calls) {
  auto pool = make("pool", {{"upstream", "host"}});
  observed o;
  const device_ptr p = pool->allocate(1 << 20);
  pool->deallocate(p, 1 << 20);
  BOOST_TEST(pool->free_held() > 0u); // gives the block to the upstream: not reported
  const std::vector<seen> want{{"alloc", "pool", p, 1 << 20}, {"free", "pool", p, 1 << 20}};
  BOOST_TEST(o.r.events == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(nothing_is_reported_once_removed) {
  auto host = make("host");
  std::size_t count = 0;
  {
    observed o;
    host->deallocate(host->allocate(8), 8);
    count = o.r.events.size();
  }
  BOOST_TEST(count == 2u);
  BOOST_TEST(cuplug::current_allocation_observer() == nullptr);
  host->deallocate(host->allocate(8), 8); // no observer to call: must not crash
}

BOOST_AUTO_TEST_SUITE_END()
