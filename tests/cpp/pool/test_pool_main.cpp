// The pool kit's test program: size classes, the pool algorithm, make_upstream, the event fences.
#define BOOST_TEST_MODULE cuplug pool kit
#include <boost/test/included/unit_test.hpp>
