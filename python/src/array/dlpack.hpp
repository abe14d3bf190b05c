// The DLPack 1.1 exchange structs (dmlc/dlpack include/dlpack/dlpack.h), written from the spec:
// no dlpack package ships the header, and these few frozen structs are all that crosses.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuplug::dlpack {

// The ABI version cuplug produces; a consumer accepts any 1.x (only enums grow in minors).
constexpr std::uint32_t major_version = 1;
constexpr std::uint32_t minor_version = 1;

// Capsule names: a consumer renames the capsule to the "used_" name when it takes ownership.
constexpr const char *legacy_name = "dltensor";
constexpr const char *legacy_used_name = "used_dltensor";
constexpr const char *versioned_name = "dltensor_versioned";
constexpr const char *versioned_used_name = "used_dltensor_versioned";

enum DLDeviceType : std::int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLCUDAManaged = 13,
};

enum DLDataTypeCode : std::uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
};

constexpr std::uint64_t flag_read_only = 1ull << 0;
constexpr std::uint64_t flag_is_copied = 1ull << 1;

struct DLPackVersion {
  std::uint32_t major;
  std::uint32_t minor;
};

struct DLDevice {
  std::int32_t device_type; // a DLDeviceType
  std::int32_t device_id;
};

struct DLDataType {
  std::uint8_t code; // a DLDataTypeCode
  std::uint8_t bits;
  std::uint16_t lanes;
};

struct DLTensor {
  void *data; // null for zero-size tensors
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t *shape;
  std::int64_t *strides; // in elements; null means compact row-major (legacy producers only)
  std::uint64_t byte_offset;
};

// The legacy (pre-1.0) managed tensor, capsule "dltensor".
struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(DLManagedTensor *self);
};

// The 1.x managed tensor, capsule "dltensor_versioned". Everything up to `flags` stays put in
// every future major version, so a consumer can always call the deleter.
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(DLManagedTensorVersioned *self);
  std::uint64_t flags;
  DLTensor dl_tensor;
};

// The layout other libraries read: frozen here so a change cannot pass unnoticed (LP64).
static_assert(sizeof(void *) != 8 || sizeof(DLTensor) == 48, "DLTensor layout");
static_assert(offsetof(DLTensor, device) == sizeof(void *), "DLTensor::device");
static_assert(sizeof(void *) != 8 || offsetof(DLTensor, dtype) == 20, "DLTensor::dtype");
static_assert(sizeof(void *) != 8 || offsetof(DLTensor, shape) == 24, "DLTensor::shape");
static_assert(sizeof(void *) != 8 || offsetof(DLTensor, byte_offset) == 40, "byte_offset");
static_assert(sizeof(void *) != 8 || sizeof(DLManagedTensor) == 64, "DLManagedTensor layout");
static_assert(sizeof(void *) != 8 || offsetof(DLManagedTensorVersioned, flags) == 24, "flags");
static_assert(sizeof(void *) != 8 || offsetof(DLManagedTensorVersioned, dl_tensor) == 32,
              "DLManagedTensorVersioned::dl_tensor");
static_assert(sizeof(void *) != 8 || sizeof(DLManagedTensorVersioned) == 80,
              "DLManagedTensorVersioned layout");

} // namespace cuplug::dlpack
