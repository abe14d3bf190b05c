// The driver table on every driver cuplug supports: run by ctest against the fake driver posing as
// CUDA 12.0, 12.2, 12.4, 12.8 and 13.0 (FAKE_CUDA_DRIVER_VERSION; unset is 13.0). Contexts,
// streams, memory and launches work on each; entries whose table form is newer than the driver
// are served through a shim over the older form (and the fake counts calls of that form), or
// throw not_supported at the call naming the entry and the driver that has it.
//
// One case reads cudaTypedefs.h again (PFN_<name>_v<version>) and checks driver_api.cpp's list
// of versioned entries against it, so a CUDA header update that changes an entry's form cannot
// go unnoticed.
#define BOOST_TEST_MODULE driver_versions
#include <boost/test/included/unit_test.hpp>

#include "fake_cuda.h"

#include <cuplug/driver_api.hpp>
#include <cuplug/errors.hpp>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

using namespace cuplug;

namespace {

// The version the fake poses as (what cuDriverGetVersion must say).
int posed_version() {
  const char *env = std::getenv("FAKE_CUDA_DRIVER_VERSION");
  return env && *env ? std::atoi(env) : 13000;
}

// Runs `call`, expecting not_supported whose text is exactly `message`.
template <class F> void expect_not_supported(F call, const std::string &message) {
  try {
    call();
    BOOST_ERROR("no not_supported; expected: " << message);
  } catch (const not_supported &e) {
    BOOST_TEST(std::string(e.what()) == message);
  }
}

std::string this_driver() {
  static const std::map<int, std::string> names = {{12000, "CUDA 12.0 (R525)"},
                                                   {12020, "CUDA 12.2 (R535)"},
                                                   {12040, "CUDA 12.4 (R550)"},
                                                   {12080, "CUDA 12.8 (R570)"},
                                                   {13000, "CUDA 13.0 (R580)"}};
  return names.at(posed_version());
}

// A fresh context of device 0, current; destroyed at the end of the scope.
struct fixture {
  CUcontext ctx = nullptr;
  fixture() {
    fake_cuda_reset();
    CUPLUG_CALL(cuInit, 0);
    CUPLUG_CALL(cuCtxCreate, &ctx, nullptr, 0, 0);
  }
  ~fixture() {
    if (ctx)
      driver().cuCtxDestroy(ctx);
  }
};

constexpr const char *ptx_80 = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry add_one(.param .u64 p, .param .u32 n) { ret; }
)";

} // namespace

BOOST_AUTO_TEST_CASE(the_driver_version_and_branch_are_known) {
  BOOST_TEST(driver_version() == posed_version());
  int reported = 0;
  CUPLUG_CALL(cuDriverGetVersion, &reported);
  BOOST_TEST(reported == posed_version());
  BOOST_TEST(driver_branch(12000) == "R525");
  BOOST_TEST(driver_branch(12020) == "R535");
  BOOST_TEST(driver_branch(12070) == "R565");
  BOOST_TEST(driver_branch(12090) == "R575");
  BOOST_TEST(driver_branch(13000) == "R580");
  BOOST_TEST(driver_branch(12150).empty());
  BOOST_TEST(cuda_version_text(12040) == "12.4");
}

