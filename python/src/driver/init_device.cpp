// Driver initialisation, versions and Device (spec §1.2, §1.4).
#include "bindings.hpp"
#include "driver/device.hpp"
#include "support/hints.hpp"

#include <cctype>
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

// Looked up per call rather than kept: these methods are rare, and a kept reference would
// outlive the interpreter.
py::object core_attr(const char *name) { return py::module_::import("cuplug._core").attr(name); }

// {device_attribute: value} for every attribute (PyCUDA's Device.get_attributes); the driver's
// refusals (LogicError) become warnings, so one unsupported attribute does not lose the rest.
py::dict device_attributes(py::object self) {
  py::object attributes = core_attr("device_attribute");
  py::object logic_error = core_attr("LogicError");
  py::dict result;
  for (py::handle name : py::reinterpret_steal<py::list>(PyObject_Dir(attributes.ptr()))) {
    const std::string att_name = name.cast<std::string>();
    if (att_name.empty() || !std::isupper(static_cast<unsigned char>(att_name[0])))
      continue;
    py::object att_id = attributes.attr(name);
    try {
      result[att_id] = self.attr("get_attribute")(att_id);
    } catch (py::error_already_set &e) {
      if (!e.matches(logic_error))
        throw;
      const std::string message = "CUDA driver raised '" + std::string(py::str(e.value())) +
                                  "' when querying '" + att_name + "' on '" +
                                  std::string(py::str(self)) + "'";
      if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) < 0)
        throw py::error_already_set();
    }
  }
  return result;
}

// dev.multiprocessor_count == dev.get_attribute(device_attribute.MULTIPROCESSOR_COUNT).
py::object device_getattr(py::object self, const py::str &name) {
  const py::str upper = name.attr("upper")();
  py::object attributes = core_attr("device_attribute");
  if (!py::hasattr(attributes, upper))
    throw py::attribute_error("'Device' object has no attribute '" + std::string(name) +
                              "' (nor is '" + std::string(upper) + "' a device_attribute)");
  return self.attr("get_attribute")(attributes.attr(upper));
}

} // namespace

void init_device(py::module_ &m) {
  m.def(
      "init", [](unsigned flags) { CUPLUG_CALL_NOGIL(cuInit, flags); }, py::arg("flags") = 0,
      "Initialises the driver (cuInit). Idempotent; call before anything else." CUPLUG_DOC_PARAMS
      "flags : int\n    Must be 0.\n");
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
  // Scope Nsight Systems / ncu captures (--capture-range=cudaProfilerApi) in the current context.
  m.def(
      "start_profiler", [] { CUPLUG_CALL_NOGIL(cuProfilerStart); },
      "Starts profiler collection in the current context (cuProfilerStart): what Nsight Systems "
      "and Nsight Compute record with --capture-range=cudaProfilerApi.");
  m.def(
      "stop_profiler", [] { CUPLUG_CALL_NOGIL(cuProfilerStop); },
      "Stops profiler collection in the current context (cuProfilerStop), flushing its data.");

  py::class_<device>(m, "Device", "A CUDA device, by ordinal or PCI bus id.")
      .def(py::init(&device_from_ordinal), py::arg("number"),
           "The device of an ordinal." CUPLUG_DOC_PARAMS
           "number : int\n    0 to Device.count() - 1 (CUDA_VISIBLE_DEVICES order).\n")
      .def(py::init(&device_from_pci_bus_id), py::arg("pci_bus_id"),
           "The device at a PCI bus id." CUPLUG_DOC_PARAMS
           "pci_bus_id : str\n    As pci_bus_id() writes it: 'domain:bus:device.function'.\n")
      .def_static(
          "count",
          [] {
            int count;
            CUPLUG_CALL(cuDeviceGetCount, &count);
            return count;
          },
          "How many devices the driver sees (cuDeviceGetCount).")
      .def(
          "name",
          [](const device &dev) {
            char buffer[256] = {};
            CUPLUG_CALL(cuDeviceGetName, buffer, static_cast<int>(sizeof(buffer) - 1), dev.handle);
            return std::string(buffer);
          },
          "The device's name, e.g. 'NVIDIA H100 80GB HBM3'.")
      .def(
          "pci_bus_id",
          [](const device &dev) {
            char buffer[64] = {};
            CUPLUG_CALL(cuDeviceGetPCIBusId, buffer, static_cast<int>(sizeof(buffer) - 1),
                        dev.handle);
            return std::string(buffer);
          },
          "The device's PCI bus id, 'domain:bus:device.function'.")
      .def(
          "compute_capability",
          [](const device &dev) {
            return py::make_tuple(attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                  attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
          },
          "(major, minor) compute capability, e.g. (9, 0).")
      .def(
          "total_memory",
          [](const device &dev) {
            size_t bytes;
            CUPLUG_CALL(cuDeviceTotalMem, &bytes, dev.handle);
            return bytes;
          },
          "The device's memory, in bytes.")
      .def(
          "get_attribute",
          [](const device &dev, int attr) -> hint::device_attribute_value {
            int value = attribute(dev, static_cast<CUdevice_attribute>(attr));
            if (attr == CU_DEVICE_ATTRIBUTE_COMPUTE_MODE)
              return py::cast(static_cast<CUcomputemode>(value));
            return py::int_(value);
          },
          py::arg("attr"),
          "The value of a device attribute (cuDeviceGetAttribute)." CUPLUG_DOC_PARAMS
          "attr : device_attribute\n    Which one.\n" CUPLUG_DOC_RETURNS
          "int | compute_mode\n    Its value; COMPUTE_MODE gives a compute_mode.\n")
      .def(
          "can_access_peer",
          [](const device &dev, const device &other) {
            int result;
            CUPLUG_CALL(cuDeviceCanAccessPeer, &result, dev.handle, other.handle);
            return result != 0;
          },
          py::arg("other"),
          "Whether contexts on this device can access `other`'s memory "
          "(cuDeviceCanAccessPeer)." CUPLUG_DOC_PARAMS "other : Device\n    The peer device.\n")
      .def(
          "__eq__", [](const device &a, const device &b) { return a.handle == b.handle; },
          py::arg("other"))
      .def(
          "__eq__",
          [](const device &, py::handle) {
            return py::reinterpret_borrow<py::object>(Py_NotImplemented);
          },
          py::arg("other"))
      .def("get_attributes", &device_attributes,
           "{device_attribute: value} for every attribute; attributes the driver refuses are "
           "left out with a warning.")
      .def("__getattr__", &device_getattr, py::arg("name"),
           "Lower-case device_attribute names read the attribute: dev.warp_size.")
      .def_property_readonly(
          "ordinal", [](const device &dev) { return static_cast<int>(dev.handle); },
          "The device's number, as given to Device(n).")
      .def("__hash__", [](const device &dev) { return py::hash(py::int_(dev.handle)); })
      .def("__repr__",
           [](const device &dev) { return "<Device " + std::to_string(dev.handle) + ">"; });
}

} // namespace cuplug::python
