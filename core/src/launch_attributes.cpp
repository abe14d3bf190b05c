// Launch attributes checked before cuLaunchKernelEx: what the driver would refuse with a bare
// CUDA_ERROR_INVALID_VALUE (or, for a cooperative grid too large, CUDA_ERROR_COOPERATIVE_LAUNCH_
// TOO_LARGE) is refused here with the limit named.
#include "launch_attributes.hpp"

#include <cuplug/driver_api.hpp>

#include <stdexcept>
#include <string>

namespace cuplug::detail {
namespace {

constexpr unsigned portable_cluster_blocks = 8;

std::string dims(const dim3 &d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

int device_attribute(CUdevice dev, CUdevice_attribute attribute) {
  int value = 0;
  CUPLUG_CALL(cuDeviceGetAttribute, &value, attribute, dev);
  return value;
}

CUdevice current_device() {
  CUdevice dev = 0;
  CUPLUG_CALL(cuCtxGetDevice, &dev, nullptr);
  return dev;
}

void check_cluster(launcher &l, CUfunction function, const launch_config &c, const dim3 &k,
                   CUdevice dev) {
  if (k.x == 0 || k.y == 0 || k.z == 0)
    throw std::invalid_argument("cluster " + dims(k) + " has size 0 along an axis");
  if (!device_attribute(dev, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH))
    throw std::invalid_argument(
        "this device cannot launch thread-block clusters (device_attribute.CLUSTER_LAUNCH is 0; "
        "clusters need compute capability 9.0 or newer)");
  const unsigned g[3] = {c.grid.x, c.grid.y, c.grid.z}, kk[3] = {k.x, k.y, k.z};
  const char *axis[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i)
    if (g[i] % kk[i] != 0)
      throw std::invalid_argument("grid " + dims(c.grid) + " is not a multiple of cluster " +
                                  dims(k) + " along " + axis[i] +
                                  ": each grid dimension must be a whole number of clusters");
  const unsigned long long blocks = 1ull * k.x * k.y * k.z;
  if (blocks <= portable_cluster_blocks)
    return;
  if (!l.function_attribute(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED))
    throw std::invalid_argument(
        "cluster " + dims(k) + " has " + std::to_string(blocks) +
        " blocks; the portable limit is " + std::to_string(portable_cluster_blocks) +
        ": allow more with set_attribute(function_attribute.NON_PORTABLE_CLUSTER_SIZE_ALLOWED, "
        "1) where the device supports them (16 on H100)");
  constexpr unsigned non_portable_limit = 16; // every device with clusters so far
  if (blocks > non_portable_limit)
    throw std::invalid_argument("cluster " + dims(k) + " has " + std::to_string(blocks) +
                                " blocks; the non-portable limit is " +
                                std::to_string(non_portable_limit));
}

void check_cooperative(launcher &l, CUfunction function, const launch_config &c, CUdevice dev) {
  if (!device_attribute(dev, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH))
    throw std::invalid_argument("this device cannot make cooperative launches "
                                "(device_attribute.COOPERATIVE_LAUNCH is 0)");
  const int threads = static_cast<int>(c.block.x * c.block.y * c.block.z);
  const int per_sm = l.max_active_blocks_per_multiprocessor(function, threads, c.shared_bytes);
  const int sms = device_attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  const unsigned long long blocks = 1ull * c.grid.x * c.grid.y * c.grid.z;
  const unsigned long long resident = 1ull * per_sm * sms;
  if (blocks > resident)
    throw std::invalid_argument(
        "cooperative launch of grid " + dims(c.grid) + " (" + std::to_string(blocks) +
        " blocks) cannot have all its blocks resident at once: at most " +
        std::to_string(resident) + " (" + std::to_string(per_sm) + " blocks of " +
        std::to_string(threads) + " threads per multiprocessor x " + std::to_string(sms) +
        " multiprocessors); use a smaller grid or block");
}

} // namespace

void check_launch_attributes(launcher &l, CUfunction function, const launch_config &config,
                             const launch_attributes &attrs) {
  if (!attrs.has_cluster() && !attrs.cooperative)
    return;
  const CUdevice dev = current_device();
  if (attrs.has_cluster())
    check_cluster(l, function, config, attrs.cluster, dev);
  if (attrs.cooperative)
    check_cooperative(l, function, config, dev);
}

} // namespace cuplug::detail
