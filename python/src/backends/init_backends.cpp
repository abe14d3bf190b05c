// Bindings for plugin discovery, backend selection and the driver library's state
// (cuplug._core.backends); cuplug.plugins, cuplug.config and `python -m cuplug info` sit on them.
#include "bindings.hpp"
#include "driver/context.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"

#include <cuplug/backends.hpp>
#include <cuplug/compile_cache.hpp>
#include <cuplug/config.hpp>
#include <cuplug/driver_api.hpp>
#include <cuplug/plugin_kinds.hpp>
#include <cuplug/registry.hpp>
#include <cuplug/toolkit.hpp>

#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cuplug::python {
namespace {

plugin_kind kind_from_string(const std::string &name) {
  if (std::optional<plugin_kind> k = plugin_kind_from_string(name))
    return *k;
  throw config_error("unknown backend kind '" + name + "'; kinds are: " + plugin_kind_list());
}

// A manifest's kind field comes from an untrusted file: show the number when it is not a kind.
std::string manifest_kind_string(std::uint32_t raw) {
  if (is_plugin_kind(raw))
    return to_string(static_cast<plugin_kind>(raw));
  return "unknown kind " + std::to_string(raw);
}

// Manifest strings are NUL-terminated within their arrays for good plugins; a broken file may
// fill an array completely, so never read past it.
template <std::size_t N> std::string fixed_string(const char (&chars)[N]) {
  return std::string(chars, strnlen(chars, N));
}

py::object optional_str(const std::optional<std::string> &value) {
  return value ? py::object(py::str(*value)) : py::object(py::none());
}

void bind_plugin_info(py::module_ &m) {
  py::class_<plugin_info>(m, "PluginInfo", "A plugin that passed the handshake and is loaded.")
      .def_readonly("name", &plugin_info::name, "The backend name it provides.")
      .def_property_readonly(
          "kind", [](const plugin_info &p) { return to_string(p.kind); },
          "Its kind: 'allocator', 'compiler', 'launcher', 'rng' or 'interop'.")
      .def_readonly("path", &plugin_info::path, "The file it was loaded from.")
      .def_readonly("description", &plugin_info::description, "What its manifest says it is.")
      .def_readonly("version", &plugin_info::version, "Its own version string.")
      .def_readonly("abi_tag", &plugin_info::abi_tag,
                    "The platform / C++ ABI tag it was built with (must match the core's).")
      .def_readonly("source", &plugin_info::source,
                    "How it was found: 'package', 'CUPLUG_PLUGIN_PATH', 'load()', ...")
      .def("__repr__", [](const plugin_info &p) {
        return "<cuplug plugin " + std::string(to_string(p.kind)) + " '" + p.name + "' from " +
               p.path + ">";
      });
}

void bind_plugin_candidate(py::module_ &m) {
  py::class_<plugin_candidate>(m, "PluginCandidate",
                               "A file the loader looked at, and what became of it.")
      .def_readonly("path", &plugin_candidate::path, "The file.")
      .def_property_readonly(
          "state", [](const plugin_candidate &c) { return to_string(c.outcome); },
          "What became of it: 'loaded', 'rejected' or 'duplicate'.")
      .def_readonly("reason", &plugin_candidate::reason,
                    "Why it was rejected, or which file it duplicates; empty when loaded.")
      .def_readonly("has_manifest", &plugin_candidate::has_manifest,
                    "Whether a plugin manifest was read from it (the fields below need one).")
      .def_property_readonly(
          "name",
          [](const plugin_candidate &c) -> hint::str_or_none {
            if (!c.has_manifest)
              return py::none();
            return py::str(fixed_string(c.manifest.name));
          },
          "The backend name in its manifest (None without a manifest).")
      .def_property_readonly(
          "kind",
          [](const plugin_candidate &c) -> hint::str_or_none {
            if (!c.has_manifest)
              return py::none();
            return py::str(manifest_kind_string(c.manifest.kind));
          },
          "The kind in its manifest (None without a manifest).")
      .def_property_readonly(
          "abi_tag",
          [](const plugin_candidate &c) -> hint::str_or_none {
            if (!c.has_manifest)
              return py::none();
            return py::str(fixed_string(c.manifest.abi_tag));
          },
          "The platform / C++ ABI tag in its manifest (None without a manifest).")
      .def_property_readonly(
          "abi_major",
          [](const plugin_candidate &c) -> hint::int_or_none {
            if (!c.has_manifest)
              return py::none();
            return py::int_(c.manifest.abi_major);
          },
          "The plugin ABI major version in its manifest (None without a manifest).")
      .def_property_readonly(
          "interface_version",
          [](const plugin_candidate &c) -> hint::int_or_none {
            if (!c.has_manifest)
              return py::none();
            return py::int_(c.manifest.interface_version);
          },
          "The interface version in its manifest (None without a manifest).")
      .def_property_readonly(
          "struct_size",
          [](const plugin_candidate &c) -> hint::int_or_none {
            if (!c.has_manifest)
              return py::none();
            return py::int_(c.manifest.struct_size);
          },
          "Its manifest's size, in bytes (None without a manifest).")
      .def_property_readonly(
          "driver_api_entries",
          [](const plugin_candidate &c) -> hint::int_or_none {
            if (!c.has_manifest)
              return py::none();
            return py::int_(c.manifest.driver_api_entries);
          },
          "Driver entry points it expects the core to provide (None without a manifest).")
      .def_property_readonly(
          "cuplug_version",
          [](const plugin_candidate &c) -> hint::str_or_none {
            if (!c.has_manifest)
              return py::none();
            return py::str(fixed_string(c.manifest.cuplug_version));
          },
          "The cuplug version it was built against (None without a manifest).")
      .def_property_readonly(
          "description",
          [](const plugin_candidate &c) -> hint::str_or_none {
            if (!c.has_manifest)
              return py::none();
            return py::str(fixed_string(c.manifest.description));
          },
          "What its manifest says it is (None without a manifest).")
      .def_property_readonly(
          "version",
          [](const plugin_candidate &c) -> hint::str_or_none {
            if (!c.has_manifest)
              return py::none();
            return py::str(fixed_string(c.manifest.version));
          },
          "Its own version string (None without a manifest).")
      .def("__repr__", [](const plugin_candidate &c) {
        std::string r = "<cuplug plugin candidate " + c.path + ": " + to_string(c.outcome);
        if (!c.reason.empty())
          r += " (" + c.reason + ")";
        return r + ">";
      });
}

void bind_registry(py::module_ &m) {
  m.def(
      "available",
      [](std::optional<std::string> kind) {
        registry &r = registry::instance();
        return kind ? r.available(kind_from_string(*kind)) : r.available();
      },
      py::arg("kind") = py::none(), "Loaded plugins, of one kind or all.");
  m.def(
      "diagnostics", [] { return registry::instance().diagnostics(); },
      "Every candidate file seen so far and its outcome.");
  m.def(
      "load",
      [](const std::string &path, const std::string &source) {
        // Loading runs plugin static initialisers and reads files: no Python needed meanwhile.
        py::gil_scoped_release nogil;
        return registry::instance().load(path, source);
      },
      py::arg("path"), py::arg("source") = "explicit",
      "Loads a plugin file or every lib*.so in a folder; returns each candidate's outcome.");
  m.def(
      "names",
      [](const std::string &kind) { return registry::instance().names(kind_from_string(kind)); },
      py::arg("kind"), "Names of the loaded plugins of a kind, sorted.");
  m.def(
      "has",
      [](const std::string &kind, const std::string &name) {
        return registry::instance().has(kind_from_string(kind), name);
      },
      py::arg("kind"), py::arg("name"));
  m.def(
      "info",
      [](const std::string &kind, const std::string &name) {
        return registry::instance().info(kind_from_string(kind), name);
      },
      py::arg("kind"), py::arg("name"),
      "The loaded plugin of that kind and name; ConfigError listing what exists otherwise.");
  m.def(
      "unavailable_reason",
      [](const std::string &kind, const std::string &name) -> py::object {
        const plugin_kind k = kind_from_string(kind);
        registry &r = registry::instance();
        if (r.has(k, name))
          return py::none();
        try {
          (void)r.info(k, name);
        } catch (const config_error &e) {
          // "unknown rng 'curand'; available: none", with any refused file that provides it.
          return py::str(e.what());
        }
        return py::none(); // loaded between the two questions
      },
      py::arg("kind"), py::arg("name"),
      "None when a plugin of that kind and name is loaded, else why it is not available.");
  m.def("package_plugin_dir", &registry::package_plugin_dir,
        "The folder the core scans for the package's own plugins.");
}

void bind_config(py::module_ &m) {
  m.def(
      "selected",
      [](const std::string &kind) {
        selection s = config::instance().selected(kind_from_string(kind));
        return py::make_tuple(s.name, to_string(s.source), s.origin);
      },
      py::arg("kind"), "(name, source, origin) of the backend chosen for a kind.");
  m.def(
      "set_explicit",
      [](const std::string &kind, std::optional<std::string> name) {
        return optional_str(
            config::instance().set_explicit(kind_from_string(kind), std::move(name)));
      },
      py::arg("kind"), py::arg("name"),
      "Sets (None clears) the explicit choice for a kind; returns the previous explicit choice.");
  m.def(
      "explicit_choice",
      [](const std::string &kind) {
        return optional_str(config::instance().explicit_choice(kind_from_string(kind)));
      },
      py::arg("kind"));
  m.def(
      "set_file_layer",
      [](std::string path, const std::map<std::string, std::string> &backends,
         std::map<std::string, std::map<std::string, std::string>> plugin_options) {
        std::map<plugin_kind, std::string> by_kind;
        for (const auto &[kind, name] : backends)
          by_kind[kind_from_string(kind)] = name;
        config::instance().set_file_layer(std::move(path), std::move(by_kind),
                                          std::move(plugin_options));
      },
      py::arg("path"), py::arg("backends"), py::arg("plugin_options"),
      "Installs a parsed config file: {kind: name} and {'kind.name': {option: value}}.");
  m.def("clear_file_layer", [] { config::instance().clear_file_layer(); });
  m.def("open_config_file", &config::open_file, py::arg("path"),
        "Opens a config file if cuplug may trust it (nobody but root and you could change it) and "
        "returns a file descriptor to read it through; raises ConfigError naming the problem.");
  m.def(
      "file_path", [] { return config::instance().file_path(); },
      "Path of the config file in use, or '' when there is none.");
  m.def(
      "plugin_options",
      [](const std::string &kind, const std::string &name) {
        return config::instance().plugin_options(kind_from_string(kind), name).values();
      },
      py::arg("kind"), py::arg("name"),
      "Options for a plugin: file table overlaid with explicit ones.");
  m.def(
      "set_explicit_options",
      [](const std::string &kind, const std::string &name,
         std::map<std::string, std::string> values) {
        config::instance().set_explicit_options(kind_from_string(kind), name, std::move(values));
      },
      py::arg("kind"), py::arg("name"), py::arg("values"),
      "Replaces the explicitly set options of a plugin ({} clears them).");
  m.def(
      "builtin_default",
      [](const std::string &kind) {
        return std::string(config::builtin_default(kind_from_string(kind)));
      },
      py::arg("kind"));
  m.def(
      "env_var", [](const std::string &kind) { return config::env_var(kind_from_string(kind)); },
      py::arg("kind"));
  m.def(
      "generation", [] { return config::instance().generation(); },
      "Bumped on every configuration change.");
}

void bind_backend_objects(py::module_ &m) {
  m.def(
      "create_backend",
      [](const std::string &kind, const std::string &name) {
        // The GIL stays held: a backend may be defined in Python (add_builtin factories).
        backend(kind_from_string(kind), name);
      },
      py::arg("kind"), py::arg("name"),
      "Makes (or finds cached) the shared object of a backend with its configured options, so "
      "unknown names and bad options raise now rather than at first use.");
  m.def("reset_backends", &reset_backends,
        "Drops cached backend objects; the next use creates them from the current selection.");
}

void bind_cache_location(py::module_ &m) {
  m.def("cache_directory", &compile_cache::default_directory,
        "The compile cache's root: $CUPLUG_CACHE_DIR, else the user cache folder.");
  m.def("cache_disabled", &compile_cache::disabled_by_environment,
        "True when CUPLUG_DISABLE_CACHE turns the compile cache off.");
}

void bind_driver_state(py::module_ &m) {
  m.def("driver_available", &driver_available,
        "True when the CUDA driver library could be opened; never raises.");
  m.def("driver_library_description", &driver_library_description,
        "Path of the opened driver library, or why it could not be opened.");
  m.def("driver_branch", &driver_branch, py::arg("cuda_version"),
        "The NVIDIA driver branch that reports a CUDA version: 12040 -> 'R550'; '' if unknown.");
  m.def(
      "driver_entries_after_oldest",
      [] {
        py::list out;
        for (const auto &e : driver_entries_after_oldest())
          out.append(py::make_tuple(e.name, e.version, e.native, e.shimmed));
        return out;
      },
      "(name, version, native, shimmed) of each driver entry point cuplug uses that is newer "
      "than CUDA 12.0: native when this driver has it, shimmed when an older form serves the "
      "arguments it can honour; neither: calls raise NotSupportedError. Raises without a "
      "driver.");
}

// cuplug's one CUDA toolkit search order (cuplug/toolkit.hpp), for the Python package's own
// toolkit lookups (cuplug._compile.toolkit) and `python -m cuplug info`.
void bind_toolkit(py::module_ &m) {
  m.def(
      "toolkit_roots",
      [](bool all) {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto &r : toolkit_roots(all))
          out.emplace_back(r.path, r.origin);
        return out;
      },
      py::arg("all") = false,
      "The CUDA toolkit folders to look in, in cuplug's search order: [(path, origin)]. Folders of "
      "a newer CUDA major version than the driver's are left out unless `all`.");
  m.def("toolkit_cuda_major", &toolkit_cuda_major, py::arg("root"),
        "The CUDA major version a toolkit folder holds (version.json, library sonames, NVIDIA's "
        "wheel layouts); 0 when unknown.");
  m.def(
      "wanted_toolkit",
      [] {
        toolkit_choice c = wanted_toolkit();
        return std::make_pair(c.major, c.why);
      },
      "(major, why): the CUDA major version whose toolkit cuplug uses (the driver's, or "
      "$CUPLUG_TOOLKIT_MAJOR), 0 with no usable driver.");
  m.def("toolkit_library_dirs", &toolkit_library_dirs, py::arg("root"),
        "The folders of a toolkit folder that may hold its libraries, in the order looked at.");
  m.def("toolkit_include_dir", &toolkit_include_dir, py::arg("root"),
        "The folder of a toolkit folder holding cuda.h, or ''.");
  m.def("preload_toolkit_libraries", &preload_toolkit_libraries, py::return_value_policy::copy,
        "Loads (once) the toolkit libraries the plugins link from the search order; one line "
        "per library says from where.");
}

