// Module, module_from_buffer / module_from_file and Linker (cuLink*) bindings.
#include "bindings.hpp"
#include "launch/function.hpp"
#include "launch/module.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"
#include "support/host_buffer.hpp"

#include <cuplug/backends.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cuplug::python {

// ---- module -------------------------------------------------------------------------------------

module::module(context_ptr ctx, plugin_ptr<cuplug::launcher> launcher,
               CUmodule handle) :context_dependent(std::move(ctx)),
    launcher_(std::move(launcher)), handle_(handle) {}

void module::throw_detached(const char *routine) {
  throw cuda_error(routine, CUDA_ERROR_INVALID_CONTEXT,
                   "the module's context was detached, which destroyed the module and its "
                   "functions; load the module again in a live context");
}

module::~module() {
  // Unload under the module's own context; a context that is already gone took the module
  // with it, so there is nothing left to do then.
  release_under(get_context(), "cuModuleUnload", [this] {
    launcher_->unload_module(handle_);
    return CUDA_SUCCESS;
  });
}

module_ptr module::load(const void *image, std::size_t bytes,
                        const std::vector<jit_option> &options, std::string *info_log) {
  context_ptr ctx = context::current_or_throw();
  plugin_ptr<cuplug::launcher> launcher = current_launcher();
  CUmodule handle;
  {
    // JIT-compiling PTX can take a while; nothing below touches Python objects.
    py::gil_scoped_release nogil;
    handle = launcher->load_module(image, bytes, options, info_log);
  }
  return std::make_shared<module>(std::move(ctx), std::move(launcher), handle);
}

module_ptr module::load_file(const std::string &path) {
  context_ptr ctx = context::current_or_throw();
  plugin_ptr<cuplug::launcher> launcher = current_launcher();
  CUmodule handle;
  {
    py::gil_scoped_release nogil;
    handle = launcher->load_module_file(path);
  }
  return std::make_shared<module>(std::move(ctx), std::move(launcher), handle);
}

