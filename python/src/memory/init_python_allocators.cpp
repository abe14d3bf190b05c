// cuplug._core.allocators: the Python face of allocator backends (Allocator, statistics) and
// allocators written in Python, registered by name as real backends.
#include "array/array_memory.hpp"
#include "bindings.hpp"
#include "driver/context.hpp"
#include "memory/context_allocators.hpp"
#include "memory/memory.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"

#include <cuplug/allocator.hpp>
#include <cuplug/backends.hpp>
#include <cuplug/config.hpp>
#include <cuplug/registry.hpp>

#include <atomic>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cuplug::python {
namespace {

memory_kind kind_from_string(const std::string &s, const std::string &who) {
  if (s == "device")
    return memory_kind::device;
  if (s == "managed")
    return memory_kind::managed;
  if (s == "pinned_host" || s == "pinned")
    return memory_kind::pinned_host;
  if (s == "host")
    return memory_kind::host;
  throw py::value_error(who + ".kind is '" + s +
                        "'; expected 'device', 'managed', 'pinned_host' or 'host'");
}

PyObject *cuplug_memory_error = nullptr; // cuplug._core.MemoryError

// What cuMemAlloc guarantees, and what kernels (vector loads) and the pools' size classes
// assume of every block an allocator hands out.
constexpr std::uintptr_t allocation_alignment = 256;

class python_allocator;
// The Python allocate() calls running on this thread, innermost last, each with whether it was
// re-entered: an allocate() that allocates through the selected backend while being that
// backend would call itself without end.
struct allocate_frame {
  const python_allocator *self;
  bool reentered;
};
thread_local std::vector<allocate_frame> running_allocates;

std::string hex(std::uintptr_t value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
  return buf;
}

// The trampoline behind `class MyAllocator(cuplug.memory.Allocator)`. The subclass defines
// allocate(nbytes, stream) -> int and deallocate(ptr, nbytes, stream), with `stream` the CUstream
// handle as an int (0: legacy default stream), and a class attribute `kind` ("device",
// "managed", "pinned_host" or "host"). Optional: free_held() -> int, trim(keep_bytes) -> int,
// bytes_held() -> int. The GIL is taken for every call, so C++ code may call it from any
// thread. A MemoryError (cuplug's or the builtin) raised by allocate() is out of memory, which
// lets pools over it release what they hold and retry.
class python_allocator : public allocator {
public:
  python_allocator() = default;

protected:
  std::size_t do_bytes_held() const override {
    py::gil_scoped_acquire gil;
    py::function f = override_of("bytes_held");
    return f ? to_size(f(), "Allocator.bytes_held()") : 0;
  }

private:
  device_ptr do_allocate(std::size_t bytes, CUstream stream) override {
    py::gil_scoped_acquire gil;
    // Before looking up the override: pybind11 hides an override from itself while it runs,
    // which would otherwise turn a re-entry into a false "must define allocate".
    for (allocate_frame &frame : running_allocates)
      if (frame.self == this) {
        frame.reentered = true;
        throw plugin_error(reentry_message());
      }
    running_allocates.push_back({this, false});
    struct pop_frame {
      ~pop_frame() { running_allocates.pop_back(); }
    } pop;

    py::function f = override_of("allocate");
    if (!f)
      throw py::type_error(class_name() + " must define allocate(self, nbytes, stream) -> int");
    py::object result;
    try {
      result = f(bytes, reinterpret_cast<std::uintptr_t>(stream));
    } catch (py::error_already_set &e) {
      // The re-entry's own message, once, not wrapped in every level it passed through.
      if (running_allocates.back().reentered)
        throw plugin_error(reentry_message());
      if (e.matches(PyExc_MemoryError) ||
          (cuplug_memory_error != nullptr && e.matches(cuplug_memory_error)))
        throw out_of_memory((class_name() + ".allocate").c_str(), bytes, stats_in_use(), 0, 0,
                            py::str(e.value()).cast<std::string>());
      throw plugin_error(raised(e, "allocate"));
    }
    if (result.is_none())
      throw py::type_error(class_name() + ".allocate() returned None instead of a pointer");
    const std::uintptr_t ptr = to_size(result, (class_name() + ".allocate() result").c_str());
    if (ptr % allocation_alignment != 0) {
      give_back(ptr, bytes, stream);
      throw plugin_error(class_name() + ".allocate() returned " + hex(ptr) + ", which is not " +
                         std::to_string(allocation_alignment) +
                         "-byte aligned: every block must start at a multiple of " +
                         std::to_string(allocation_alignment) +
                         " bytes, as cuMemAlloc's do (kernels and pools rely on it); allocate " +
                         std::to_string(allocation_alignment - 1) +
                         " bytes more and round the address up");
    }
    return ptr;
  }