BOOST_FIXTURE_TEST_CASE(contexts_streams_memory_and_launches_work, fixture) {
  // cuCtxCreate (the _v4 form in the table) through the shim before 12.5.
  BOOST_TEST(fake_cuda_form_calls("cuCtxCreate", 3020) == (posed_version() < 12050 ? 1u : 0u));
  CUdevice device = -1;
  CUPLUG_CALL(cuCtxGetDevice, &device, nullptr);
  CUPLUG_CALL(cuCtxGetDevice, &device, ctx); // the current one: the shim keeps its meaning
  BOOST_TEST(device == 0);
  CUPLUG_CALL(cuCtxSynchronize, nullptr);
  CUPLUG_CALL(cuCtxSynchronize, ctx);
  const unsigned long long older = posed_version() < 13000 ? 2 : 0;
  BOOST_TEST(fake_cuda_form_calls("cuCtxGetDevice", 2000) == older);
  BOOST_TEST(fake_cuda_form_calls("cuCtxSynchronize", 2000) == older);

  CUstream stream = nullptr;
  CUPLUG_CALL(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
  CUdeviceptr d = 0;
  CUPLUG_CALL(cuMemAlloc, &d, 64);
  const char in[] = "round trip through device memory";
  char out[sizeof in] = {};
  CUPLUG_CALL(cuMemcpyHtoDAsync, d, in, sizeof in, stream);
  CUPLUG_CALL(cuMemcpyDtoHAsync, out, d, sizeof in, stream);
  CUPLUG_CALL(cuStreamSynchronize, stream);
  BOOST_TEST(std::string(out) == in);

  CUmodule module = nullptr;
  CUPLUG_CALL(cuModuleLoadData, &module, ptx_80);
  CUfunction f = nullptr;
  CUPLUG_CALL(cuModuleGetFunction, &f, module, "add_one");
  unsigned n = 16;
  void *args[] = {&d, &n};
  const auto before = fake_cuda_launch_count();
  CUPLUG_CALL(cuLaunchKernel, f, 1, 1, 1, 16, 1, 1, 0, stream, args, nullptr);
  BOOST_TEST(fake_cuda_launch_count() == before + 1);
  CUPLUG_CALL(cuModuleUnload, module);
  CUPLUG_CALL(cuMemFree, d);
  CUPLUG_CALL(cuStreamDestroy, stream);
}

BOOST_FIXTURE_TEST_CASE(ptx_newer_than_the_driver_is_refused_by_it, fixture) {
  const std::string ptx_90 = std::regex_replace(ptx_80, std::regex("8\\.0"), "9.0");
  CUmodule module = nullptr;
  const CUresult r = driver().cuModuleLoadData(&module, ptx_90.c_str());
  BOOST_TEST(r == (posed_version() < 13000 ? CUDA_ERROR_UNSUPPORTED_PTX_VERSION : CUDA_SUCCESS));
  if (r == CUDA_SUCCESS)
    CUPLUG_CALL(cuModuleUnload, module);
}

BOOST_FIXTURE_TEST_CASE(a_non_current_context_needs_cuda_13, fixture) {
  CUcontext other = nullptr;
  CUPLUG_CALL(cuCtxCreate, &other, nullptr, 0, 0); // now current: pop it so `ctx` is again
  CUcontext popped = nullptr;
  CUPLUG_CALL(cuCtxPopCurrent, &popped);
  BOOST_TEST(popped == other);
  CUdevice device = -1;
  if (posed_version() < 13000) {
    expect_not_supported([&] { CUPLUG_CALL(cuCtxSynchronize, other); },
                         "cuCtxSynchronize of a context that is not current needs a CUDA 13.0 "
                         "driver (R580) or newer; this driver is " +
                             this_driver() + ": make the context current first");
    expect_not_supported([&] { CUPLUG_CALL(cuCtxGetDevice, &device, other); },
                         "cuCtxGetDevice of a context that is not current needs a CUDA 13.0 "
                         "driver (R580) or newer; this driver is " +
                             this_driver() + ": make the context current first");
    BOOST_TEST(device == -1);
  } else {
    CUPLUG_CALL(cuCtxSynchronize, other);
    CUPLUG_CALL(cuCtxGetDevice, &device, other);
    BOOST_TEST(device == 0);
  }
  CUPLUG_CALL(cuCtxDestroy, other);
}

BOOST_FIXTURE_TEST_CASE(context_creation_parameters_need_cuda_12_5, fixture) {
  if (posed_version() >= 12050)
    return; // the driver's own cuCtxCreate_v4 answers (the fake: no CIG, no affinity)
  CUexecAffinityParam affinity{};
  affinity.type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
  affinity.param.smCount.val = 8;
  CUctxCreateParams params{};
  params.execAffinityParams = &affinity;
  params.numExecAffinityParams = 1;
  CUcontext other = nullptr;
  expect_not_supported([&] { CUPLUG_CALL(cuCtxCreate, &other, &params, 0, 0); },
                       "cuCtxCreate with CUctxCreateParams (execution affinity or CIG) needs a "
                       "CUDA 12.5 driver (R555) or newer; this driver is " +
                           this_driver());
  BOOST_TEST(other == nullptr);
}

BOOST_FIXTURE_TEST_CASE(entries_newer_than_the_driver_throw_at_the_call, fixture) {
  CUmodule module = nullptr;
  CUPLUG_CALL(cuModuleLoadData, &module, ptx_80);
  CUfunction f = nullptr;
  CUPLUG_CALL(cuModuleGetFunction, &f, module, "add_one");
  std::size_t offset = 0, size = 0;
  const char *name = nullptr;
  if (posed_version() < 12040) {
    BOOST_TEST(driver().cuFuncGetParamInfo == nullptr);
    expect_not_supported([&] { CUPLUG_CALL(cuFuncGetParamInfo, f, 0, &offset, &size); },
                         "cuFuncGetParamInfo needs a CUDA 12.4 driver (R550) or newer; this "
                         "driver is " +
                             this_driver());
  } else {
    CUPLUG_CALL(cuFuncGetParamInfo, f, 1, &offset, &size);
    BOOST_TEST(offset == 8u);
    BOOST_TEST(size == 4u);
  }
  if (posed_version() < 12030) {
    expect_not_supported([&] { CUPLUG_CALL(cuFuncGetName, &name, f); },
                         "cuFuncGetName needs a CUDA 12.3 driver (R545) or newer; this driver "
                         "is " +
                             this_driver());
  } else {
    CUPLUG_CALL(cuFuncGetName, &name, f);
    BOOST_TEST(std::string(name) == "add_one");
  }
  CUPLUG_CALL(cuModuleUnload, module);
}

BOOST_FIXTURE_TEST_CASE(graph_edges_and_capture_info_before_12_3, fixture) {
  const bool older = posed_version() < 12030;
  CUgraph graph = nullptr;
  CUPLUG_CALL(cuGraphCreate, &graph, 0);
  CUgraphNode a = nullptr, b = nullptr, c = nullptr;
  CUPLUG_CALL(cuGraphAddEmptyNode, &a, graph, nullptr, 0);
  CUPLUG_CALL(cuGraphAddEmptyNode, &b, graph, nullptr, 0);
  CUPLUG_CALL(cuGraphAddEmptyNode, &c, graph, nullptr, 0);
  CUPLUG_CALL(cuGraphAddDependencies, graph, &a, &b, nullptr, 1);
  BOOST_TEST(fake_cuda_form_calls("cuGraphAddDependencies", 10000) == (older ? 1u : 0u));
  CUgraphEdgeData edge{};
  if (older) {
    // Zeroed edge data is what null edge data means: the older form makes exactly that edge.
    CUPLUG_CALL(cuGraphAddDependencies, graph, &b, &c, &edge, 1);
    edge.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
    expect_not_supported([&] { CUPLUG_CALL(cuGraphAddDependencies, graph, &a, &c, &edge, 1); },
                         "cuGraphAddDependencies with edge data other than the default needs a "
                         "CUDA 12.3 driver (R545) or newer; this driver is " +
                             this_driver());
  }
  CUPLUG_CALL(cuGraphDestroy, graph);

  CUstream stream = nullptr;
  CUPLUG_CALL(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
  CUPLUG_CALL(cuStreamBeginCapture, stream, CU_STREAM_CAPTURE_MODE_RELAXED);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUPLUG_CALL(cuStreamGetCaptureInfo, stream, &status, &id, nullptr, nullptr, nullptr, nullptr);
  BOOST_TEST(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  BOOST_TEST(fake_cuda_form_calls("cuStreamGetCaptureInfo", 11030) == (older ? 1u : 0u));
  const CUgraphNode *deps = nullptr;
  const CUgraphEdgeData *edges = nullptr;
  std::size_t count = 0;
  if (older)
    expect_not_supported(
        [&] {
          CUPLUG_CALL(cuStreamGetCaptureInfo, stream, &status, nullptr, nullptr, &deps, &edges,
                      &count);
        },
        "cuStreamGetCaptureInfo with edgeData_out needs a CUDA 12.3 driver (R545) or newer; this "
        "driver is " +
            this_driver());
  else
    CUPLUG_CALL(cuStreamGetCaptureInfo, stream, &status, nullptr, nullptr, &deps, &edges, &count);
  CUgraph captured = nullptr;
  CUPLUG_CALL(cuStreamEndCapture, stream, &captured);
  CUPLUG_CALL(cuGraphDestroy, captured);
  CUPLUG_CALL(cuStreamDestroy, stream);
}

BOOST_AUTO_TEST_CASE(what_this_driver_lacks_is_listed) {
  const int v = posed_version();
  const auto entries = driver_entries_after_oldest();
  BOOST_TEST(entries.size() == 7u);
  for (const auto &e : entries) {
    BOOST_TEST(e.version == driver_entry_version(e.name.c_str()));
    BOOST_TEST(e.native == (v >= e.version), e.name);
    const bool has_older = e.name != "cuFuncGetName" && e.name != "cuFuncGetParamInfo";
    BOOST_TEST(e.shimmed == (!e.native && has_older), e.name);
  }
  BOOST_TEST(driver_entry_version("cuMemAlloc") == oldest_driver_version);
  BOOST_TEST(driver_entry_version("cuCtxSynchronize") == 13000);
  BOOST_TEST(driver_entry_version("cuNoSuchEntry") == 0);
  // driver_symbol never asks a driver for a newer form than it has.
  BOOST_TEST((driver_symbol("cuMemAlloc", 13000) != nullptr) == (v >= 13000));
  BOOST_TEST(driver_symbol("cuMemAlloc", 3020) != nullptr);
}

// cudaTypedefs.h's parameter lists of every form of every entry: name -> version -> parameters.
std::map<std::string, std::map<int, std::string>> typedef_forms() {
  std::map<std::string, std::map<int, std::string>> forms;
  const std::regex pfn(R"(typedef\s+CUresult\s*\(CUDAAPI\s*\*PFN_(\w+?)_v(\d+)\)\s*\(([^;]*)\);)");
  for (const char *file : {"cudaTypedefs.h", "cudaGLTypedefs.h", "cudaProfilerTypedefs.h"}) {
    std::ifstream in(std::string(CUPLUG_TEST_CUDA_INCLUDE_DIR) + "/" + file);
    BOOST_REQUIRE_MESSAGE(in, "cannot read " << CUPLUG_TEST_CUDA_INCLUDE_DIR << "/" << file);
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (std::sregex_iterator it(s.begin(), s.end(), pfn), end; it != end; ++it) {
      // Parameter names differ between forms; only the spacing-normalised text is compared.
      const std::string params = std::regex_replace((*it)[3].str(), std::regex("\\s+"), " ");
      forms[(*it)[1]][std::stoi((*it)[2])] = params;
    }
  }
  return forms;
}

BOOST_AUTO_TEST_CASE(the_versioned_entries_match_cuda_typedefs) {
  const auto forms = typedef_forms();
#define CUPLUG_TEST_ENTRY_NAME(...) #__VA_ARGS__,
  const char *entries[] = {CUPLUG_DRIVER_FUNCTIONS(CUPLUG_TEST_ENTRY_NAME)};
#undef CUPLUG_TEST_ENTRY_NAME
  int versioned = 0;
  for (const char *entry : entries) {
    const std::string name(entry, std::strcspn(entry, ","));
    auto it = forms.find(name);
    BOOST_TEST_REQUIRE((it != forms.end()), "no PFN_" << name << "_v* in cudaTypedefs.h");
    // The table's form: the newest at or before CUDA_VERSION; 12.0's: the newest at or before it.
    std::string table_form, form_12_0;
    int table_version = 0;
    for (const auto &[version, params] : it->second) {
      if (version <= CUDA_VERSION) {
        table_form = params;
        table_version = version;
      }
      if (version <= oldest_driver_version)
        form_12_0 = params;
    }
    const int expected = table_version > oldest_driver_version && table_form != form_12_0
                             ? table_version
                             : oldest_driver_version;
    BOOST_TEST(driver_entry_version(name.c_str()) == expected,
               name << ": driver_api.cpp's versioned_entries say "
                    << driver_entry_version(name.c_str()) << ", cudaTypedefs.h " << expected);
    versioned += expected != oldest_driver_version;
  }
  BOOST_TEST(versioned == 7);
}
