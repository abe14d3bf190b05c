// Raw C++ floor for a chain of small kernels: K cuLaunchKernel calls in a loop against the same K
// launches captured once into a CUDA graph and replayed with cuGraphLaunch.
// Usage: raw_graph [--kernels K] [--repeats R] [--ptx-out FILE]
// Prints one line: "raw_graph: loop_us=<best> loop_median_us=<median> graph_us=<best>
// graph_median_us=<median> ..." (per chain of K kernels; bench_graph.py parses it). --ptx-out
// writes the PTX it launched, so Python loads exactly the same kernel.
#include "raw_kernel.hpp"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// A small kernel with a dependency chain through memory: each launch adds one to 256 floats.
const char *const kernel_source = R"(
extern "C" __global__ void bump(float *data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.0f;
}
)";

void check(CUresult r, const char *what) { raw_bench::check("raw_graph", r, what); }

// (best, median) microseconds of run() over `repeats` runs.
template <class Run> std::pair<double, double> timed(int repeats, Run run) {
  run(); // warm-up
  std::vector<double> us;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  return {us.front(), us[us.size() / 2]};
}

} // namespace

int main(int argc, char **argv) {
  int kernels = 1000, repeats = 30;
  const char *ptx_out = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--kernels") && i + 1 < argc)
      kernels = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc)
      repeats = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--ptx-out") && i + 1 < argc)
      ptx_out = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--kernels K] [--repeats R] [--ptx-out FILE]\n", argv[0]);
      return 2;
    }
  }
  if (kernels <= 0 || repeats <= 0) {
    std::fprintf(stderr, "raw_graph: --kernels and --repeats must be positive\n");
    return 2;
  }

  const raw_kernel::loaded_kernel k =
      raw_kernel::load("raw_graph", kernel_source, "bump.cu", "bump", ptx_out);
  const CUfunction function = k.function;
  const char *const name = k.name;
  CUstream stream;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  CUdeviceptr data;
  check(cuMemAlloc(&data, 256 * sizeof(float)), "cuMemAlloc");
  int n = 256;
  void *params[] = {&data, &n};
  auto issue = [&] {
    for (int i = 0; i < kernels; ++i)
      check(cuLaunchKernel(function, 1, 1, 1, 256, 1, 1, 0, stream, params, nullptr),
            "cuLaunchKernel");
  };
  const auto loop = timed(repeats, [&] {
    issue();
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  });

  CUgraph graph;
  check(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture");
  issue();
  check(cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
  CUgraphExec exec;
  check(cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  check(cuGraphUpload(exec, stream), "cuGraphUpload");
  const auto replay = timed(repeats, [&] {
    check(cuGraphLaunch(exec, stream), "cuGraphLaunch");
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  });

  std::printf("raw_graph: loop_us=%.3f loop_median_us=%.3f graph_us=%.3f graph_median_us=%.3f "
              "kernels=%d repeats=%d device=%s\n",
              loop.first, loop.second, replay.first, replay.second, kernels, repeats, name);
  check(cuGraphExecDestroy(exec), "cuGraphExecDestroy");
  check(cuGraphDestroy(graph), "cuGraphDestroy");
  return 0;
}
