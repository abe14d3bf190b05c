// Bindings for compiling through the cache (cuplug._core._compiler): requests bound to a compiler
// backend, results, the cache's state, and the architecture helpers cuplug.compiler uses.
#include "bindings.hpp"
#include "driver/context.hpp"
#include "support/convert.hpp"
#include "support/nvtx_ranges.hpp"

#include <cuplug/backends.hpp>
#include <cuplug/compile_cache.hpp>
#include <cuplug/config.hpp>
#include <cuplug/gpu_arch.hpp>
#include <cuplug/registry.hpp>

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace cuplug {
// The cache's test door (core/src/cache_entry.hpp; not in the installed headers), for the
// property tests of the entry decoder (tests/python/compile/test_cache_entry_fuzz.py). A signature
// change there fails to link here.
std::string encode_cache_entry(const std::string &key, const compiled_image &image);
bool decode_cache_entry(const std::string &bytes, const std::string &key, compiled_image &image);
} // namespace cuplug

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
  const auto key = std::make_pair(name, opts);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = made->find(key); it != made->end())
      return it->second;
  }
  // Created without the lock: the registry's first use logs (through Python's logger, which may
  // let the GIL go to a thread that waits for this lock) and a plugin's factory may take time.
  // The configured options of that backend, overridden by the call's.
  plugin_ptr<compiler> mine = registry::instance().create<compiler>(
      plugin_kind::compiler, name,
      config::instance().plugin_options(plugin_kind::compiler, name, opts));
  std::lock_guard<std::mutex> lock(mutex);
  // A thread that raced us may have won; ours is then destroyed after the lock is released.
  return made->emplace(key, mine).first->second;
}

// A request bound to its compiler and hashed once (cheap to look up again).
struct py_request {
  cache_request request;
};

// The compile's `cancelled`: polled by the compiler while it works with the GIL released. On the
// main thread a pending signal runs its Python handler here; a KeyboardInterrupt (or whatever the
// handler raised) stays set, stops the compile, and compile() below raises it. A compile still
// running while the interpreter shuts down stops too.
bool python_wants_to_stop() {
#if PY_VERSION_HEX >= 0x030D0000
  if (Py_IsFinalizing())
#else
  if (_Py_IsFinalizing())
#endif
    return true;
  py::gil_scoped_acquire gil;
  return PyErr_Occurred() != nullptr || PyErr_CheckSignals() != 0;
}

py_request make_request(const std::string &source, const std::vector<std::string> &options,
                        const std::vector<std::string> &include_dirs, const std::string &arch,
                        const std::string &target, const std::vector<std::string> &name_expressions,
                        bool relocatable, const std::string &source_name, const py::object &backend,
                        const std::map<std::string, std::string> &backend_options,
                        const std::string &code, bool debug, bool keep_files,
                        const std::string &keep_directory, const std::string &program) {
  compile_request r;
  r.source = source;
  r.options = options;
  r.include_dirs = include_dirs;
  r.arch = arch;
  r.code = code;
  r.target = format_from_string(target);
  r.name_expressions = name_expressions;
  r.relocatable = relocatable;
  r.source_name = source_name;
  r.debug = debug;
  r.keep_files = keep_files;
  r.keep_directory = keep_directory;
  r.program = program;
  r.cancelled = &python_wants_to_stop;
  return py_request{cache_request(resolve_compiler(backend, backend_options), std::move(r))};
}

py::object optional_text(const std::string &s) {
  return s.empty() ? py::object(py::none()) : py::object(py::str(s));
}

