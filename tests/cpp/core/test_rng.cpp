// Tests core/src/rng.cpp: the generator's door checks arguments and translates what a plugin
// throws, with an in-test generator.
#define BOOST_TEST_MODULE rng
#include <boost/test/included/unit_test.hpp>

#include "door_support.hpp"

#include <cuplug/rng.hpp>

using namespace cuplug;
using door_test::failure;

namespace {

// Counts what reaches it; throws what `fail` says.
class fake_rng : public rng {
public:
  fake_rng() { set_backend_name("fake_rng"); }
  failure fail = failure::none;
  int generated = 0;

private:
  void do_seed(std::uint64_t) override { door_test::raise(fail); }
  void do_set_offset(std::uint64_t o) override {
    door_test::raise(fail);
    offset_ = o;
  }
  std::uint64_t do_offset() const override {
    door_test::raise(fail);
    return offset_;
  }
  bool do_supports(rng_distribution d, rng_dtype) const override {
    door_test::raise(fail);
    return d != rng_distribution::poisson;
  }
  void do_generate(rng_distribution, rng_dtype, device_ptr, std::size_t, const rng_params &,
                   CUstream) override {
    door_test::raise(fail);
    ++generated;
  }
  std::uint64_t offset_ = 0;
};

constexpr device_ptr somewhere = 0x10000;

} // namespace

BOOST_AUTO_TEST_CASE(every_call_translates_foreign_exceptions) {
  fake_rng g;
  door_test::check_translation("rng", "fake_rng", "seed", g.fail, [&] { g.seed(1); });
  door_test::check_translation("rng", "fake_rng", "set_offset", g.fail, [&] { g.set_offset(2); });
  door_test::check_translation("rng", "fake_rng", "offset", g.fail, [&] { (void)g.offset(); });
  door_test::check_translation("rng", "fake_rng", "supports", g.fail, [&] {
    (void)g.supports(rng_distribution::uniform, rng_dtype::float32);
  });
  // generate() asks supports() first: a failure there is reported as supports'.
  door_test::check_translation("rng", "fake_rng", "supports", g.fail, [&] {
    g.generate(rng_distribution::uniform, rng_dtype::float32, somewhere, 4);
  });
  BOOST_TEST(g.generated == 0);
}

BOOST_AUTO_TEST_CASE(generate_translates_foreign_exceptions_of_the_plugin) {
  // A plugin whose supports() works but whose generate() throws.
  struct gen : rng {
    gen() { set_backend_name("gen"); }
    void do_seed(std::uint64_t) override {}
    void do_set_offset(std::uint64_t) override {}
    std::uint64_t do_offset() const override { return 0; }
    bool do_supports(rng_distribution, rng_dtype) const override { return true; }
    void do_generate(rng_distribution, rng_dtype, device_ptr, std::size_t, const rng_params &,
                     CUstream) override {
      door_test::raise(fail);
    }
    failure fail = failure::none;
  } g;
  door_test::check_translation("rng", "gen", "generate", g.fail, [&] {
    g.generate(rng_distribution::normal, rng_dtype::float64, somewhere, 8);
  });
}

BOOST_AUTO_TEST_CASE(values_pass_through_the_door) {
  fake_rng g;
  g.set_offset(12);
  BOOST_TEST(g.offset() == 12u);
  BOOST_TEST(g.supports(rng_distribution::uniform, rng_dtype::float32));
  BOOST_TEST(!g.supports(rng_distribution::poisson, rng_dtype::uint32));
  g.generate(rng_distribution::uniform, rng_dtype::float32, somewhere, 4);
  BOOST_TEST(g.generated == 1);
}

BOOST_AUTO_TEST_CASE(generate_checks_its_arguments_before_the_plugin_runs) {
  fake_rng g;
  g.generate(rng_distribution::uniform, rng_dtype::float32, 0, 0); // nothing to do
  BOOST_TEST(door_test::invalid_argument_message([&] {
               g.generate(rng_distribution::uniform, rng_dtype::float32, 0, 4);
             }) == "rng::generate: output pointer is null");
  rng_params bad_normal;
  bad_normal.stddev = 0;
  BOOST_TEST(door_test::invalid_argument_message([&] {
               g.generate(rng_distribution::normal, rng_dtype::float32, somewhere, 4, bad_normal);
             }) == "rng::generate: stddev must be positive");
  BOOST_CHECK_THROW(g.generate(rng_distribution::poisson, rng_dtype::uint32, somewhere, 4),
                    not_supported);
  BOOST_TEST(g.generated == 0);
}
