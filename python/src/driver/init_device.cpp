// Driver initialisation, versions and Device (spec §1.2, §1.4).
#include "driver/device.hpp"
#include "bindings.hpp"

#include <string>

namespace cuplug::python {
namespace {

device device_from_ordinal(int ordinal) {
  CUdevice handle;
  CUPLUG_CALL(cuDeviceGet, &handle, ordinal);
  return {handle};
}

device device_from_pci_bus_id(const std::string &bus_id) {
  CUdevice handle;
  CUPLUG_CALL(cuDeviceGetByPCIBusId, &handle, bus_id.c_str());
  return {handle};
}

int attribute(const device &dev, CUdevice_attribute attr) {
  int value;
  CUPLUG_CALL(cuDeviceGetAttribute, &value, attr, dev.handle);
  return value;
}

} // namespace

void init_device(py::module_ &m) {
  m.def(
      "init", [](unsigned flags) { CUPLUG_CALL_NOGIL(cuInit, flags); }, py::arg("flags") = 0,
      "Initialises the driver (cuInit). Idempotent; call before anything else.");
  m.def(
      "get_version",
      [] {
        return py::make_tuple(CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10, CUDA_VERSION % 10);
      },
      "(major, minor, revision) of the CUDA headers cuplug was built with.");
  m.def(
      "get_driver_version",
      [] {
        int version;
        CUPLUG_CALL(cuDriverGetVersion, &version);
        return version;
      },
      "The installed driver's CUDA version as an int, e.g. 13000.");

  py::class_<device>(m, "Device", "A CUDA device, by ordinal or PCI bus id.")
      .def(py::init(&device_from_ordinal), py::arg("number"))
      .def(py::init(&device_from_pci_bus_id), py::arg("pci_bus_id"))
      .def_static("count",
                  [] {
                    int count;
                    CUPLUG_CALL(cuDeviceGetCount, &count);
                    return count;
                  })
      .def("name",
           [](const device &dev) {
             char buffer[256] = {};
             CUPLUG_CALL(cuDeviceGetName, buffer, static_cast<int>(sizeof(buffer) - 1), dev.handle);
             return std::string(buffer);
           })
      .def("pci_bus_id",
           [](const device &dev) {
             char buffer[64] = {};
             CUPLUG_CALL(cuDeviceGetPCIBusId, buffer, static_cast<int>(sizeof(buffer) - 1),
                         dev.handle);
             return std::string(buffer);
           })
      .def("compute_capability",
           [](const device &dev) {
             return py::make_tuple(attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                   attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
           })
      .def("total_memory",
           [](const device &dev) {
             size_t bytes;
             CUPLUG_CALL(cuDeviceTotalMem, &bytes, dev.handle);
             return bytes;
           })
      .def(
          "get_attribute",
          [](const device &dev, int attr) -> py::object {
            int value = attribute(dev, static_cast<CUdevice_attribute>(attr));
            if (attr == CU_DEVICE_ATTRIBUTE_COMPUTE_MODE)
              return py::cast(static_cast<CUcomputemode>(value));
            return py::int_(value);
          },
          py::arg("attr"), "The value of a device_attribute; COMPUTE_MODE gives a compute_mode.")
      .def(
          "make_context",
          [](const device &dev, unsigned flags) { return context::create(dev.handle, flags); },
          py::arg("flags") = 0,
          "Creates a context on this device; it becomes current (pushed on this thread's stack).")
      .def(
          "retain_primary_context",
          [](const device &dev) { return context::retain_primary(dev.handle); },
          "The device's primary context, shared with the runtime API and other libraries. It is "
          "not pushed: call push() or use `with ctx:`.")
      .def(
          "can_access_peer",
          [](const device &dev, const device &other) {
            int result;
            CUPLUG_CALL(cuDeviceCanAccessPeer, &result, dev.handle, other.handle);
            return result != 0;
          },
          py::arg("other"))
      .def("__eq__", [](const device &a, const device &b) { return a.handle == b.handle; })
      .def("__eq__",
           [](const device &, py::handle) {
             return py::reinterpret_borrow<py::object>(Py_NotImplemented);
           })
      .def("__hash__", [](const device &dev) { return py::hash(py::int_(dev.handle)); })
      .def("__repr__",
           [](const device &dev) { return "<Device " + std::to_string(dev.handle) + ">"; });
}

} // namespace cuplug::python