// Compiler output is bytes in whatever encoding the tools and file names had: shown as text with
// what is not UTF-8 replaced, never an exception on reading it.
py::str lenient_text(const std::string &s) {
  PyObject *u = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (u == nullptr)
    throw py::error_already_set();
  return py::reinterpret_steal<py::str>(u);
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
           py::arg("backend_options") = std::map<std::string, std::string>{}, py::arg("code") = "",
           py::arg("debug") = false, py::arg("keep_files") = false, py::arg("keep_directory") = "",
           py::arg("program") = "")
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
          "key", [](const py_request &r) { return compile_cache_key(r.request); },
          "The request key (SHA-256 hex): what the request says, the name of its disk entry. "
          "The key of a result also covers what the compile read.");

  py::class_<cache_result, std::shared_ptr<cache_result>>(
      m, "CompileResult", "A compiled image and where it came from.")
      .def_property_readonly("data",
                             [](const cache_result &r) {
                               return py::bytes(r.image->data.data(), r.image->data.size());
                             })
      .def_property_readonly("format",
                             [](const cache_result &r) { return to_string(r.image->format); })
      .def_property_readonly("log",
                             [](const cache_result &r) { return lenient_text(r.image->log); })
      .def_property_readonly("command",
                             [](const cache_result &r) { return lenient_text(r.image->command); })
      .def_property_readonly("lowered_names",
                             [](const cache_result &r) { return r.image->lowered_names; })
      .def_property_readonly(
          "kept_directory",
          [](const cache_result &r) { return optional_text(r.image->kept_directory); },
          "Where keep_files left the compiler's files, else None.")
      .def_property_readonly(
          "dependencies", [](const cache_result &r) { return r.image->inputs.files; },
          "The files the compile read, as the compiler reported them (the cache checks them).")
      .def_property_readonly(
          "not_cached", [](const cache_result &r) { return optional_text(r.not_cached); },
          "Why a fresh compile was kept in no cache layer, else None.")
      .def_readonly("key", &cache_result::key,
                    "Identifies the image: the request key and the content of what was read.")
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
  if (memory && !compile_cache::disabled_by_environment() && !req.request.request().keep_files)
    if (auto hit = cache.find(req.request))
      return std::make_shared<cache_result>(*hit);
  std::shared_ptr<cache_result> out;
  try {
    {
      py::gil_scoped_release nogil;
      nvtx_range range{"cuplug compile"};
      out = std::make_shared<cache_result>(cache.compile(req.request, policy));
    }
    flush_pending_log();
  } catch (...) {
    flush_pending_log();
    // The compile stopped because Python wants to (Ctrl-C): raise that, not the compile error.
    if (PyErr_Occurred())
      throw py::error_already_set();
    throw;
  }
  return out;
}

// The entry decoder, for the property tests that feed it random and damaged bytes.
py::object decode_entry_for_tests(const py::bytes &data, const std::string &key) {
  std::string bytes = data;
  compiled_image image;
  bool ok;
  {
    py::gil_scoped_release nogil;
    ok = decode_cache_entry(bytes, key, image);
  }
  if (!ok)
    return py::none();
  py::dict d;
  d["format"] = to_string(image.format);
  d["data"] = py::bytes(image.data);
  d["log"] = lenient_text(image.log);
  d["command"] = lenient_text(image.command);
  py::dict names;
  for (const auto &[expr, lowered] : image.lowered_names)
    names[lenient_text(expr)] = lenient_text(lowered);
  d["lowered_names"] = names;
  return std::move(d);
}

py::bytes encode_entry_for_tests(const std::string &key, const py::bytes &data,
                                 const std::string &format, const std::string &log,
                                 const std::string &command,
                                 const std::map<std::string, std::string> &lowered_names) {
  compiled_image image;
  image.data = data;
  image.format = format_from_string(format);
  image.log = log;
  image.command = command;
  image.lowered_names = lowered_names;
  return py::bytes(encode_cache_entry(key, image));
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
  m.def("_decode_cache_entry", &decode_entry_for_tests, py::arg("data"), py::arg("key"),
        "Test hook: the decoded entry as a dict, or None when the bytes are not one for key.");
  m.def("_encode_cache_entry", &encode_entry_for_tests, py::arg("key"), py::arg("data"),
        py::arg("format") = "cubin", py::arg("log") = "", py::arg("command") = "",
        py::arg("lowered_names") = std::map<std::string, std::string>{},
        "Test hook: an entry (with no recorded inputs) for key.");
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
