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
const std::string core = "itanium/libstdc++-cxx11abi1/x86_64-lp64";
const std::string unknown_cxxabi = "cxxabi-unknown/libstdc++-cxx11abi1/x86_64-lp64";
} // namespace

BOOST_AUTO_TEST_CASE(equal_identified_tags_match) {
  BOOST_TEST(abi_tag_problem(core, core).empty());
  BOOST_TEST(abi_tag_problem(CUPLUG_ABI_TAG, CUPLUG_ABI_TAG).empty());
}

BOOST_AUTO_TEST_CASE(the_compiler_brand_and_version_are_not_in_the_tag) {
  // GCC 11, GCC 12 and Clang against the same libstdc++ interoperate: a tag of the first format
  // that names any of them (and its __GXX_ABI_VERSION) matches a core of the same library and arch.
  for (const char *legacy :
       {"gcc-cxxabi1016-libstdc++-cxx11abi1-x86_64", "gcc-cxxabi1017-libstdc++-cxx11abi1-x86_64",
        "clang-cxxabi1002-libstdc++-cxx11abi1-x86_64"})
    BOOST_TEST(abi_tag_problem(legacy, core).empty(), legacy);
  BOOST_TEST(std::string(CUPLUG_ABI_TAG).find("gcc") == std::string::npos);
  BOOST_TEST(std::string(CUPLUG_ABI_TAG).find("clang") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(first_format_tags_are_read_into_the_same_parts) {
  const detail::abi_parts p = detail::parse_abi_tag("clang-cxxabi1002-libc++1-aarch64");
  BOOST_TEST(p.cxxabi == "itanium");
  BOOST_TEST(p.stdlib == "libc++-abi1");
  BOOST_TEST(p.arch == "aarch64-lp64");
  BOOST_TEST(detail::parse_abi_tag("unknown-cxxabi-unknown-stdlib-unknown-x86_64").cxxabi ==
             "cxxabi-unknown");
  BOOST_TEST(detail::parse_abi_tag("garbage").stdlib == "stdlib-unknown");
}

BOOST_AUTO_TEST_CASE(libcxx_against_libstdcxx_names_both_libraries_and_the_fix) {
  const std::string why = abi_tag_problem("itanium/libc++-abi1/x86_64-lp64", core);
  CHECK_CONTAINS(why,
                 "was built with ABI tag 'itanium/libc++-abi1/x86_64-lp64', this cuplug has '" +
                     core + "' (built by " + detail::core_compiler() + ")");
  CHECK_CONTAINS(why, "its standard library is LLVM libc++ (ABI version 1), cuplug's is "
                      "libstdc++ with the C++11 std::string and std::list "
                      "(_GLIBCXX_USE_CXX11_ABI=1)");
  CHECK_CONTAINS(why, "build it with g++ (any version from 5 on) or clang++ against libstdc++ (no "
                      "-stdlib=libc++) and without -D_GLIBCXX_USE_CXX11_ABI=0");
  CHECK_CONTAINS(why, "The compiler's brand and version need not match");
}

BOOST_AUTO_TEST_CASE(the_old_string_abi_is_refused_with_the_macro_to_drop) {
  const std::string why = abi_tag_problem("itanium/libstdc++-cxx11abi0/x86_64-lp64", core);
  CHECK_CONTAINS(why, "libstdc++ with the old, pre-C++11 std::string and std::list "
                      "(_GLIBCXX_USE_CXX11_ABI=0), cuplug's is libstdc++ with the C++11");
  CHECK_CONTAINS(why, "without -D_GLIBCXX_USE_CXX11_ABI=0");
  // And the other way round: a core built with the old ABI asks for the macro.
  CHECK_CONTAINS(abi_tag_problem(core, "itanium/libstdc++-cxx11abi0/x86_64-lp64"),
                 "against libstdc++ with -D_GLIBCXX_USE_CXX11_ABI=0");
}

BOOST_AUTO_TEST_CASE(another_architecture_or_pointer_size_is_refused) {
  CHECK_CONTAINS(abi_tag_problem("itanium/libstdc++-cxx11abi1/aarch64-lp64", core),
                 "it targets aarch64 with 64-bit pointers (LP64), cuplug x86_64 with 64-bit "
                 "pointers (LP64)");
  CHECK_CONTAINS(abi_tag_problem("itanium/libstdc++-cxx11abi1/x86_64-ilp32", core),
                 "it targets x86_64 with 32-bit pointers (ILP32)");
}

BOOST_AUTO_TEST_CASE(an_unidentified_core_never_matches_itself) {
  // A core and a plugin built with unidentified compilers have the same tag: that says nothing
  // about their ABIs, so it must not pass the handshake.
  const std::string why = abi_tag_problem(unknown_cxxabi, unknown_cxxabi);
  BOOST_TEST(!why.empty());
  CHECK_CONTAINS(why, "this cuplug was built with a C++ ABI, standard library or architecture it "
                      "cannot identify (ABI tag '" +
                          unknown_cxxabi + "')");
  CHECK_CONTAINS(why, "rebuild cuplug with GCC or Clang");
}

BOOST_AUTO_TEST_CASE(a_plugin_with_an_unidentified_part_is_refused_even_by_a_known_core) {
  for (const std::string tag :
       {unknown_cxxabi, std::string("itanium/stdlib-unknown/x86_64-lp64"),
        std::string("itanium/libstdc++-cxx11abi1/arch-unknown-lp64"),
        std::string("itanium/libstdc++-cxx11abi1/x86_64-data-model-unknown")}) {
    const std::string why = abi_tag_problem(tag, core);
    CHECK_CONTAINS(why, "was built with ABI tag '" + tag + "'");
    CHECK_CONTAINS(why, "could not be identified");
    CHECK_CONTAINS(why, "not even an identical one");
    CHECK_CONTAINS(why, "(ABI tag '" + core + "')");
  }
}

BOOST_AUTO_TEST_CASE(this_builds_tag_names_every_part) {
  // The compiler these tests are built with is one cuplug identifies; the tag shows each part.
  const std::string tag = CUPLUG_ABI_TAG;
  BOOST_TEST(tag.find("unknown") == std::string::npos, tag);
  BOOST_TEST(tag.rfind("itanium/", 0) == 0u, tag);
  const detail::abi_parts p = detail::parse_abi_tag(tag);
  BOOST_TEST(p.stdlib == CUPLUG_ABI_STDLIB);
  BOOST_TEST(p.arch == CUPLUG_ABI_ARCH "-" CUPLUG_ABI_DATA_MODEL);
  const std::string compiler = detail::core_compiler();
  BOOST_TEST((compiler.rfind("GCC ", 0) == 0u || compiler.rfind("Clang ", 0) == 0u), compiler);
}

BOOST_AUTO_TEST_CASE(a_missing_glibcxx_version_is_explained_with_both_fixes) {
  const std::string why = detail::missing_symbol_version_advice(
      "/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32' not found (required by "
      "/opt/p/libx.so)",
      "GLIBCXX_3.4.30");
  CHECK_CONTAINS(why, "built by a newer GCC than the libstdc++ this process runs (it needs "
                      "GLIBCXX_3.4.32, from GCC 13.2 or newer; the libstdc++ loaded here provides "
                      "up to GLIBCXX_3.4.30)");
  CHECK_CONTAINS(why, "Rebuild the plugin with " + detail::core_compiler());
  CHECK_CONTAINS(why, "LD_LIBRARY_PATH");
  CHECK_CONTAINS(detail::missing_symbol_version_advice(
                     "x: version `GLIBCXX_3.4.99' not found (required by y)", ""),
                 "it needs GLIBCXX_3.4.99, from a newer GCC; the libstdc++ loaded here is older");
  BOOST_TEST(detail::missing_symbol_version_advice(
                 "libc.so.6: version `GLIBC_2.99' not found (required by y)", "")
                 .empty());
  BOOST_TEST(
      detail::missing_symbol_version_advice("libfoo.so: cannot open shared object", "").empty());
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
