// Tests core/src/plugin_abi.cpp: which C++ ABI tags and driver tables a plugin may bring.
#define BOOST_TEST_MODULE plugin_abi
#include <boost/test/included/unit_test.hpp>

#include "plugin_abi_checks.hpp"
#include "test_support.hpp"

#include <cuplug/driver_api.hpp>
#include <cuplug/plugin_abi.hpp>

#include <cstddef>
#include <string>

using namespace cuplug;
using detail::abi_tag_problem;
using detail::driver_table_problem;

namespace {
const std::string gcc = "gcc-cxxabi1019-libstdc++-cxx11abi1-x86_64";
const std::string unknown_compiler = "unknown-cxxabi1019-libstdc++-cxx11abi1-x86_64";
} // namespace

BOOST_AUTO_TEST_CASE(equal_identified_tags_match) {
  BOOST_TEST(abi_tag_problem(gcc, gcc).empty());
  BOOST_TEST(abi_tag_problem(CUPLUG_ABI_TAG, CUPLUG_ABI_TAG).empty());
}

BOOST_AUTO_TEST_CASE(different_tags_do_not_match) {
  const std::string why = abi_tag_problem("clang-cxxabi1002-libc++1-x86_64", gcc);
  CHECK_CONTAINS(why, "was built with ABI tag 'clang-cxxabi1002-libc++1-x86_64', this cuplug "
                      "has '" +
                          gcc + "'");
  CHECK_CONTAINS(why, "rebuild it with the compiler and standard library cuplug was built with");
}

BOOST_AUTO_TEST_CASE(an_unknown_compiler_never_matches_another_unknown_compiler) {
  // A core and a plugin built with unidentified compilers have the same tag: that says nothing
  // about their ABIs, so it must not pass the handshake.
  const std::string why = abi_tag_problem(unknown_compiler, unknown_compiler);
  BOOST_TEST(!why.empty());
  CHECK_CONTAINS(why, "this cuplug was built with a compiler, C++ ABI, standard library or "
                      "architecture it cannot identify (ABI tag '" +
                          unknown_compiler + "')");
  CHECK_CONTAINS(why, "rebuild cuplug with GCC or Clang");
}

BOOST_AUTO_TEST_CASE(a_plugin_with_an_unidentified_part_is_refused_even_by_a_known_core) {
  for (const std::string tag :
       {unknown_compiler, std::string("gcc-cxxabi-unknown-libstdc++-cxx11abi1-x86_64"),
        std::string("gcc-cxxabi1019-stdlib-unknown-x86_64"),
        std::string("gcc-cxxabi1019-libstdc++-cxx11abi1-arch-unknown")}) {
    const std::string why = abi_tag_problem(tag, gcc);
    CHECK_CONTAINS(why, "was built with ABI tag '" + tag + "'");
    CHECK_CONTAINS(why, "could not be identified");
    CHECK_CONTAINS(why, "not even an identical one");
    CHECK_CONTAINS(why, "(ABI tag '" + gcc + "')");
  }
}

BOOST_AUTO_TEST_CASE(this_builds_tag_names_every_part) {
  // The compiler these tests are built with is one cuplug identifies; the tag shows each part.
  const std::string tag = CUPLUG_ABI_TAG;
  BOOST_TEST(tag.find("unknown") == std::string::npos, tag);
  BOOST_TEST(tag.rfind(CUPLUG_ABI_COMPILER "-cxxabi", 0) == 0u, tag);
}

BOOST_AUTO_TEST_CASE(a_shorter_or_equal_driver_table_is_fine) {
  BOOST_TEST(
      driver_table_problem(driver_api_entries, CUPLUG_VERSION_STRING, driver_api_entries).empty());
  BOOST_TEST(driver_table_problem(10, "0.0.1", driver_api_entries).empty());
}

BOOST_AUTO_TEST_CASE(a_longer_driver_table_is_refused_with_both_versions) {
  const std::string why = driver_table_problem(140, "0.3.0", 125);
  BOOST_TEST(why == "was built against cuplug 0.3.0, whose CUDA driver table has 140 entry "
                    "points; this cuplug (" CUPLUG_VERSION_STRING
                    ") has 125, so the plugin could call entry points that are not there: "
                    "rebuild it against cuplug " CUPLUG_VERSION_STRING ", or upgrade cuplug");
  CHECK_CONTAINS(driver_table_problem(140, "", 125), "was built against a newer cuplug");
}

BOOST_AUTO_TEST_CASE(the_abi_fields_keep_their_offsets) {
  // Any cuplug reads these three to say which ABI a file was built for.
  BOOST_TEST(offsetof(plugin_manifest, magic) == 0u);
  BOOST_TEST(offsetof(plugin_manifest, struct_size) == 8u);
  BOOST_TEST(offsetof(plugin_manifest, abi_major) == 12u);
}

BOOST_AUTO_TEST_CASE(cuplug_plugin_records_the_driver_table_and_the_cuplug_version) {
  const plugin_candidate c =
      test_support::only(registry::instance().load(test_support::fake_plugin("good_allocator")));
  BOOST_REQUIRE(c.has_manifest);
  BOOST_TEST(c.manifest.driver_api_entries == driver_api_entries);
  BOOST_TEST(std::string(c.manifest.cuplug_version) == CUPLUG_VERSION_STRING);
}