namespace {

long long enum_value(py::handle obj, const char *what) {
  PyObject *index = PyNumber_Index(obj.ptr());
  if (index == nullptr) {
    PyErr_Clear();
    index = PyNumber_Long(obj.ptr());
  }
  if (index == nullptr) {
    PyErr_Clear();
    throw py::type_error(std::string(what) + " must be an int-like enum value, got " +
                         std::string(py::repr(obj)));
  }
  py::object owned = py::reinterpret_steal<py::object>(index);
  return owned.cast<long long>();
}

// The JIT error log a load failure carries: cuda_error's what() is
// "<routine> failed: <description> - <log>".
std::string error_log_of(const cuda_error &e) {
  const std::string prefix = e.routine() + " failed: " + error_string(e.code()) + " - ";
  const std::string what = e.what();
  return what.compare(0, prefix.size(), prefix) == 0 ? what.substr(prefix.size()) : std::string();
}

bool is_log_option(long long option) {
  return option == CU_JIT_INFO_LOG_BUFFER || option == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES ||
         option == CU_JIT_ERROR_LOG_BUFFER || option == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
}

// (jit_option, value) pairs from a list of pairs or a dict.
std::vector<std::pair<long long, long long>> option_pairs(py::handle options, const char *who) {
  std::vector<std::pair<long long, long long>> pairs;
  if (options.is_none())
    return pairs;
  py::object items = py::isinstance<py::dict>(options)
                         ? py::reinterpret_borrow<py::dict>(options).attr("items")()
                         : py::reinterpret_borrow<py::object>(options);
  for (py::handle item : items) {
    if (!py::isinstance<py::sequence>(item) || py::isinstance<py::str>(item) || py::len(item) != 2)
      throw py::type_error(std::string(who) + ": options must be (jit_option, value) pairs, got " +
                           std::string(py::repr(item)));
    py::sequence pair = py::reinterpret_borrow<py::sequence>(item);
    const long long option = enum_value(pair[0], "jit_option");
    if (is_log_option(option))
      throw py::value_error(std::string(who) +
                            ": the JIT log buffers are managed by cuplug; pass "
                            "message_handler=f(success, info_log, error_log) to see the logs");
    pairs.emplace_back(option, enum_value(pair[1], "jit option value"));
  }
  return pairs;
}

// The bytes of a module image: str (PTX text) or anything with the buffer protocol.
class image_view {
public:
  explicit image_view(py::handle obj) {
    if (PyUnicode_Check(obj.ptr())) {
      text_ = obj.cast<std::string>();
      data_ = text_.data();
      size_ = text_.size();
      return;
    }
    if (PyObject_GetBuffer(obj.ptr(), &view_, with_format(PyBUF_SIMPLE)) != 0) {
      PyErr_Clear();
      throw py::type_error("module image must be bytes, str (PTX) or a buffer, got " +
                           type_name(obj));
    }
    if (format_has_objects(view_.format)) {
      const std::string format = view_.format;
      PyBuffer_Release(&view_); // the destructor does not run for a constructor that throws
      throw_holds_objects("module image", "the buffer", "buffer format '" + format + "'");
    }
    held_ = true;
    data_ = view_.buf;
    size_ = static_cast<std::size_t>(view_.len);
  }
  ~image_view() {
    if (held_)
      PyBuffer_Release(&view_);
  }
  image_view(const image_view &) = delete;
  image_view &operator=(const image_view &) = delete;
  const void *data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

private:
  std::string text_;
  Py_buffer view_{};
  bool held_ = false;
  const void *data_ = nullptr;
  std::size_t size_ = 0;
};

module_ptr module_from_buffer(py::handle buffer, py::handle options, py::handle handler) {
  std::vector<jit_option> jit;
  for (auto [option, value] : option_pairs(options, "module_from_buffer"))
    jit.push_back({static_cast<CUjit_option>(option), value});
  image_view image(buffer);
  if (image.size() == 0)
    throw py::value_error("module_from_buffer: the image is empty");
  std::string info;
  module_ptr mod;
  try {
    mod = module::load(image.data(), image.size(), jit, &info);
  } catch (const cuda_error &e) {
    if (!handler.is_none())
      handler(false, info, error_log_of(e));
    throw;
  }
  if (!handler.is_none())
    handler(true, info, std::string());
  return mod;
}

// ---- Linker -------------------------------------------------------------------------------------

// cuLinkCreate/AddData/AddFile/Complete in the context current at construction; the linked
// cubin is loaded through the current launcher like any other image.
class linker : public context_dependent {
public:
  static constexpr std::size_t log_size = 32 * 1024;

  linker(py::object handler, py::handle options, bool verbose)
      : handler_(std::move(handler)), info_(new char[log_size]()), error_(new char[log_size]()) {
    add_option(CU_JIT_INFO_LOG_BUFFER, info_.get());
    add_option(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, reinterpret_cast<void *>(log_size));
    add_option(CU_JIT_ERROR_LOG_BUFFER, error_.get());
    add_option(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, reinterpret_cast<void *>(log_size));
    add_option(CU_JIT_LOG_VERBOSE, reinterpret_cast<void *>(std::uintptr_t(verbose ? 1 : 0)));
    for (auto [option, value] : option_pairs(options, "Linker"))
      add_option(static_cast<CUjit_option>(option),
                 reinterpret_cast<void *>(static_cast<std::uintptr_t>(value)));
    CUresult r = detail::entry(driver().cuLinkCreate, "cuLinkCreate")(
        static_cast<unsigned>(options_.size()), options_.data(), values_.data(), &state_);
    check(r, "cuLinkCreate");
  }
  ~linker() { close(); }
  linker(const linker &) = delete;
  linker &operator=(const linker &) = delete;

  void add_data(py::handle data, long long input_type, const std::string &name) {
    image_view image(data);
    CUresult r;
    {
      py::gil_scoped_release nogil;
      r = detail::entry(driver().cuLinkAddData, "cuLinkAddData")(
          live_state(), static_cast<CUjitInputType>(input_type), const_cast<void *>(image.data()),
          image.size(), name.c_str(), 0, nullptr, nullptr);
    }
    check(r, "cuLinkAddData");
  }

