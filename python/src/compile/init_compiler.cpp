// Bindings for compiling through the cache (cuplug._core._compiler): requests bound to a compiler
// backend, results, the cache's state, and the architecture helpers cuplug.compiler uses.
#include "driver/context.hpp"
#include "bindings.hpp"
#include "support/convert.hpp"

#include <cuplug/backends.hpp>
#include <cuplug/compile_cache.hpp>
#include <cuplug/config.hpp>
#include <cuplug/gpu_arch.hpp>
#include <cuplug/registry.hpp>

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace cuplug::python {
namespace {

image_format format_from_string(const std::string &name) {
  for (auto f : {image_format::cubin, image_format::ptx, image_format::fatbin, image_format::ltoir})
    if (name == to_string(f))
      return f;
  throw py::value_error("unknown compile target '" + name +
                        "'; targets are: cubin, ptx, fatbin, ltoir");
}

// The compiler for a call: an explicit backend name (with per-call options, e.g. the nvcc path),
// else the selected one. Objects made with per-call options are kept, one per (name, options).
plugin_ptr<compiler> resolve_compiler(const py::object &backend,
                                      const std::map<std::string, std::string> &opts) {
  if (backend.is_none()) {
    if (opts.empty())
      return current_compiler();
  }
  std::string name = backend.is_none() ? config::instance().selected(plugin_kind::compiler).name
                                       : backend.cast<std::string>();
  if (opts.empty())
    return std::static_pointer_cast<compiler>(cuplug::backend(plugin_kind::compiler, name));
  static std::mutex mutex;
  static auto *made = new std::map<std::pair<std::string, std::map<std::string, std::string>>,
                                   plugin_ptr<compiler>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto &slot = (*made)[{name, opts}];
  if (!slot) {
    // The configured options of that backend, overridden by the call's.
    slot = registry::instance().create<compiler>(
        plugin_kind::compiler, name,
        config::instance().plugin_options(plugin_kind::compiler, name, opts));
  }
  return slot;
}

// A request bound to its compiler and hashed once (cheap to look up again).
struct py_request {
  cache_request request;
};

py_request make_request(const std::string &source, const std::vector<std::string> &options,
                        const std::vector<std::string> &include_dirs, const std::string &arch,
                        const std::string &target, const std::vector<std::string> &name_expressions,
                        bool relocatable, const std::string &source_name, const py::object &backend,
                        const std::map<std::string, std::string> &backend_options) {
  compile_request r;
  r.source = source;
  r.options = options;
  r.include_dirs = include_dirs;
  r.arch = arch;
  r.target = format_from_string(target);
  r.name_expressions = name_expressions;
  r.relocatable = relocatable;
  r.source_name = source_name;
  return py_request{cache_request(resolve_compiler(backend, backend_options), std::move(r))};
}

py::object optional_text(const std::string &s) {
  return s.empty() ? py::object(py::none()) : py::object(py::str(s));
}

void bind_request_and_result(py::module_ &m) {
  py::class_<py_request>(m, "CompileRequest",
                         "A compile request bound to its compiler backend (the selected one, or "
                         "`backend` with `backend_options`), hashed once.")
      .def(py::init(&make_request), py::arg("source"),
           py::arg("options") = std::vector<std::string>{},
           py::arg("include_dirs") = std::vector<std::string>{}, py::arg("arch") = "",
           py::arg("target") = "cubin", py::arg("name_expressions") = std::vector<std::string>{},
           py::arg("relocatable") = false, py::arg("source_name") = "kernel.cu",
           py::arg("backend") = py::none(),
           py::arg("backend_options") = std::map<std::string, std::string>{})
      .def_property_readonly("backend",
                             [](const py_request &r) { return r.request.backend().backend_name(); })
      .def_property_readonly(
          "backend_id", [](const py_request &r) { return r.request.backend_id(); },
          "'<name> <version>', the compiler's part of the cache key.")
      .def_property_readonly(
          "supported_archs",
          [](const py_request &r) { return r.request.backend().supported_archs(); })
      .def_property_readonly("arch", [](const py_request &r) { return r.request.request().arch; })
      .def_property_readonly(
          "target", [](const py_request &r) { return to_string(r.request.request().target); })
      .def(
          "key",
          [](const py_request &r) {
            py::gil_scoped_release nogil; // reads the user's headers
            return compile_cache_key(r.request);
          },
          "The content key (SHA-256 hex) of this request; reads the headers it includes.");

  py::class_<cache_result, std::shared_ptr<cache_result>>(
      m, "CompileResult", "A compiled image and where it came from.")
      .def_property_readonly("data",
                             [](const cache_result &r) {
                               return py::bytes(r.image->data.data(), r.image->data.size());
                             })
      .def_property_readonly("format",
                             [](const cache_result &r) { return to_string(r.image->format); })
      .def_property_readonly("log", [](const cache_result &r) { return r.image->log; })
      .def_property_readonly("command", [](const cache_result &r) { return r.image->command; })
      .def_property_readonly("lowered_names",
                             [](const cache_result &r) { return r.image->lowered_names; })
      .def_readonly("key", &cache_result::key)
      .def_property_readonly(
          "hit",
          [](const cache_result &r) {
            return optional_text(r.hit == cache_hit::none ? "" : to_string(r.hit));
          },
          "'memory', 'disk', or None when it was compiled now.")
      .def_property_readonly(
          "warning", [](const cache_result &r) { return optional_text(r.warning); },
          "Set once per cache directory that could not be used.");
}

std::shared_ptr<cache_result> compile(const py_request &req, bool memory, bool disk,
                                      const py::object &cache_dir) {
  cache_policy policy;
  policy.memory = memory;
  policy.disk = disk;
  if (!cache_dir.is_none())
    policy.directory = cache_dir.cast<std::string>();
  compile_cache &cache = compile_cache::instance();
  // A memory hit is a hash probe: done with the GIL held, since releasing it costs more.
  if (memory && !compile_cache::disabled_by_environment())
    if (auto hit = cache.find(req.request))
      return std::make_shared<cache_result>(*hit);
  py::gil_scoped_release nogil;
  return std::make_shared<cache_result>(cache.compile(req.request, policy));
}

void bind_cache(py::module_ &m) {
  m.def("compile", &compile, py::arg("request"), py::arg("memory") = true, py::arg("disk") = true,
        py::arg("cache_dir") = py::none(),
        "Compiles through the cache: memory, then disk (cache_dir, else the default root), then "
        "the compiler. CUPLUG_DISABLE_CACHE=1 turns both layers off. Raises CompileError.");
  m.def(
      "cache_status",
      [](const py::object &directory) {
        auto s = compile_cache::instance().disk_status(
            directory.is_none() ? std::string() : directory.cast<std::string>());
        return py::make_tuple(to_string(s.state_), s.directory, s.reason);
      },
      py::arg("directory") = py::none(),
      "(state, root, reason) of a disk cache root; state is usable, unsafe or unusable.");
  m.def("clear_memory_cache", [] { compile_cache::instance().clear_memory(); });
  m.def("memory_cache_entries", [] { return compile_cache::instance().memory_entries(); });
  m.def(
      "clear_disk_cache",
      [](const py::object &directory) {
        return compile_cache::instance().clear_disk(
            directory.is_none() ? std::string() : directory.cast<std::string>());
      },
      py::arg("directory") = py::none(),
      "Removes every entry under a cache root; returns how many.");
  m.def("max_disk_bytes", &compile_cache::max_disk_bytes);
  m.def("entries_subdir", [] { return std::string(compile_cache::entries_subdir); });
}

void bind_arch(py::module_ &m) {
  m.def(
      "parse_arch",
      [](const std::string &text) {
        gpu_arch a = parse_arch(text);
        return py::make_tuple(a.number, a.suffix);
      },
      py::arg("text"), "'sm_90a' / 'compute_90' / '90' / '9.0' -> (90, 'a'); ConfigError else.");
  m.def(
      "choose_arch",
      [](int device_arch, const std::vector<int> &supported, const std::string &compiler_id) {
        arch_choice c = choose_arch(device_arch, supported, compiler_id);
        return py::make_tuple(c.arch, c.clamped, c.use_ptx);
      },
      py::arg("device_arch"), py::arg("supported"), py::arg("compiler_id") = "the compiler",
      "(arch, clamped, use_ptx): the device's arch if supported, else the highest supported "
      "below it; use_ptx when that is of an older major version (no cubin of it would load).");
  m.def(
      "compiler_info",
      [](const py::object &backend, const std::map<std::string, std::string> &opts) {
        plugin_ptr<compiler> c = resolve_compiler(backend, opts);
        std::string version;
        std::vector<int> archs;
        {
          py::gil_scoped_release nogil; // nvcc's first answers run it
          version = c->version();
          archs = c->supported_archs();
        }
        return py::make_tuple(c->backend_name(), version, archs);
      },
      py::arg("backend") = py::none(),
      py::arg("backend_options") = std::map<std::string, std::string>{},
      "(name, version, supported archs) of a compiler backend (default: the selected one).");
}

} // namespace

void init_compiler(py::module_ &m) {
  py::module_ c = m.def_submodule("_compiler", "Compiling through the compile cache");
  bind_request_and_result(c);
  bind_cache(c);
  bind_arch(c);
}

} // namespace cuplug::python
