// Tests core/src/compiler.cpp: every call of the compiler door translates what a plugin throws,
// with an in-test compiler.
#define BOOST_TEST_MODULE compiler
#include <boost/test/included/unit_test.hpp>

#include "door_support.hpp"

#include <cuplug/compiler.hpp>

using namespace cuplug;
using door_test::failure;

namespace {

class fake_compiler : public compiler {
public:
  fake_compiler() { set_backend_name("fake_cc"); }
  failure fail = failure::none;

private:
  compiled_image do_compile(const compile_request &r) override {
    door_test::raise(fail);
    compiled_image out;
    out.data = r.source;
    return out;
  }
  std::string do_version() const override {
    door_test::raise(fail);
    return "fake 1.0";
  }
  std::vector<int> do_supported_archs() const override {
    door_test::raise(fail);
    return {75, 90};
  }
};

} // namespace

BOOST_AUTO_TEST_CASE(every_call_translates_foreign_exceptions) {
  fake_compiler c;
  compile_request r;
  r.source = "__global__ void k() {}";
  door_test::check_translation("compiler", "fake_cc", "compile", c.fail,
                               [&] { (void)c.compile(r); });
  door_test::check_translation("compiler", "fake_cc", "version", c.fail,
                               [&] { (void)c.version(); });
  door_test::check_translation("compiler", "fake_cc", "supported_archs", c.fail,
                               [&] { (void)c.supported_archs(); });
}

BOOST_AUTO_TEST_CASE(values_pass_through_the_door) {
  fake_compiler c;
  BOOST_TEST(c.version() == "fake 1.0");
  BOOST_TEST((c.supported_archs() == std::vector<int>{75, 90}));
  compile_request r;
  r.source = "x";
  BOOST_TEST(c.compile(r).data == "x");
  r.source = " \n";
  BOOST_CHECK_THROW((void)c.compile(r), std::invalid_argument);
}