  void add_file(const std::string &path, long long input_type) {
    CUresult r;
    {
      py::gil_scoped_release nogil;
      r = detail::entry(driver().cuLinkAddFile, "cuLinkAddFile")(
          live_state(), static_cast<CUjitInputType>(input_type), path.c_str(), 0, nullptr, nullptr);
    }
    check(r, "cuLinkAddFile");
  }

  module_ptr link_module() {
    void *cubin = nullptr;
    std::size_t size = 0;
    CUresult r;
    {
      py::gil_scoped_release nogil;
      r = detail::entry(driver().cuLinkComplete, "cuLinkComplete")(live_state(), &cubin, &size);
    }
    check(r, "cuLinkComplete");
    module_ptr mod;
    try {
      mod = module::load(cubin, size, {}, nullptr);
    } catch (const cuda_error &) {
      call_handler(false);
      throw;
    }
    call_handler(true);
    return mod;
  }

  // A context that is already gone took its link states with it: destroying one again is
  // undefined behaviour in the driver (the fake driver reports it), so only a live one is.
  void close() noexcept {
    if (state_ != nullptr && driver_available() && get_context()->valid())
      cleanup_call(driver().cuLinkDestroy(state_), "cuLinkDestroy");
    state_ = nullptr;
  }

private:
  void add_option(CUjit_option option, void *value) {
    options_.push_back(option);
    values_.push_back(value);
  }
  CUlinkState live_state() const {
    if (state_ == nullptr)
      throw cuda_error("Linker", CUDA_ERROR_INVALID_HANDLE, "the linker was closed");
    if (!get_context()->valid())
      throw cuda_error("Linker", CUDA_ERROR_INVALID_CONTEXT,
                       "the linker's context was detached, which destroyed the link session; "
                       "make a new linker in a live context");
    return state_;
  }
  void call_handler(bool success) {
    if (!handler_.is_none())
      handler_(success, std::string(info_.get()), std::string(error_.get()));
  }
  void check(CUresult r, const char *routine) {
    if (r == CUDA_SUCCESS)
      return;
    call_handler(false);
    throw cuda_error(routine, r, error_.get());
  }

  py::object handler_;
  std::unique_ptr<char[]> info_;
  std::unique_ptr<char[]> error_;
  std::vector<CUjit_option> options_;
  std::vector<void *> values_;
  CUlinkState state_ = nullptr;
};

[[noreturn]] void no_texture_references(const char *what) {
  throw not_supported(std::string(what) +
                      ": texture and surface references were removed in CUDA 12; use texture "
                      "or surface objects (cudaTextureObject_t) passed as kernel arguments");
}

} // namespace

