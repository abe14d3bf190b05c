// Tests core/src/options.cpp: typed reads, errors naming the option, tracking of what was read.
#define BOOST_TEST_MODULE options
#include <boost/test/included/unit_test.hpp>

#include "test_support.hpp"

#include <cuplug/errors.hpp>
#include <cuplug/options.hpp>

using namespace cuplug;
using test_support::opts;

namespace {

template <class F> std::string config_message(F f) {
  try {
    f();
  } catch (const config_error &e) {
    return e.what();
  }
  BOOST_ERROR("no config_error");
  return {};
}

} // namespace

BOOST_AUTO_TEST_CASE(fallbacks_when_unset) {
  const options o;
  BOOST_TEST(o.get_string("s", "dflt") == "dflt");
  BOOST_TEST(o.get_int("i", -3) == -3);
  BOOST_TEST(o.get_bool("b", true));
  BOOST_TEST(o.get_double("d", 2.5) == 2.5);
  BOOST_TEST(o.get_bytes("n", 77) == 77u);
  BOOST_TEST(!o.contains("s"));
}

BOOST_AUTO_TEST_CASE(typed_values) {
  const options o({{"s", "text"}, {"i", " 42 "}, {"hex", "0x10"}, {"neg", "-7"}, {"d", "1.5e3"}});
  BOOST_TEST(o.get_string("s", "") == "text");
  BOOST_TEST(o.get_int("i", 0) == 42);
  BOOST_TEST(o.get_int("hex", 0) == 16);
  BOOST_TEST(o.get_int("neg", 0) == -7);
  BOOST_TEST(o.get_double("d", 0) == 1500.0);
  BOOST_TEST(o.contains("s"));
}

BOOST_AUTO_TEST_CASE(booleans_in_every_spelling) {
  for (const char *yes : {"1", "true", "True", "YES", "on"})
    BOOST_TEST(opts({{"b", yes}}).get_bool("b", false), yes);
  for (const char *no : {"0", "false", "FALSE", "no", "off"})
    BOOST_TEST(!opts({{"b", no}}).get_bool("b", true), no);
}

BOOST_AUTO_TEST_CASE(byte_sizes_with_units) {
  const std::pair<const char *, std::size_t> cases[] = {{"1048576", 1048576},
                                                        {"64MiB", std::size_t(64) << 20},
                                                        {"1.5GiB", std::size_t(3) << 29},
                                                        {"512kB", 512000},
                                                        {"2 KiB", 2048},
                                                        {"3g", std::size_t(3) << 30},
                                                        {"1MB", 1000000},
                                                        {"0", 0}};
  for (const auto &[text, bytes] : cases)
    BOOST_TEST(opts({{"n", text}}).get_bytes("n", 1) == bytes, text);
}

BOOST_AUTO_TEST_CASE(bad_values_name_the_option_value_and_expectation) {
  const std::string i = config_message([] { opts({{"count", "ten"}}).get_int("count", 0); });
  BOOST_TEST(i == "option 'count' has value 'ten', expected an integer");
  const std::string b = config_message([] { opts({{"flag", "maybe"}}).get_bool("flag", false); });
  BOOST_TEST(b.find("option 'flag' has value 'maybe'") != std::string::npos, b);
  const std::string d = config_message([] { opts({{"x", "1.2.3"}}).get_double("x", 0); });
  BOOST_TEST(d.find("option 'x' has value '1.2.3', expected a number") != std::string::npos, d);
  for (const char *bad : {"lots", "12 parsecs", "-1MiB", ""}) {
    const std::string n = config_message([bad] { opts({{"size", bad}}).get_bytes("size", 0); });
    BOOST_TEST(n.find("option 'size' has value '" + std::string(bad) + "'") != std::string::npos,
               n);
    BOOST_TEST(n.find("byte size") != std::string::npos, n);
  }
  BOOST_CHECK_THROW(opts({{"i", "99999999999999999999999"}}).get_int("i", 0), config_error);
}

BOOST_AUTO_TEST_CASE(tracks_what_was_asked_for) {
  const options o({{"used", "1"}, {"typo", "2"}, {"also_unused", "3"}});
  o.get_int("used", 0);
  o.get_string("never_set", "");
  BOOST_TEST(o.known() == (std::set<std::string>{"used", "never_set"}));
  BOOST_TEST(o.unknown() == (std::vector<std::string>{"also_unused", "typo"}));
  o.get_int("typo", 0);
  o.get_bytes("also_unused", 0);
  BOOST_TEST(o.unknown().empty());
}
