// Initialisation (cuInit, which makes each device's primary context), the driver's version and the
// devices: count, names, memory, attributes, PCI bus ids, peer access.
#include "fake_state.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace fake {
namespace {

int device_count_from_env() {
  const char *env = std::getenv("FAKE_CUDA_DEVICE_COUNT");
  if (!env || !*env)
    return default_device_count;
  for (const char *p = env; *p; ++p)
    if (!std::isdigit(static_cast<unsigned char>(*p)))
      return default_device_count;
  return std::min(std::atoi(env), 64);
}

// The board's devices the process sees, in order, as the real driver reads CUDA_VISIBLE_DEVICES
// at cuInit: a comma-separated list of indices; the first entry that is not an index of the
// board (negative, out of range, not a number, or a repeat) ends the list, so "0,2,-1,1" shows
// devices 0 and 2, and "" shows none. GPU UUIDs ("GPU-...") are not modelled: they end the list.
std::vector<int> visible_devices(int board) {
  std::vector<int> visible;
  const char *env = std::getenv("CUDA_VISIBLE_DEVICES");
  for (int d = 0; !env && d < board; ++d)
    visible.push_back(d);
  std::istringstream list(env ? env : "");
  for (std::string entry; env && std::getline(list, entry, ',');) {
    char *end = nullptr;
    long d = std::strtol(entry.c_str(), &end, 10);
    if (end == entry.c_str() || *end != '\0' || d < 0 || d >= board ||
        std::count(visible.begin(), visible.end(), int(d)) != 0)
      break;
    visible.push_back(int(d));
  }
  return visible;
}

CUresult fake_cuInit(unsigned int Flags) {
  FAKE_API_NOINIT(cuInit);
  if (Flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  auto &s = state();
  if (s.initialized)
    return CUDA_SUCCESS;
  std::vector<int> visible = visible_devices(device_count_from_env());
  if (visible.empty())
    return CUDA_ERROR_NO_DEVICE;
  int count = int(visible.size());
  s.device_count = count;
  s.physical = visible;
  s.device_used.assign(count, 0);
  for (int d = 0; d < count; ++d) {
    s.primary.push_back(new_context(d, 0, true));
    auto *pool = new CUmemPoolHandle_st;
    pool->pool.device = d;
    pool->pool.is_default = true;
    s.pools.insert(pool);
    s.default_pools.push_back(pool);
  }
  s.initialized = true;
  return CUDA_SUCCESS;
}

CUresult fake_cuDriverGetVersion(int *driverVersion) {
  FAKE_API_NOINIT(cuDriverGetVersion);
  if (!driverVersion)
    return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = driver_version();
  return CUDA_SUCCESS;
}

// Devices --------------------------------------------------------------------------------------

CUresult fake_cuDeviceGet(CUdevice *device, int ordinal) {
  FAKE_API(cuDeviceGet);
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(ordinal))
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetCount(int *count) {
  FAKE_API(cuDeviceGetCount);
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  *count = state().device_count;
  return CUDA_SUCCESS;
}

void copy_string(char *out, int len, const std::string &text) {
  size_t n = std::min(text.size(), size_t(len - 1));
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

CUresult fake_cuDeviceGetName(char *name, int len, CUdevice dev) {
  FAKE_API(cuDeviceGetName);
  if (!name || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  copy_string(name, len, "cuplug fake device");
  return CUDA_SUCCESS;
}

CUresult fake_cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  FAKE_API(cuDeviceTotalMem);
  if (!bytes)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  *bytes = device_total_memory;
  return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  FAKE_API(cuDeviceGetAttribute);
  if (!pi)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  return device_attribute(pi, attrib, dev);
}

// Parses "[domain:]bus:device[.function]" (hex) into numbers; false if malformed.
bool parse_bus_id(const char *text, unsigned &domain, unsigned &bus, unsigned &device,
                  unsigned &function) {
  std::vector<unsigned long> parts;
  const char *p = text;
  function = 0;
  while (true) {
    char *end = nullptr;
    if (!std::isxdigit(static_cast<unsigned char>(*p)))
      return false;
    parts.push_back(std::strtoul(p, &end, 16));
    p = end;
    if (*p == ':') {
      ++p;
      continue;
    }
    if (*p == '.') {
      char *fend = nullptr;
      if (!std::isxdigit(static_cast<unsigned char>(p[1])))
        return false;
      function = unsigned(std::strtoul(p + 1, &fend, 16));
      p = fend;
    }
    break;
  }
  if (*p != '\0')
    return false;
  if (parts.size() == 3) {
    domain = unsigned(parts[0]);
    bus = unsigned(parts[1]);
    device = unsigned(parts[2]);
  } else if (parts.size() == 2) {
    domain = 0;
    bus = unsigned(parts[0]);
    device = unsigned(parts[1]);
  } else {
    return false;
  }
  return true;
}

CUresult fake_cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId) {
  FAKE_API(cuDeviceGetByPCIBusId);
  if (!dev || !pciBusId)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned domain, bus, device, function;
  if (!parse_bus_id(pciBusId, domain, bus, device, function))
    return CUDA_ERROR_INVALID_VALUE;
  for (int d = 0; d < state().device_count; ++d) {
    int want_bus = 0, want_domain = 0;
    device_attribute(&want_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d);
    device_attribute(&want_domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);
    if (unsigned(want_bus) == bus && unsigned(want_domain) == domain && device == 0 &&
        function == 0) {
      *dev = d;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_DEVICE;
}

CUresult fake_cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
  FAKE_API(cuDeviceGetPCIBusId);
  if (!valid_device(dev))
    return CUDA_ERROR_INVALID_DEVICE;
  std::string id = pci_bus_id(dev);
  if (!pciBusId || len <= int(id.size()))
    return CUDA_ERROR_INVALID_VALUE; // never truncated
  copy_string(pciBusId, len, id);
  return CUDA_SUCCESS;
}

CUresult fake_cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev) {
  FAKE_API(cuDeviceCanAccessPeer);
  if (!canAccessPeer)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev) || !valid_device(peerDev))
    return CUDA_ERROR_INVALID_DEVICE;
  *canAccessPeer = dev != peerDev && state().peer_access ? 1 : 0;
  return CUDA_SUCCESS;
}

// Primary contexts -----------------------------------------------------------------------------

} // namespace

void add_device_entries(entry_table &t) {
  FAKE_REGISTER(t, cuInit);
  FAKE_REGISTER(t, cuDriverGetVersion);
  FAKE_REGISTER(t, cuDeviceGet);
  FAKE_REGISTER(t, cuDeviceGetCount);
  FAKE_REGISTER(t, cuDeviceGetName);
  FAKE_REGISTER(t, cuDeviceTotalMem);
  FAKE_REGISTER(t, cuDeviceGetAttribute);
  FAKE_REGISTER(t, cuDeviceGetByPCIBusId);
  FAKE_REGISTER(t, cuDeviceGetPCIBusId);
  FAKE_REGISTER(t, cuDeviceCanAccessPeer);
}

} // namespace fake
