// numpy's fixed-size scalar types, found by type pointer, with their value read in place.
#pragma once

#include "driver/context.hpp"
#include "support/convert.hpp"

#include <cstddef>
#include <cstdint>

namespace cuplug::python {

// numpy's fixed-size scalars store their value right after the object header (arrayscalars.h:
// PyObject_HEAD then obval); reading it there avoids a Python call per argument. Every entry is
// verified against tobytes() when the table is built, so a layout change only loses speed.
struct numpy_scalar {
  PyTypeObject *type;
  char code;
  char kind; // numpy dtype kind: b i u f c
  std::uint8_t size;
  std::uint8_t align;
};

struct numpy_types {
  PyTypeObject *ndarray = nullptr;
  PyTypeObject *void_scalar = nullptr;
  PyTypeObject *generic = nullptr;
  numpy_scalar scalars[16];
  int count = 0;
  // Open-addressing table over the scalars' type pointers: lookups are a hash and one or two
  // compares, hit or miss, where a scan of all sixteen would run on every non-scalar argument.
  static constexpr std::size_t slots = 64;
  const numpy_scalar *by_type[slots] = {};

  static std::size_t slot_of(const PyTypeObject *type) noexcept {
    return (reinterpret_cast<std::uintptr_t>(type) >> 4) % slots;
  }
  void index(const numpy_scalar &s) noexcept {
    std::size_t i = slot_of(s.type);
    while (by_type[i] != nullptr)
      i = (i + 1) % slots;
    by_type[i] = &s;
  }
  const numpy_scalar *find(const PyTypeObject *type) const noexcept {
    for (std::size_t i = slot_of(type);; i = (i + 1) % slots) {
      const numpy_scalar *s = by_type[i];
      if (s == nullptr || s->type == type)
        return s;
    }
  }
};

constexpr std::size_t scalar_value_offset = sizeof(PyObject);

// Set once by load_numpy(); an inline variable so that every packer reads it directly.
inline numpy_types *numpy_cache = nullptr;

// Built once under the GIL; the references are leaked on purpose (types live as long as numpy).
[[gnu::noinline]] const numpy_types &load_numpy();

inline const numpy_types &numpy() { return numpy_cache != nullptr ? *numpy_cache : load_numpy(); }

inline const numpy_scalar *find_scalar(PyTypeObject *type) { return numpy().find(type); }

inline const unsigned char *scalar_bytes(PyObject *obj) noexcept {
  return reinterpret_cast<const unsigned char *>(obj) + scalar_value_offset;
}

} // namespace cuplug::python