  // A block this class will not hand out goes back to it; a failure there changes nothing for
  // the caller, who gets the error about the block.
  void give_back(std::uintptr_t ptr, std::size_t bytes, CUstream stream) noexcept {
    try {
      if (py::function f = override_of("deallocate"))
        f(ptr, bytes, reinterpret_cast<std::uintptr_t>(stream));
    } catch (py::error_already_set &e) {
      e.discard_as_unraisable(py::str(class_name() + ".deallocate"));
    } catch (...) {
    }
  }

  std::string reentry_message() const {
    return class_name() +
           ".allocate() was called again while it was running on this thread: it allocated "
           "through the selected allocator backend (mem_alloc, a pool, an array), which is this "
           "allocator itself. Take the memory from another backend instead, e.g. "
           "cuplug.memory.create(\"device\").allocate(nbytes, stream)";
  }

  void do_deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) override {
    py::gil_scoped_acquire gil;
    py::function f = override_of("deallocate");
    if (!f)
      throw py::type_error(class_name() + " must define deallocate(self, ptr, nbytes, stream)");
    try {
      f(ptr, bytes, reinterpret_cast<std::uintptr_t>(stream));
    } catch (py::error_already_set &e) {
      throw plugin_error(raised(e, "deallocate"));
    }
  }

  memory_kind do_kind() const override {
    if (const int k = kind_.load(std::memory_order_relaxed); k >= 0)
      return static_cast<memory_kind>(k);
    py::gil_scoped_acquire gil;
    py::object self = self_object();
    // A class attribute, a property or a method of the subclass; not the base class's property,
    // which would come back here.
    py::object base = py::type::of<allocator>().attr("__dict__")["kind"];
    py::object attr = py::getattr(py::type::handle_of(self), "kind", py::none());
    if (attr.is(base) || attr.is_none())
      throw py::type_error(class_name() + " must set the class attribute kind to 'device', " +
                           "'managed', 'pinned_host' or 'host'");
    attr = self.attr("kind");
    if (PyCallable_Check(attr.ptr()))
      attr = attr();
    if (!py::isinstance<py::str>(attr))
      throw py::type_error(class_name() + ".kind must be 'device', 'managed', 'pinned_host' or " +
                           "'host', not " + std::string(py::repr(attr)));
    const memory_kind k = kind_from_string(attr.cast<std::string>(), class_name());
    kind_.store(static_cast<int>(k), std::memory_order_relaxed);
    return k;
  }

  bool do_can_free_held() const override {
    py::gil_scoped_acquire gil;
    return static_cast<bool>(override_of("free_held"));
  }

  std::size_t do_free_held() override {
    py::gil_scoped_acquire gil;
    py::function f = override_of("free_held");
    if (!f)
      throw not_supported(class_name() + " holds no memory to free (it defines no free_held())");
    py::object r = f();
    return r.is_none() ? 0 : to_size(r, "Allocator.free_held()");
  }

  std::size_t do_trim(std::size_t keep_bytes) override {
    py::gil_scoped_acquire gil;
    py::function f = override_of("trim");
    if (!f)
      throw not_supported(class_name() + " cannot trim (it defines no trim(keep_bytes))");
    py::object r = f(keep_bytes);
    return r.is_none() ? 0 : to_size(r, "Allocator.trim()");
  }

