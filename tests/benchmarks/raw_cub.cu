// Raw C++ floor for reductions and scans: CUB's device-wide DeviceReduce::Sum and
// DeviceScan::InclusiveSum on float32, the yardsticks of bench_reduction.py.
// Usage: raw_cub [--bytes N]... [--repeats R]
// Prints per size: "raw_cub: op=sum bytes=<n> GBps=<best> median_GBps=<median>" (GB/s counts the
// bytes read, 1e9 bytes per second) and "raw_cub: op=inclusive_sum ..." (bytes read + written),
// each timed with events around one call, temporary storage allocated once beforehand.
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void check(cudaError_t r, const char *what) {
  if (r != cudaSuccess) {
    std::fprintf(stderr, "raw_cub: %s failed: %s\n", what, cudaGetErrorString(r));
    std::exit(1);
  }
}

__global__ void fill(float *x, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    x[i] = 1.0f + float(i % 7) * 0.25f;
}

template <class Call>
void measure(const char *op, std::size_t bytes, double moved, int repeats, Call call) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  call(); // warm-up
  check(cudaDeviceSynchronize(), "warm-up");
  std::vector<double> gbps;
  for (int r = 0; r < repeats; ++r) {
    check(cudaEventRecord(start), "cudaEventRecord");
    call();
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    gbps.push_back(moved / (ms * 1e-3) / 1e9);
  }
  std::sort(gbps.begin(), gbps.end());
  std::printf("raw_cub: op=%s bytes=%zu GBps=%.1f median_GBps=%.1f\n", op, bytes, gbps.back(),
              gbps[gbps.size() / 2]);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::size_t> sizes;
  int repeats = 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--bytes") && i + 1 < argc)
      sizes.push_back(std::strtoull(argv[++i], nullptr, 10));
    else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc)
      repeats = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: raw_cub [--bytes N]... [--repeats R]\n");
      return 2;
    }
  }
  if (sizes.empty())
    sizes.push_back(std::size_t(1) << 30);
  if (repeats < 1)
    repeats = 1;

  for (std::size_t bytes : sizes) {
    const std::size_t n = bytes / sizeof(float);
    float *x = nullptr, *y = nullptr, *sum = nullptr;
    check(cudaMalloc(&x, n * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&y, n * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&sum, sizeof(float)), "cudaMalloc");
    fill<<<1024, 256>>>(x, n);
    check(cudaGetLastError(), "fill");

    std::size_t reduce_bytes = 0, scan_bytes = 0;
    check(cub::DeviceReduce::Sum(nullptr, reduce_bytes, x, sum, n), "DeviceReduce::Sum size");
    check(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, x, y, n),
          "DeviceScan::InclusiveSum size");
    void *temp = nullptr;
    check(cudaMalloc(&temp, std::max(reduce_bytes, scan_bytes)), "cudaMalloc temp");

    measure("sum", n * sizeof(float), double(n) * sizeof(float), repeats, [&] {
      check(cub::DeviceReduce::Sum(temp, reduce_bytes, x, sum, n), "DeviceReduce::Sum");
    });
    measure("inclusive_sum", n * sizeof(float), 2.0 * double(n) * sizeof(float), repeats, [&] {
      check(cub::DeviceScan::InclusiveSum(temp, scan_bytes, x, y, n), "DeviceScan::InclusiveSum");
    });
    cudaFree(temp);
    cudaFree(sum);
    cudaFree(y);
    cudaFree(x);
  }
  return 0;
}
