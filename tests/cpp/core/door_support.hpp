// What the interface door tests share: the failures an in-test fake plugin can raise, and the
// checks that the core's door turned each into the right error.
#pragma once

#include "test_support.hpp"

#include <cuplug/errors.hpp>

#include <boost/test/unit_test.hpp>

#include <functional>
#include <stdexcept>
#include <string>

namespace door_test {

// What a fake's next do_* call does.
enum class failure { none, foreign, not_std, core, bad_argument };

// Throws as a plugin might: a foreign std::exception (from a library the plugin uses), something
// that is not a std::exception at all, a core error, or a rejected argument.
inline void raise(failure f) {
  switch (f) {
  case failure::none:
    return;
  case failure::foreign:
    throw std::runtime_error("the plugin's library gave up");
  case failure::not_std:
    throw 42;
  case failure::core:
    throw cuplug::not_supported("the plugin does not do that");
  case failure::bad_argument:
    throw std::invalid_argument("the plugin rejects that value");
  }
}

// Runs `call` once per failure mode (set through `fail`) and checks what reaches the caller:
// foreign exceptions as plugin_error "<kind> '<backend>' failed in <operation>...", core errors
// and std::invalid_argument unchanged.
inline void check_translation(const std::string &kind, const std::string &backend,
                              const std::string &operation, failure &fail,
                              const std::function<void()> &call) {
  const std::string prefix = kind + " '" + backend + "' failed in " + operation;
  fail = failure::foreign;
  try {
    call();
    BOOST_ERROR(operation << ": a foreign exception did not reach the caller");
  } catch (const cuplug::plugin_error &e) {
    BOOST_TEST(std::string(e.what()) == prefix + ": the plugin's library gave up");
  }
  fail = failure::not_std;
  try {
    call();
    BOOST_ERROR(operation << ": a non-std exception did not reach the caller");
  } catch (const cuplug::plugin_error &e) {
    BOOST_TEST(std::string(e.what()) == prefix + " with an exception that is not a std::exception");
  }
  fail = failure::core;
  BOOST_CHECK_THROW(call(), cuplug::not_supported);
  fail = failure::bad_argument;
  BOOST_CHECK_THROW(call(), std::invalid_argument);
  fail = failure::none;
}

// The message of the std::invalid_argument `call` throws ("" and a test error if none).
inline std::string invalid_argument_message(const std::function<void()> &call) {
  try {
    call();
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  BOOST_ERROR("no std::invalid_argument was thrown");
  return {};
}

} // namespace door_test