  // The Python method overriding `name`, or null; needs the GIL.
  py::function override_of(const char *name) const {
    return py::get_override(static_cast<const allocator *>(this), name);
  }
  py::object self_object() const {
    return py::reinterpret_borrow<py::object>(py::detail::get_object_handle(
        static_cast<const allocator *>(this), py::detail::get_type_info(typeid(allocator))));
  }
  std::string class_name() const {
    py::object self = self_object();
    return self ? type_name(self) : std::string("Allocator");
  }
  std::size_t stats_in_use() const { return allocator::stats().bytes_in_use; }
  // "<Class>.<method>() raised <Type>: <message>", without error_already_set's traceback.
  std::string raised(py::error_already_set &e, const char *method) const {
    return class_name() + "." + method + "() raised " + type_name(e.value()) + ": " +
           py::str(e.value()).cast<std::string>();
  }

  mutable std::atomic<int> kind_{-1};
};

// What the registry owns for a Python-defined backend: it keeps the Python instance alive (the
// registry deletes its objects with `delete`, which must not reach a Python-owned object) and
// forwards every call through the instance's own door, so the instance's stats() count what
// was done through the backend.
class registered_python_allocator final : public allocator {
public:
  explicit registered_python_allocator(py::object instance)
      : instance_(std::move(instance)), impl_(instance_.cast<allocator *>()) {}
  ~registered_python_allocator() override {
    if (interpreter_finalizing()) {
      instance_.release(); // leaked at exit: Python can no longer run its destructor
      return;
    }
    py::gil_scoped_acquire gil;
    instance_ = py::object();
  }
  py::object instance() const { return instance_; }

protected:
  std::size_t do_bytes_held() const override { return impl_->stats().bytes_held; }

private:
  device_ptr do_allocate(std::size_t bytes, CUstream stream) override {
    return impl_->allocate(bytes, stream);
  }
  void do_deallocate(device_ptr ptr, std::size_t bytes, CUstream stream) override {
    impl_->deallocate(ptr, bytes, stream);
  }
  memory_kind do_kind() const override { return impl_->kind(); }
  bool do_can_free_held() const override { return impl_->can_free_held(); }
  std::size_t do_free_held() override { return impl_->free_held(); }
  std::size_t do_trim(std::size_t keep_bytes) override { return impl_->trim(keep_bytes); }

  py::object instance_;
  allocator *impl_;
};

// Allocator objects go to Python as themselves; a Python-defined backend as its Python instance.
py::object to_python(const plugin_ptr<allocator> &a) {
  if (auto *registered = dynamic_cast<registered_python_allocator *>(a.get()))
    return registered->instance();
  return py::cast(a);
}

void register_allocator(const std::string &name, py::object cls, const std::string &description) {
  py::object base = py::module_::import("cuplug._core").attr("allocators").attr("Allocator");
  if (!PyType_Check(cls.ptr()) || !PyObject_IsSubclass(cls.ptr(), base.ptr()) || cls.is(base))
    throw py::type_error("register_allocator: " + std::string(py::repr(cls)) +
                         " is not a subclass of cuplug.memory.Allocator");
  const std::string desc =
      description.empty()
          ? "Python allocator " + py::str(cls.attr("__qualname__")).cast<std::string>()
          : description;
  // A registered class lives as long as the process (as a plugin library would).
  PyObject *raw = cls.release().ptr();
  registry::instance().add_builtin(
      plugin_kind::allocator, name, desc, [raw, name](const options &opts) -> plugin_object * {
        py::gil_scoped_acquire gil;
        py::dict kwargs;
        for (const auto &[key, value] : opts.values()) {
          opts.get_string(key, ""); // every option goes to the constructor, which judges them
          kwargs[py::str(key)] = value;
        }
        py::object instance;
        try {
          instance = py::handle(raw)(**kwargs);
        } catch (py::error_already_set &e) {
          // Type and message, without the traceback error_already_set::what() appends.
          const std::string why =
              type_name(e.value()) + ": " + py::str(e.value()).cast<std::string>();
          if (e.matches(PyExc_TypeError) || e.matches(PyExc_ValueError))
            throw config_error("allocator '" + name + "': " + why);
          throw plugin_error("allocator '" + name + "': " + why);
        }
        allocator *impl = nullptr;
        try {
          impl = instance.cast<allocator *>();
        } catch (const py::cast_error &) {
        }
        if (impl == nullptr)
          throw plugin_error("allocator '" + name + "': " + std::string(py::repr(instance)) +
                             " is not usable as an Allocator; does its __init__ call "
                             "super().__init__()?");
        impl->set_backend_name(name);
        return new registered_python_allocator(std::move(instance));
      });
}

} // namespace