void init_module(py::module_ &m) {
  py::class_<module, module_ptr>(m, "Module", py::dynamic_attr(),
                                 "A loaded module (cubin, PTX or fatbin); unloads under its "
                                 "context when the last reference to it or its functions goes.")
      .def(
          "get_global",
          [](const module_ptr &self, const std::string &name) {
            const CUmodule handle = self->live_handle("module::get_global");
            scoped_activation_if_none active(self->get_context());
            auto [ptr, size] = self->get_launcher().get_global(handle, name);
            return py::make_tuple(static_cast<unsigned long long>(ptr), size);
          },
          py::arg("name"),
          "Finds a global variable of the module." CUPLUG_DOC_PARAMS
          "name : str\n    The variable's (mangled) name.\n" CUPLUG_DOC_RETURNS
          "tuple[int, int]\n    Its device address and its size in bytes.\n")
      .def(
          "get_texref",
          [](const module &self, const std::string &) {
            self.check_alive("module::get_texref");
            no_texture_references("get_texref");
          },
          py::arg("name"),
          "Raises NotSupportedError: texture references were removed in CUDA 12 (use "
          "TextureObject)." CUPLUG_DOC_PARAMS "name : str\n    The reference's name.\n")
      .def(
          "get_surfref",
          [](const module &self, const std::string &) {
            self.check_alive("module::get_surfref");
            no_texture_references("get_surfref");
          },
          py::arg("name"),
          "Raises NotSupportedError: surface references were removed in CUDA 12 (use "
          "SurfaceObject)." CUPLUG_DOC_PARAMS "name : str\n    The reference's name.\n")
      .def_property_readonly(
          "handle",
          [](const module &self) { return reinterpret_cast<std::uintptr_t>(self.handle()); },
          "The CUmodule as an int.")
      .def_property_readonly(
          "launcher", [](const module &self) { return self.get_launcher().backend_name(); },
          "Name of the launcher backend that loaded this module.");

  m.def(
      "module_from_buffer",
      [](const hint::host_buffer &buffer, const hint::jit_options &options,
         const hint::callback &handler) { return module_from_buffer(buffer, options, handler); },
      py::arg("buffer"), py::arg("options") = py::list(), py::arg("message_handler") = py::none(),
      "Loads a cubin, PTX or fatbin image (cuModuleLoadDataEx through the launcher "
      "backend)." CUPLUG_DOC_PARAMS
      "buffer : collections.abc.Buffer\n    The image (PTX text may lack "
      "its terminating NUL).\n"
      "options : list[tuple[jit_option, int]]\n    JIT options, (jit_option, value) pairs.\n"
      "message_handler : collections.abc.Callable | None\n    Called as "
      "message_handler(success, info_log, error_log) after loading.\n" CUPLUG_DOC_RETURNS
      "Module\n    The loaded module.\n");
  m.def("module_from_file", &module::load_file, py::arg("filename"),
        "Loads a module file (cuModuleLoad through the launcher backend)." CUPLUG_DOC_PARAMS
        "filename : str\n    A .cubin, .ptx or .fatbin file.\n" CUPLUG_DOC_RETURNS
        "Module\n    The loaded module.\n");

  py::class_<linker>(m, "Linker", "cuLink*: link PTX, cubins, objects and libraries.")
      .def(py::init(
               [](const hint::callback &handler, const hint::jit_options &options, bool verbose) {
                 return std::make_unique<linker>(handler, options, verbose);
               }),
           py::arg("message_handler") = py::none(), py::arg("options") = py::none(),
           py::arg("log_verbose") = false,
           "A link session (cuLinkCreate)." CUPLUG_DOC_PARAMS
           "message_handler : collections.abc.Callable | None\n    Called as "
           "message_handler(success, info_log, error_log) when linking ends.\n"
           "options : list[tuple[jit_option, int]] | None\n    JIT options, (jit_option, "
           "value) pairs.\n"
           "log_verbose : bool\n    Asks the linker for a verbose info log.\n")
      .def(
          "add_data",
          [](linker &self, const hint::host_buffer &data, const hint::jit_input &input_type,
             const std::string &name) {
            self.add_data(data, enum_value(input_type, "input_type"), name);
          },
          py::arg("data"), py::arg("input_type"), py::arg("name") = "unknown",
          "Adds an image from memory (cuLinkAddData)." CUPLUG_DOC_PARAMS
          "data : collections.abc.Buffer\n    The image: PTX, cubin, fatbin, object or "
          "library.\n"
          "input_type : jit_input_type\n    What it is.\n"
          "name : str\n    A name for the linker's messages.\n")
      .def(
          "add_file",
          [](linker &self, const std::string &path, const hint::jit_input &input_type) {
            self.add_file(path, enum_value(input_type, "input_type"));
          },
          py::arg("filename"), py::arg("input_type"),
          "Adds a file (cuLinkAddFile)." CUPLUG_DOC_PARAMS "filename : str\n    The file.\n"
          "input_type : jit_input_type\n    What it holds.\n")
      .def("link_module", &linker::link_module,
           "Links what was added and loads the result (cuLinkComplete)." CUPLUG_DOC_RETURNS
           "Module\n    The linked module.\n")
      .def("close", &linker::close, "Ends the link session now (cuLinkDestroy).");
}

} // namespace cuplug::python
