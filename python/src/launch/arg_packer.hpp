// Kernel argument packing: PyCUDA's struct-format layouts (prepared calls, arg_format.cpp,
// kernel_fit.cpp) and its per-argument type dispatch (Function.__call__, call_dispatch.cpp),
// written into one parameter buffer with native alignment.
#pragma once

#include "driver/context.hpp"
#include "support/convert.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cuplug::python {

// The kernel's parameters as the driver reports them: (offset, size) per parameter.
using param_layout = std::vector<std::pair<std::size_t, std::size_t>>;

// One Python argument's place in the parameter buffer.
struct arg_slot {
  char code;            // struct format code: b B h H i I l L q Q n N e f d F D P ? c s
  std::uint32_t offset; // byte offset in the buffer
  std::uint32_t size;   // bytes ("%ds": the declared length)
};

// A parsed prepare() format. Slots hold one entry per Python argument ('x' padding has none).
struct arg_layout {
  std::string format;
  std::vector<arg_slot> slots;
  std::size_t bytes = 0; // size of the packed buffer
};

// Parses PyCUDA's arg_format (native size and alignment, as CPython's struct with '@'; plus
// 'F'/'D' complex and 'e' half). Throws ValueError naming the bad character.
arg_layout parse_arg_format(const std::string &format);

// Moves `layout`'s slots to the kernel's own parameter offsets after checking that the count
// and every size agree; TypeError naming the kernel, the parameter and both sizes otherwise.
// `routine` prefixes the message ("prepare").
void fit_to_kernel(arg_layout &layout, const param_layout &params, const std::string &kernel,
                   const char *routine);

// The packed parameters: inline storage for the usual few hundred bytes, heap beyond that.
class arg_buffer {
public:
  arg_buffer() = default;
  arg_buffer(const arg_buffer &) = delete;
  arg_buffer &operator=(const arg_buffer &) = delete;

  unsigned char *data() noexcept { return heap_ ? heap_.get() : inline_; }
  std::size_t size() const noexcept { return size_; }
  // Sets the size; bytes past the old size are zero (struct padding is zero, as PyCUDA's).
  // Inline: both packers call it on every launch.
  void resize(std::size_t bytes) {
    if (bytes > capacity_) {
      std::size_t capacity = std::max(bytes, capacity_ * 2);
      std::unique_ptr<unsigned char[]> grown(new unsigned char[capacity]);
      std::memcpy(grown.get(), data(), size_);
      heap_ = std::move(grown);
      capacity_ = capacity;
    }
    if (bytes > size_)
      std::memset(data() + size_, 0, bytes - size_);
    size_ = bytes;
  }
  // Sets the size with every byte zero.
  void assign_zero(std::size_t bytes) {
    size_ = 0;
    resize(bytes);
  }

private:
  static constexpr std::size_t inline_capacity = 512;
  alignas(16) unsigned char inline_[inline_capacity];
  std::unique_ptr<unsigned char[]> heap_;
  std::size_t capacity_ = inline_capacity;
  std::size_t size_ = 0;
};

// Prepared mode: packs args[0..nargs) as `layout` says. TypeError for a wrong count or a value
// the format code cannot take, OverflowError for an integer out of the code's range; messages
// name `routine`, the kernel and the 0-based argument index.
void pack_prepared(const arg_layout &layout, PyObject *const *args, std::size_t nargs,
                   arg_buffer &out, const std::string &kernel, const char *routine);

// __call__ mode: PyCUDA's type dispatch (spec §1.11). In/Out/InOut arguments are appended to
// `handlers` (they need pre_call/post_call); once every argument is classified, each handler's
// check() runs, and only then their get_device_alloc(), so a bad handler allocates nothing. With
// `params` (the kernel's layout) the count and each argument's size are checked and arguments go to
// the kernel's offsets; without it they go where CPython's struct would put them. TypeError
// "invalid type on parameter #i (0-based)" for anything else. With `launch_stream` (a stream as
// to_stream takes it; None is the legacy default) foreign device arrays are ordered on it: the
// producer's stream of a CUDA Array Interface v3, DLPack's stream argument. Without (a null
// handle: graph nodes) they are taken as they are. With `kernel_ctx`, a cuplug array of another
// context is ValueError naming both devices (a pointer compare per array argument).
void pack_call(PyObject *const *args, std::size_t nargs, const param_layout *params,
               arg_buffer &out, std::vector<py::object> &handlers, const std::string &kernel,
               py::handle launch_stream = py::handle(), CUcontext kernel_ctx = nullptr);

// The struct code numpy uses for a scalar type or dtype object, as prepare() needs it: the
// dtype's char, or "%ds" for void (structured) dtypes. Empty if `obj` is neither.
std::string numpy_format_code(py::handle obj);

} // namespace cuplug::python
