// The Python objects the package hands the extension when its modules are imported
// (cuplug._core._register_hooks), instead of the extension importing package modules by name.
// A lower layer (this extension) then never reaches up into the package: each provider module
// registers what it owns at its own import, and the extension says which module to import when
// it needs a hook that nobody registered.
#pragma once

#include <pybind11/pybind11.h>

namespace cuplug::python::hooks {
namespace py = pybind11;

// What a hook must be, checked when it is registered.
enum class kind { a_class, a_callable, an_array_class, a_flag, a_count };

// X(name, kind, provider module, what the extension uses it for): the fixed set of hooks. The
// provider is the module whose import registers it (named in the error when it is missing).
#define CUPLUG_PYTHON_HOOKS(X)                                                                     \
  X(argument_handler, a_class, "cuplug._driver.arguments",                                         \
    "ArgumentHandler, the base class of the In / Out / InOut kernel arguments")                    \
  X(describe_memory, a_callable, "cuplug._driver.textures",                                        \
    "describe_memory(source, **layout): the device memory a TextureObject or SurfaceObject "       \
    "reads")                                                                                       \
  X(context_destroyed, a_callable, "cuplug._driver.context_cache",                                 \
    "drop(handle, serial), called just before a context is destroyed, while it is valid")          \
  X(kernel_argument_pointer, a_callable, "cuplug._array.interop",                                  \
    "kernel_argument_pointer(obj, stream): the address of a DLPack-only kernel argument")          \
  X(result_type, an_array_class, "cuplug._array.core",                                             \
    "the ArrayBase subclass operations return (GPUArray)")                                         \
  X(dispatch_resolver, a_callable, "cuplug._array.math",                                           \
    "resolve(name, descriptors, out_dtype): the kernel and result dtype of an elementwise "        \
    "operation, on a dispatch-cache miss")                                                         \
  X(dispatch_fallback, a_callable, "cuplug._array.math",                                           \
    "fallback(name, operands, out, stream, error): the operations the dispatch cannot cache")      \
  X(legacy_promotion, a_flag, "cuplug._array.math",                                                \
    "True for NumPy 1's value-based promotion of Python scalars")                                  \
  X(blocks_per_sm, a_count, "cuplug._kernels.engine",                                              \
    "the most blocks of 256 threads per multiprocessor an elementwise launch uses")

enum class hook : int {
#define CUPLUG_HOOK_ENUM(name, what_kind, provider, what) name,
  CUPLUG_PYTHON_HOOKS(CUPLUG_HOOK_ENUM)
#undef CUPLUG_HOOK_ENUM
      count
};

// The registered object, or a null handle when none was registered (call with the GIL).
py::handle get(hook h) noexcept;
// The registered object; RuntimeError naming the hook, `needed_for` and the module whose import
// registers it when none was (call with the GIL).
py::handle require(hook h, const char *needed_for);
// `listener` runs after each registration of `h` (with the GIL): what the extension derived from
// the previous object (caches, copies of a value) is dropped or refreshed there.
void on_register(hook h, void (*listener)());

void init_hooks(py::module_ &m);

} // namespace cuplug::python::hooks
