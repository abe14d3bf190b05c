// The rng test program: the contract suites and the philox-versus-cuRAND checks.
#define BOOST_TEST_MODULE cuplug rng
#include <boost/test/included/unit_test.hpp>
