// One Python value into kernel parameter bytes per struct format code, and the error messages
// that name the argument: shared by the prepared packer and PyCUDA's __call__ dispatch.
#pragma once

#include "launch/arg_packer.hpp"
#include "memory/memory.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace cuplug::python {

// ---- format codes -------------------------------------------------------------------------------

struct code_info {
  char code;
  std::uint8_t size;
  std::uint8_t align;
};

// Native sizes and alignments, as CPython's struct module computes them for '@'.
inline constexpr code_info code_table[] = {
    {'x', 1, 1},
    {'c', 1, 1},
    {'b', 1, 1},
    {'B', 1, 1},
    {'?', sizeof(bool), alignof(bool)},
    {'h', sizeof(short), alignof(short)},
    {'H', sizeof(unsigned short), alignof(unsigned short)},
    {'e', 2, 2},
    {'i', sizeof(int), alignof(int)},
    {'I', sizeof(unsigned), alignof(unsigned)},
    {'l', sizeof(long), alignof(long)},
    {'L', sizeof(unsigned long), alignof(unsigned long)},
    {'q', sizeof(long long), alignof(long long)},
    {'Q', sizeof(unsigned long long), alignof(unsigned long long)},
    {'n', sizeof(std::ptrdiff_t), alignof(std::ptrdiff_t)},
    {'N', sizeof(std::size_t), alignof(std::size_t)},
    {'f', sizeof(float), alignof(float)},
    {'d', sizeof(double), alignof(double)},
    {'F', 2 * sizeof(float), alignof(float)},
    {'D', 2 * sizeof(double), alignof(double)},
    {'P', sizeof(void *), alignof(void *)},
};

inline const code_info *find_code(char c) noexcept {
  for (const code_info &e : code_table)
    if (e.code == c)
      return &e;
  return nullptr;
}

inline std::size_t align_up(std::size_t offset, std::size_t align) noexcept {
  return (offset + align - 1) / align * align;
}

// A slot's struct code as the user wrote it: "i", or "16s" for a 16-byte 's'.
std::string slot_format(char code, std::size_t size);

// ---- error reporting ----------------------------------------------------------------------------

// Where a value was going, for messages: "<routine>: argument #i of kernel 'k' (format 'c')".
struct arg_context {
  const char *routine;
  const std::string &kernel;
  std::size_t index;
  char code;
  std::size_t size;

  std::string where() const {
    std::string s;
    if (routine != nullptr && *routine != '\0')
      s = std::string(routine) + ": ";
    return s + "argument #" + std::to_string(index) + " of kernel '" + kernel + "' (format '" +
           slot_format(code, size) + "')";
  }
};

// Sets `type` with `message` and throws error_already_set.
[[noreturn]] void raise(PyObject *type, const std::string &message);

// TypeError "<where>: expected <expected>, got <type>".
[[noreturn]] void raise_expected(const arg_context &c, const char *expected, PyObject *got);

// The pending Python error's message (str of the exception), clearing it.
std::string pending_message();

// Re-raises the pending Python error as TypeError with the argument's context prepended.
[[noreturn]] void raise_with_context(const arg_context &c);

// ---- device pointers ----------------------------------------------------------------------------

// A DeviceAllocation's address for a kernel: LogicError when it was freed or when its context was
// destroyed (the address may belong to newer memory by then). Flag reads only.
CUdeviceptr allocation_pointer(const device_allocation &alloc);

// ---- one value per format code ------------------------------------------------------------------

// Converts `v` as `slot.code` says and writes it at `dst` (slot.size bytes, 's' zero-padded).
// TypeError for a value the code cannot take, OverflowError for an integer out of its range.
void pack_value(const arg_slot &slot, PyObject *v, unsigned char *dst, const arg_context &c);

} // namespace cuplug::python
