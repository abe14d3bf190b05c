// Tests core/src/rng.cpp: the generator's door checks arguments and translates what a plugin
// throws, with an in-test generator.
#define BOOST_TEST_MODULE rng
#include <boost/test/included/unit_test.hpp>

#include "door_support.hpp"

#include <cuplug/rng.hpp>

#include <limits>
#include <string>
#include <vector>

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

namespace {

// A generator with the optional parts: a fixed-size table, a library version, no skipping.
class table_rng : public rng {
public:
  table_rng() { set_backend_name("table_rng"); }
  failure fail = failure::none;
  bool can_skip = false;
  int copies = 0;

private:
  void do_seed(std::uint64_t) override { offset_ = 0; }
  void do_set_offset(std::uint64_t o) override { offset_ = o; }
  std::uint64_t do_offset() const override { return offset_; }
  bool do_supports(rng_distribution, rng_dtype) const override { return true; }
  void do_generate(rng_distribution, rng_dtype, device_ptr, std::size_t count, const rng_params &,
                   CUstream) override {
    offset_ += count;
  }
  bool do_seekable() const override {
    door_test::raise(fail);
    return can_skip;
  }
  std::size_t do_table_size(rng_table t) const override {
    door_test::raise(fail);
    return t == rng_table::scramble32_constants ? 10 : 0;
  }
  void do_copy_table(rng_table, std::size_t, std::size_t, void *) const override {
    door_test::raise(fail);
    ++const_cast<table_rng *>(this)->copies;
  }
  std::uint32_t do_library_version() const override {
    door_test::raise(fail);
    return 10400;
  }
  std::uint64_t offset_ = 0;
};

} // namespace

BOOST_AUTO_TEST_CASE(box_muller_counts_must_be_even_and_say_what_to_do) {
  fake_rng g;
  for (rng_distribution d : {rng_distribution::normal, rng_distribution::lognormal}) {
    const std::string message = door_test::invalid_argument_message(
        [&] { g.generate(d, rng_dtype::float32, somewhere, 7); });
    BOOST_TEST(message == std::string("rng::generate: ") + to_string(d) +
                              " values come in pairs (Box-Muller), so the count must be even; "
                              "got 7: generate 8 and drop the last");
  }
  g.generate(rng_distribution::uniform, rng_dtype::float32, somewhere, 7); // odd is fine here
  BOOST_TEST(g.generated == 1);
}

BOOST_AUTO_TEST_CASE(a_call_may_not_pass_the_end_of_the_stream) {
  table_rng g;
  g.can_skip = true;
  g.set_offset(std::numeric_limits<std::uint64_t>::max() - 4);
  BOOST_TEST(door_test::invalid_argument_message([&] {
               g.generate(rng_distribution::uniform, rng_dtype::float32, somewhere, 5);
             }).find("5 values from offset 18446744073709551611 pass the end of the stream") !=
             std::string::npos);
  g.generate(rng_distribution::uniform, rng_dtype::float32, somewhere, 4); // ends exactly there
  BOOST_TEST(g.offset() == std::numeric_limits<std::uint64_t>::max());
  rng_params nan_mean;
  nan_mean.mean = std::numeric_limits<double>::quiet_NaN();
  g.seed(0);
  BOOST_TEST(door_test::invalid_argument_message([&] {
               g.generate(rng_distribution::normal, rng_dtype::float64, somewhere, 2, nan_mean);
             }) == "rng::generate: mean must be finite");
}

BOOST_AUTO_TEST_CASE(set_offset_is_refused_for_a_generator_that_cannot_skip) {
  table_rng g;
  BOOST_TEST(!g.seekable());
  try {
    g.set_offset(3);
    BOOST_ERROR("set_offset on a generator that cannot skip succeeded");
  } catch (const not_supported &e) {
    BOOST_TEST(std::string(e.what()) ==
               "generator 'table_rng' cannot move to an offset (it can only be seeded and run on)");
  }
  BOOST_TEST(g.offset() == 0u);
}

BOOST_AUTO_TEST_CASE(tables_are_copied_within_their_size_only) {
  table_rng g;
  std::vector<std::uint32_t> out(16);
  g.copy_table(rng_table::scramble32_constants, 0, 0, nullptr); // nothing to do
  g.copy_table(rng_table::scramble32_constants, 8, 2, out.data());
  BOOST_TEST(g.copies == 1);
  BOOST_TEST(door_test::invalid_argument_message([&] {
               g.copy_table(rng_table::scramble32_constants, 9, 2, out.data());
             }) == "rng::copy_table: entries [9, 9 + 2) of scramble32_constants are outside its "
                   "10 entries");
  BOOST_TEST(door_test::invalid_argument_message([&] {
               g.copy_table(rng_table::scramble32_constants, 0, 1, nullptr);
             }) == "rng::copy_table: output pointer is null");
  BOOST_CHECK_THROW(g.copy_table(rng_table::sobol32_directions, 0, 1, out.data()), not_supported);
  BOOST_TEST(g.copies == 1);
  // The defaults of a plugin without tables or a library.
  fake_rng plain;
  BOOST_TEST(plain.seekable());
  BOOST_TEST(plain.table_size(rng_table::sobol64_directions) == 0u);
  BOOST_TEST(plain.library_version() == 0u);
  BOOST_CHECK_THROW(plain.copy_table(rng_table::sobol64_directions, 0, 1, out.data()),
                    not_supported);
}

BOOST_AUTO_TEST_CASE(the_optional_calls_translate_foreign_exceptions) {
  table_rng g;
  std::vector<std::uint32_t> out(4);
  door_test::check_translation("rng", "table_rng", "seekable", g.fail, [&] { (void)g.seekable(); });
  door_test::check_translation("rng", "table_rng", "table_size", g.fail,
                               [&] { (void)g.table_size(rng_table::scramble32_constants); });
  door_test::check_translation("rng", "table_rng", "library_version", g.fail,
                               [&] { (void)g.library_version(); });
  // copy_table asks table_size first: a failure there is reported as table_size's.
  door_test::check_translation("rng", "table_rng", "table_size", g.fail, [&] {
    g.copy_table(rng_table::scramble32_constants, 0, 1, out.data());
  });
}

BOOST_AUTO_TEST_CASE(names_and_sizes_of_the_enums) {
  BOOST_TEST(std::string(to_string(rng_distribution::lognormal)) == "lognormal");
  BOOST_TEST(std::string(to_string(rng_dtype::uint64)) == "uint64");
  BOOST_TEST(std::string(to_string(rng_table::scrambled_sobol64_directions)) ==
             "scrambled_sobol64_directions");
  BOOST_TEST(size_of(rng_dtype::float32) == 4u);
  BOOST_TEST(size_of(rng_dtype::uint64) == 8u);
  BOOST_TEST(entry_size(rng_table::sobol32_directions) == 4u);
  BOOST_TEST(entry_size(rng_table::scramble64_constants) == 8u);
}
