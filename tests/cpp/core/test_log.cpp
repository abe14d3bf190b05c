// Tests core/src/log.cpp: components reach the sink, the default sink's levels, log_deferral's
// per-component levels and held messages, and log_unlocked's promise (log_may_wait()).
#define BOOST_TEST_MODULE log
#include <boost/test/included/unit_test.hpp>

#include <cuplug/log.hpp>

#include <string>
#include <tuple>
#include <vector>

using namespace cuplug;

namespace {

struct seen_message {
  log_component component;
  log_level level;
  std::string text;
  bool may_wait;
};
std::vector<seen_message> seen;
int asked = 0;

// Compile at debug, everything else at warning.
bool recording_enabled(log_component component, log_level level) noexcept {
  ++asked;
  return level >= (component == log_component::compile ? log_level::debug : log_level::warning);
}
void recording_emit(log_component component, log_level level, const char *text) noexcept {
  seen.push_back({component, level, text, log_may_wait()});
}

struct recording_sink {
  log_sink previous;
  recording_sink() : previous(set_log_sink({&recording_enabled, &recording_emit})) {
    seen.clear();
    asked = 0;
  }
  ~recording_sink() { set_log_sink(previous); }
};

} // namespace

BOOST_AUTO_TEST_CASE(component_names_are_the_python_logger_suffixes) {
  BOOST_TEST(std::string(to_string(log_component::general)) == "");
  BOOST_TEST(std::string(to_string(log_component::compile)) == "compile");
  BOOST_TEST(std::string(to_string(log_component::memory)) == "memory");
  BOOST_TEST(std::string(to_string(log_component::plugins)) == "plugins");
  BOOST_TEST(std::string(to_string(log_component::launch)) == "launch");
}

BOOST_AUTO_TEST_CASE(the_default_sink_passes_warnings_only) {
  BOOST_TEST(!log_enabled(log_component::compile, log_level::info));
  BOOST_TEST(log_enabled(log_component::memory, log_level::warning));
  BOOST_TEST(!log_enabled(log_level::debug));
}

BOOST_AUTO_TEST_CASE(messages_reach_the_sink_with_their_component) {
  recording_sink sink;
  BOOST_TEST(log_enabled(log_component::compile, log_level::debug));
  BOOST_TEST(!log_enabled(log_component::plugins, log_level::debug));
  log(log_component::compile, log_level::info, "compiling");
  log(log_component::plugins, log_level::debug, "dropped");
  log_warning(log_component::memory, "free failed");
  log_warning("general");
  BOOST_REQUIRE(seen.size() == 3u);
  BOOST_TEST((seen[0].component == log_component::compile && seen[0].text == "compiling"));
  BOOST_TEST((seen[1].component == log_component::memory && seen[1].level == log_level::warning));
  BOOST_TEST((seen[2].component == log_component::general && seen[2].text == "general"));
  BOOST_TEST(!seen[0].may_wait);
}

BOOST_AUTO_TEST_CASE(a_deferral_holds_messages_and_answers_levels_per_component) {
  recording_sink sink;
  {
    log_deferral deferred;
    const int asked_before = asked;
    BOOST_TEST(log_enabled(log_component::compile, log_level::debug));
    BOOST_TEST(!log_enabled(log_component::plugins, log_level::info));
    BOOST_TEST(asked == asked_before); // answered from what the deferral asked at its start
    log(log_component::compile, log_level::debug, "held");
    log(log_component::plugins, log_level::info, "dropped");
    BOOST_TEST(seen.empty());
  }
  BOOST_REQUIRE(seen.size() == 1u);
  BOOST_TEST((seen[0].component == log_component::compile && seen[0].text == "held"));
}

BOOST_AUTO_TEST_CASE(log_unlocked_lets_the_sink_wait_outside_every_deferral) {
  recording_sink sink;
  BOOST_TEST(!log_may_wait());
  {
    log_unlocked now;
    BOOST_TEST(log_may_wait());
    {
      log_unlocked nested;
      BOOST_TEST(log_may_wait());
    }
    BOOST_TEST(log_may_wait());
    log(log_component::compile, log_level::info, "starting");
    {
      log_deferral deferred; // a lock may be taken now: the promise no longer holds
      BOOST_TEST(!log_may_wait());
    }
  }
  BOOST_TEST(!log_may_wait());
  BOOST_REQUIRE(seen.size() == 1u);
  BOOST_TEST(seen[0].may_wait);
}
