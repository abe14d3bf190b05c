// The allocator test program: the contract suites and the adaptors.
#define BOOST_TEST_MODULE cuplug allocators
#include <boost/test/included/unit_test.hpp>