// How this extension was built, for `python -m cuplug info`: a plugin or a program built against
// cuplug's SDK should match the compiler's C++ library ABI (the plugin ABI tag says what must).
void bind_build_info(py::module_ &m) {
  m.def(
      "build_info",
      [] {
        py::dict d;
#if defined(__clang__)
        d["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
        d["compiler"] = std::string("gcc ") + __VERSION__;
#else
        d["compiler"] = std::string("unknown");
#endif
        d["cplusplus"] = static_cast<long>(__cplusplus);
        d["cuda_h"] =
            std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10);
#if defined(__GLIBC__)
        d["glibc_headers"] = std::to_string(__GLIBC__) + "." + std::to_string(__GLIBC_MINOR__);
#endif
        return d;
      },
      "The compiler, C++ standard, cuda.h version and glibc headers this extension was built "
      "with.");
}

} // namespace

void init_backends(py::module_ &m) {
  py::module_ b = m.def_submodule("backends", "Plugins, backend selection and the driver library");
  // The kinds table (core/include/cuplug/plugin_kinds.hpp), which the Python package derives its
  // kind lists from: KINDS in order, and each kind's built-in default and variable.
  py::list kinds;
  py::dict defaults, env_vars;
  for (plugin_kind k : all_plugin_kinds) {
    kinds.append(py::str(to_string(k)));
    defaults[py::str(to_string(k))] = py::str(default_backend(k));
    env_vars[py::str(to_string(k))] = py::str(config::env_var(k));
  }
  b.attr("KINDS") = py::tuple(kinds);
  b.attr("DEFAULT_BACKENDS") = defaults;
  b.attr("ENV_VARS") = env_vars;
  b.attr("DRIVER_API_ENTRIES") = py::int_(driver_api_entries);
  b.attr("PLUGIN_ABI_MAJOR") = py::int_(plugin_abi_major);
  b.attr("ABI_TAG") = py::str(CUPLUG_ABI_TAG);
  bind_plugin_info(b);
  bind_plugin_candidate(b);
  bind_registry(b);
  bind_config(b);
  bind_backend_objects(b);
  bind_cache_location(b);
  bind_driver_state(b);
  bind_toolkit(b);
  bind_build_info(b);
}

} // namespace cuplug::python