void init_python_allocators(py::module_ &m) {
  cuplug_memory_error = m.attr("MemoryError").ptr();
  py::module_ sub = m.def_submodule(
      "allocators", "Allocator backends from Python: the Allocator base class, statistics, "
                    "Python-defined backends.");

  py::class_<allocator, python_allocator, std::shared_ptr<allocator>>(
      sub, "Allocator",
      "A stream-ordered allocator backend. Built-in and plugin backends appear as instances; "
      "subclass it to write one in Python: define allocate(self, nbytes, stream) -> int, "
      "deallocate(self, ptr, nbytes, stream) and a class attribute kind ('device', 'managed', "
      "'pinned_host' or 'host'); optionally free_held(), trim(keep_bytes) and bytes_held(). "
      "`stream` is the CUstream handle as an int (0: the default stream). Register it with "
      "cuplug.memory.register_allocator(name, cls) to select it like any backend.")
      .def(py::init<>(), "The base of a Python-defined allocator backend.")
      .def(
          "allocate",
          [](allocator &a, const hint::size &nbytes, const hint::stream_public &stream) {
            return a.allocate(to_size(nbytes, "allocate: nbytes"), to_stream(stream));
          },
          py::arg("nbytes"), py::arg("stream") = py::none(),
          "Allocates a block for work on `stream`." CUPLUG_DOC_PARAMS
          "nbytes : int\n    Size, in bytes.\n" CUPLUG_DOC_STREAM_PARAM CUPLUG_DOC_RETURNS
          "int\n    The block's address (0 for 0 bytes).\n")
      .def(
          "deallocate",
          [](allocator &a, const hint::size &ptr, const hint::size &nbytes,
             const hint::stream_public &stream) {
            a.deallocate(to_size(ptr, "deallocate: ptr"), to_size(nbytes, "deallocate: nbytes"),
                         to_stream(stream));
          },
          py::arg("ptr"), py::arg("nbytes"), py::arg("stream") = py::none(),
          "Gives back a block from allocate(), once `stream`'s work before now is "
          "done." CUPLUG_DOC_PARAMS "ptr : int\n    The block's address.\n"
          "nbytes : int\n    Its size as allocated, in bytes.\n" CUPLUG_DOC_STREAM_PARAM)
      .def_property_readonly(
          "kind", [](const allocator &a) { return std::string(to_string(a.kind())); },
          "'device', 'managed', 'pinned_host' or 'host'.")
      .def_property_readonly("name", &plugin_object::backend_name,
                             "The backend name it was created under.")
      .def("stats", &stats_dict,
           "{bytes_in_use, peak_bytes, bytes_held, allocations, deallocations, failures}.")
      .def("reset_peak", &allocator::reset_peak,
           "Restarts peak_bytes from the bytes in use now; the other counters keep "
           "counting." CUPLUG_DOC_RETURNS "int\n    The peak it replaced, in bytes.\n")
      .def(
          "pool_stats",
          [](const allocator &a) -> std::optional<py::dict> {
            const std::optional<pool_stats> p = a.pool_statistics();
            if (!p)
              return std::nullopt;
            py::dict d;
            d["held_blocks"] = p->held_blocks;
            d["active_blocks"] = p->active_blocks;
            d["held_bytes"] = p->held_bytes;
            d["managed_bytes"] = p->managed_bytes;
            d["active_bytes"] = p->active_bytes;
            return d;
          },
          "A pool's block counters, None for an allocator that is no pool." CUPLUG_DOC_RETURNS
          "dict[str, int] | None\n    held_blocks, active_blocks, held_bytes, managed_bytes "
          "(block sizes held + active: what the upstream gave) and active_bytes.\n")
      .def_property_readonly("can_free_held", &allocator::can_free_held,
                             "Whether free_held() and trim() can give cached memory back.")
      .def("free_held", &allocator::free_held,
           "Gives cached memory back; returns the bytes released. NotSupportedError for "
           "allocators that hold nothing.")
      .def("trim", &allocator::trim, py::arg("keep_bytes") = 0,
           "Gives cached memory back until at most keep_bytes are held." CUPLUG_DOC_PARAMS
           "keep_bytes : int\n    Bytes it may keep holding.\n")
      .def("__repr__", [](const allocator &a) {
        return "<cuplug allocator '" + a.backend_name() + "' (" + to_string(a.kind()) + ")>";
      });

  sub.def("register_allocator", &register_allocator, py::arg("name"), py::arg("cls"),
          py::arg("description") = "",
          "Registers an Allocator subclass as backend `name`; creating the backend calls "
          "cls(**options) with the configured options as strings. A second registration of a "
          "name replaces the first.");
  sub.def(
      "create",
      [](const std::string &name, const std::map<std::string, std::string> &opts) {
        options merged = config::instance().plugin_options(plugin_kind::allocator, name, opts);
        plugin_ptr<allocator> a;
        {
          py::gil_scoped_release nogil; // a plugin's constructor may take time (or the GIL)
          a = registry::instance().create<allocator>(plugin_kind::allocator, name, merged);
        }
        return to_python(a);
      },
      py::arg("name"), py::arg("options") = std::map<std::string, std::string>{},
      "A new allocator of backend `name`: its configured options overlaid with `options`.");
  sub.def(
      "backend",
      [](const std::string &name) {
        plugin_ptr<plugin_object> o;
        {
          py::gil_scoped_release nogil;
          o = cuplug::backend(plugin_kind::allocator, name);
        }
        return to_python(std::static_pointer_cast<allocator>(o));
      },
      py::arg("name"), "The shared allocator of backend `name` (what selecting it would use).");
  sub.def(
      "current",
      [] {
        plugin_ptr<allocator> a;
        {
          py::gil_scoped_release nogil;
          a = current_allocator();
        }
        return to_python(a);
      },
      "The allocator every cuplug allocation uses now (the selected backend).");
  sub.def(
      "instances",
      [] {
        const plugin_ptr<allocator> now = current_allocator();
        py::list out;
        for (const auto &i : per_context_instances())
          out.append(py::make_tuple(static_cast<int>(i.device), "selected", to_python(i.alloc),
                                    i.stands_for == now.get()));
        for (const auto &[device, a] : array::array_pool_instances())
          out.append(py::make_tuple(static_cast<int>(device), "array pool", to_python(a), false));
        return out;
      },
      "The allocator objects cuplug's allocations went to, per context: (device, role, "
      "allocator, current), role 'selected' (a backend selected now or earlier, or its instance "
      "for another context) or 'array pool' (GPUArrays' default pool of a context); current: "
      "it is, or stands in for, the current allocator." CUPLUG_DOC_RETURNS
      "list[tuple[int, str, Allocator, bool]]\n    One entry per allocator object and "
      "context.\n");
}

py::dict stats_dict(const allocator &a) {
  const allocator_stats s = a.stats();
  py::dict d;
  d["bytes_in_use"] = s.bytes_in_use;
  d["peak_bytes"] = s.peak_bytes;
  d["bytes_held"] = s.bytes_held;
  d["allocations"] = s.allocations;
  d["deallocations"] = s.deallocations;
  d["failures"] = s.failures;
  return d;
}

} // namespace cuplug::python
