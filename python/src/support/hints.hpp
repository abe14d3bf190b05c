// Typed stand-ins for py::object arguments and results: what help(), the stubs and Sphinx show
// as the Python type a binding takes ("Stream | None"), where a bare py::object shows "object".
#pragma once

#include <pybind11/pybind11.h>

namespace cuplug::python::hint {
namespace py = pybind11;

// A py::object that accepts any Python object (the binding checks it, as before) and is named
// Tag::name in signatures. Converts to py::handle / py::object where the code needs those.
template <class Tag> class hinted : public py::object {
public:
  static bool check_(py::handle h) { return h.ptr() != nullptr; }
  hinted() = default;
  hinted(py::handle h, borrowed_t) : py::object(h, borrowed_t{}) {}
  hinted(py::handle h, stolen_t) : py::object(h, stolen_t{}) {}
  hinted(const py::object &o) : py::object(o) {}       // NOLINT(google-explicit-constructor)
  hinted(py::object &&o) : py::object(std::move(o)) {} // NOLINT(google-explicit-constructor)
};

// CUPLUG_HINT(name, "caption") declares hint::name (inside this namespace).
#define CUPLUG_HINT(type_name, caption)                                                            \
  struct type_name##_tag {                                                                         \
    static constexpr auto name = py::detail::const_name(caption);                                  \
  };                                                                                               \
  using type_name = hinted<type_name##_tag>

// A stream: a Stream, an object with __cuda_stream__, or None for the legacy default stream.
CUPLUG_HINT(stream, "Stream | None");
// Device memory: a DeviceAllocation (kept alive while used), or an address as an int.
CUPLUG_HINT(device_ptr, "DeviceAllocation | int");
// Host memory: any object exporting the buffer protocol (a NumPy array, bytes, bytearray...),
// named as pybind11 names py::buffer (typing_extensions.Buffer before Python 3.12).
CUPLUG_HINT(host_buffer, PYBIND11_BUFFER_TYPE_HINT);
// The same, for bindings in cuplug._core's submodules, where the driver's names are not in scope.
CUPLUG_HINT(stream_public, "cuplug.driver.Stream | None");
CUPLUG_HINT(device_ptr_public, "cuplug.driver.DeviceAllocation | int");
// A count of bytes or elements: an int or a NumPy integer.
CUPLUG_HINT(size, "int");
// A context, or None for the current one.
CUPLUG_HINT(context_or_none, "Context | None");
// A CUDA array (cuplug.driver.Array).
CUPLUG_HINT(array, "Array");
// A value for memset: an int (the bit pattern of the element).
CUPLUG_HINT(fill_value, "int");
// A shape: an int or a tuple of ints.
CUPLUG_HINT(shape, "int | tuple[int, ...]");
// A NumPy dtype, or anything numpy.dtype() accepts.
CUPLUG_HINT(dtype, "numpy.typing.DTypeLike");
// An array NumPy accepts (its shape and dtype are used).
CUPLUG_HINT(array_like, "numpy.typing.ArrayLike");
// A str, or None (a name or format that may be unset).
CUPLUG_HINT(str_or_none, "str | None");
// A path or folder name.
CUPLUG_HINT(path, "str | os.PathLike");
// A plugin kind name ("allocator", "compiler", ...).
CUPLUG_HINT(kind, "str");
// A block or grid size: an int or a tuple of up to three ints.
CUPLUG_HINT(dims, "int | tuple[int, ...]");
// A graph's dependencies: GraphNodes, or None for none.
CUPLUG_HINT(nodes, "collections.abc.Sequence[GraphNode] | None");
// A memory order: "C" (row-major) or "F" (column-major).
CUPLUG_HINT(order, "str");
// A pool's upstream: an allocator backend's name, an Allocator, or None for the default.
CUPLUG_HINT(upstream, "str | cuplug.memory.Allocator | None");
// A page-locked pool's allocator.
CUPLUG_HINT(host_allocator, "PageLockedAllocator | None");
// A block, grid or cluster shape as read back, or None where unset.
CUPLUG_HINT(dim3_or_none, "tuple[int, int, int] | None");
// A block, grid or cluster shape as given: an int or up to three ints, or None.
CUPLUG_HINT(dims_or_none, "int | tuple[int, ...] | None");
// A count or number that may be unset.
CUPLUG_HINT(int_or_none, "int | None");
// A function_attribute or func_cache member, or its int value.
CUPLUG_HINT(enum_value, "int");
// prepare()'s argument types: a struct format, or one type per argument.
CUPLUG_HINT(arg_types, "str | collections.abc.Sequence");
// Texture references (always empty: removed in CUDA 12).
CUPLUG_HINT(texrefs, "list | None");
// A kernel's parameters: (offset, size) in bytes each, or None where unknown.
CUPLUG_HINT(param_layout, "list[tuple[int, int]] | None");
// A callback, or None.
CUPLUG_HINT(callback, "collections.abc.Callable | None");
// JIT options: (jit_option, value) pairs, or None.
CUPLUG_HINT(jit_options, "list[tuple[jit_option, int]] | None");
// A jit_input_type member or its int value.
CUPLUG_HINT(jit_input, "jit_input_type | int");
// A device attribute's value: an int, or a compute_mode for COMPUTE_MODE.
CUPLUG_HINT(device_attribute_value, "int | compute_mode");
// A Graph (stream capture's result).
CUPLUG_HINT(graph, "Graph");
// An Event (methods returning self).
CUPLUG_HINT(event, "Event");
// A memory_type member or its int value.
CUPLUG_HINT(memory_type, "memory_type | int");
// A bytearray (built by hand from a C buffer).
CUPLUG_HINT(bytearray, "bytearray");
// What a texture object reads.
CUPLUG_HINT(texture_source, "Array | cuplug.gpuarray.GPUArray | DeviceAllocation | int");
// A texture's address modes: one for every dimension, or one per dimension.
CUPLUG_HINT(address_modes, "address_mode | tuple[address_mode, ...]");
// A texture's filter mode.
CUPLUG_HINT(filter_mode, "filter_mode");
// A texture's border color, or None.
CUPLUG_HINT(border_color, "tuple[float, float, float, float] | None");
// A graph node, or a sequence of them.
CUPLUG_HINT(node_or_nodes, "GraphNode | collections.abc.Sequence[GraphNode]");
// An array element format: an array_format member or its int value.
CUPLUG_HINT(array_format, "array_format | int");

} // namespace cuplug::python::hint

namespace pybind11::detail {
template <class Tag> struct handle_type_name<cuplug::python::hint::hinted<Tag>> {
  static constexpr auto name = Tag::name;
};
} // namespace pybind11::detail

// NumPy-style docstring sections shared by many bindings (napoleon renders them).
#define CUPLUG_DOC_PARAMS "\n\nParameters\n----------\n"
#define CUPLUG_DOC_RETURNS "\n\nReturns\n-------\n"
#define CUPLUG_DOC_STREAM_PARAM                                                                    \
  "stream : Stream | None\n    The stream the work is ordered on; None: the legacy default "       \
  "stream.\n"
