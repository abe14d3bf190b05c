// Texture and surface objects (cuTexObjectCreate / cuSurfObjectCreate): TextureObject and
// SurfaceObject, 64-bit handles that kernels take as cudaTextureObject_t / cudaSurfaceObject_t.
// Each keeps what it reads (an Array, a GPUArray, an allocation) alive while it lives.
#include "array/array_object.hpp"
#include "bindings.hpp"
#include "driver/activation.hpp"
#include "hooks.hpp"
#include "memory/cuda_array.hpp"
#include "memory/memory.hpp"
#include "memory/sampler.hpp"
#include "support/convert.hpp"
#include "support/hints.hpp"

#include <cstring>
#include <initializer_list>
#include <string>

namespace cuplug::python {

sampler::sampler(kind k, context_ptr ctx, unsigned long long handle, py::object source)
    : kind_(k), ctx_(std::move(ctx)), handle_(handle), source_(std::move(source)) {}

sampler::~sampler() {
  destroy();
  if (source_) {
    if (interpreter_finalizing()) {
      source_.release();
    } else {
      py::gil_scoped_acquire gil;
      source_ = py::object();
    }
  }
}

void sampler::destroy() {
  if (handle_ == 0)
    return;
  const unsigned long long doomed = handle_;
  handle_ = 0;
  if (kind_ == kind::texture)
    release_under(ctx_, "cuTexObjectDestroy", [doomed] {
      return detail::entry(driver().cuTexObjectDestroy, "cuTexObjectDestroy")(doomed);
    });
  else
    release_under(ctx_, "cuSurfObjectDestroy", [doomed] {
      return detail::entry(driver().cuSurfObjectDestroy, "cuSurfObjectDestroy")(doomed);
    });
}

// Freeing the memory explicitly while a texture reads it is allowed (free() means "now", as in
// PyCUDA, and a texture must not pin memory its owner gave back); the texture then refuses to
// be used, so the freed block (perhaps another array's by now) is never read through it. Merely
// dropping the source cannot free it: the texture holds a reference.
unsigned long long sampler::handle() const {
  const char *routine = kind_ == kind::texture ? "TextureObject" : "SurfaceObject";
  if (handle_ == 0)
    throw cuda_error(routine, CUDA_ERROR_INVALID_HANDLE, "it was destroyed");
  if (memory_ && memory_->freed())
    throw cuda_error(routine, CUDA_ERROR_INVALID_HANDLE,
                     "the device memory it reads was freed (free()); make a new one over live "
                     "memory");
  if (array_ && array_->freed())
    throw cuda_error(routine, CUDA_ERROR_INVALID_HANDLE,
                     "the Array it reads was freed (Array.free()); make a new one over a live "
                     "Array");
  if (ctx_ && !ctx_->valid())
    throw cuda_error(routine, CUDA_ERROR_CONTEXT_IS_DESTROYED,
                     "its context was detached and destroyed, and the memory it reads with it");
  return handle_;
}

bool sampler_handle(py::handle obj, unsigned long long *out) {
  static PyTypeObject *texture = nullptr, *surface = nullptr;
  if (texture == nullptr) {
    texture = reinterpret_cast<PyTypeObject *>(py::type::of<texture_object>().ptr());
    surface = reinterpret_cast<PyTypeObject *>(py::type::of<surface_object>().ptr());
  }
  if (PyObject_TypeCheck(obj.ptr(), texture))
    *out = obj.cast<const texture_object &>().handle();
  else if (PyObject_TypeCheck(obj.ptr(), surface))
    *out = obj.cast<const surface_object &>().handle();
  else
    return false;
  return true;
}

namespace {

bool is_integer_format(CUarray_format f) {
  return f != CU_AD_FORMAT_FLOAT && f != CU_AD_FORMAT_HALF;
}

CUarray_format format_of(py::handle value) {
  return static_cast<CUarray_format>(
      py::int_(py::reinterpret_borrow<py::object>(value)).cast<int>());
}

// The resource behind `source`: an Array, or device memory that cuplug._driver.textures describes
// (GPUArray, objects with __cuda_array_interface__, or a pointer with an explicit layout).
// What the texture reads (for its use-after-free checks) goes to *memory / *array.
CUDA_RESOURCE_DESC resource_of(py::handle source, const py::dict &layout, CUarray_format *format,
                               context_ptr *ctx, device_allocation_ptr *memory,
                               cuda_array_ptr *array) {
  CUDA_RESOURCE_DESC r;
  std::memset(&r, 0, sizeof r);
  if (cuda_array *a = as_cuda_array(source)) {
    if (!layout.empty())
      throw py::type_error(
          "TextureObject: " + std::string(py::str(py::list(layout.attr("keys")()))) +
          " describe device memory; an Array has its own layout");
    r.resType = CU_RESOURCE_TYPE_ARRAY;
    r.res.array.hArray = a->handle("TextureObject");
    *format = a->descriptor().Format;
    *ctx = a->get_context();
    *array = py::reinterpret_borrow<py::object>(source).cast<cuda_array_ptr>();
    return r;
  }
  py::dict d = hooks::require(hooks::hook::describe_memory,
                              "a texture or surface over device memory")(source, **layout);
  const CUdeviceptr ptr = d["ptr"].cast<CUdeviceptr>();
  *format = format_of(d["format"]);
  const unsigned channels = d["num_channels"].cast<unsigned>();
  py::object owner = d["owner"];
  if (as_device_allocation(owner) != nullptr) {
    *memory = owner.cast<device_allocation_ptr>();
  } else if (array::array_type() != nullptr && array::is_array(owner.ptr())) {
    *memory = array::as_array(owner.ptr())->memory; // null for memory cuplug does not own
  }
  if (*memory)
    *ctx = (*memory)->get_context();
  if (d.contains("height")) {
    r.resType = CU_RESOURCE_TYPE_PITCH2D;
    r.res.pitch2D.devPtr = ptr;
    r.res.pitch2D.format = *format;
    r.res.pitch2D.numChannels = channels;
    r.res.pitch2D.width = d["width"].cast<std::size_t>();
    r.res.pitch2D.height = d["height"].cast<std::size_t>();
    r.res.pitch2D.pitchInBytes = d["pitch"].cast<std::size_t>();
  } else {
    r.resType = CU_RESOURCE_TYPE_LINEAR;
    r.res.linear.devPtr = ptr;
    r.res.linear.format = *format;
    r.res.linear.numChannels = channels;
    r.res.linear.sizeInBytes = d["size_in_bytes"].cast<std::size_t>();
  }
  return r;
}

// One of `names` (the enum's members, in value order) as the driver's value. Strings and numbers
// outside the enum are refused with the accepted members listed (PyCUDA takes the enum only).
int enum_member(py::handle value, const char *keyword, const char *enum_name,
                std::initializer_list<const char *> names) {
  std::string accepted;
  for (const char *n : names)
    accepted += std::string(accepted.empty() ? "" : ", ") + enum_name + "." + n;
  const std::string expected =
      std::string("TextureObject: ") + keyword + " must be one of " + accepted + ", got ";
  if (PyUnicode_Check(value.ptr()) || PyBytes_Check(value.ptr()) || PyFloat_Check(value.ptr()) ||
      !PyIndex_Check(value.ptr()))
    throw py::type_error(expected + std::string(py::repr(value)) + " (" + type_name(value) + ")");
  const long long v = py::int_(py::reinterpret_borrow<py::object>(value)).cast<long long>();
  if (v < 0 || v >= static_cast<long long>(names.size()))
    throw py::value_error(expected + std::to_string(v));
  return static_cast<int>(v);
}

// TextureObject's keywords that become its CUDA_TEXTURE_DESC.
struct texture_options {
  py::object address_mode, filter_mode, border_color;
  bool normalized_coords, srgb;
  std::string read_mode;
  unsigned max_anisotropy, flags;
};

CUDA_TEXTURE_DESC texture_desc(const texture_options &o, CUarray_format format) {
  CUDA_TEXTURE_DESC t;
  std::memset(&t, 0, sizeof t);
  py::object modes = o.address_mode;
  py::list list;
  if (py::isinstance<py::sequence>(modes) && !py::isinstance<py::str>(modes))
    list = py::list(modes);
  else
    list.append(modes);
  if (list.size() == 0 || list.size() > 3)
    throw py::value_error("TextureObject: address_mode must be one address_mode or a sequence of "
                          "1 to 3 (one per dimension), got " +
                          std::to_string(list.size()));
  for (int i = 0; i < 3; ++i)
    t.addressMode[i] = static_cast<CUaddress_mode>(
        enum_member(list[std::min<std::size_t>(i, list.size() - 1)], "address_mode", "address_mode",
                    {"WRAP", "CLAMP", "MIRROR", "BORDER"}));
  t.filterMode = static_cast<CUfilter_mode>(
      enum_member(o.filter_mode, "filter_mode", "filter_mode", {"POINT", "LINEAR"}));
  const std::string &read_mode = o.read_mode;
  if (read_mode != "element_type" && read_mode != "normalized_float")
    throw py::value_error("TextureObject: read_mode must be 'element_type' or 'normalized_float', "
                          "got '" +
                          read_mode + "'");
  t.flags = o.flags;
  // cudaReadModeElementType: integer texels are read as they are, not promoted to [0, 1].
  if (read_mode == "element_type" && is_integer_format(format)) {
    if (t.filterMode == CU_TR_FILTER_MODE_LINEAR)
      throw py::value_error("TextureObject: filter_mode LINEAR interpolates floats, but the "
                            "integer texels would be read as integers (read_mode="
                            "'element_type'); pass read_mode='normalized_float' or use "
                            "filter_mode POINT");
    t.flags |= CU_TRSF_READ_AS_INTEGER;
  }
  if (o.normalized_coords)
    t.flags |= CU_TRSF_NORMALIZED_COORDINATES;
  if (o.srgb)
    t.flags |= CU_TRSF_SRGB;
  t.maxAnisotropy = o.max_anisotropy;
  if (!o.border_color.is_none()) {
    py::list color(o.border_color);
    if (color.size() > 4)
      throw py::value_error("TextureObject: border_color takes at most 4 values (r, g, b, a)");
    for (std::size_t i = 0; i < color.size(); ++i)
      t.borderColor[i] = color[i].cast<float>();
  }
  return t;
}

std::unique_ptr<texture_object> make_texture(py::handle source, const texture_options &options,
                                             const py::dict &layout) {
  CUarray_format format;
  context_ptr ctx;
  device_allocation_ptr memory;
  cuda_array_ptr array;
  const CUDA_RESOURCE_DESC res = resource_of(source, layout, &format, &ctx, &memory, &array);
  const CUDA_TEXTURE_DESC tex = texture_desc(options, format);
  if (!ctx)
    ctx = context::current_or_throw("TextureObject");
  scoped_activation_if_none active(ctx);
  CUtexObject handle = 0;
  CUPLUG_CALL(cuTexObjectCreate, &handle, &res, &tex, nullptr);
  auto made = std::make_unique<texture_object>(sampler::kind::texture, ctx, handle,
                                               py::reinterpret_borrow<py::object>(source));
  made->watch(std::move(memory), std::move(array));
  return made;
}

std::unique_ptr<surface_object> make_surface(py::handle source) {
  cuda_array *a = as_cuda_array(source);
  if (a == nullptr)
    throw py::type_error("SurfaceObject: the source must be an Array, got " + type_name(source));
  if (!(a->descriptor().Flags & CUDA_ARRAY3D_SURFACE_LDST))
    throw py::value_error("SurfaceObject: the Array was made without array3d_flags.SURFACE_LDST; "
                          "make it from an ArrayDescriptor3D with flags=array3d_flags.SURFACE_LDST "
                          "(np_to_array(..., allowSurfaceBind=True) does)");
  CUDA_RESOURCE_DESC res;
  std::memset(&res, 0, sizeof res);
  res.resType = CU_RESOURCE_TYPE_ARRAY;
  res.res.array.hArray = a->handle("SurfaceObject");
  scoped_activation_if_none active(a->get_context());
  CUsurfObject handle = 0;
  CUPLUG_CALL(cuSurfObjectCreate, &handle, &res);
  auto made = std::make_unique<surface_object>(sampler::kind::surface, a->get_context(), handle,
                                               py::reinterpret_borrow<py::object>(source));
  made->watch(nullptr, py::reinterpret_borrow<py::object>(source).cast<cuda_array_ptr>());
  return made;
}

template <class T> void bind_common(py::class_<T> &cls) {
  cls.def_property_readonly(
         "handle", [](const T &s) { return s.handle(); }, "The 64-bit object handle as an int.")
      .def("__int__", [](const T &s) { return s.handle(); })
      .def("__index__", [](const T &s) { return s.handle(); })
      .def_property_readonly(
          "source", [](const T &s) -> hint::texture_source { return s.source(); },
          "What it reads (kept alive by it).")
      .def(
          "destroy", [](T &s) { s.destroy(); }, "Destroys it now (a second call does nothing).")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](T &s, py::args) { s.destroy(); });
}

} // namespace

void init_textures(py::module_ &m) {
  py::class_<texture_object> texture(
      m, "TextureObject",
      "A texture object (cuTexObjectCreate) over an Array, a GPUArray (1D: linear memory, 2D: "
      "pitched) or device memory with an explicit layout (format, num_channels and either "
      "size_in_bytes, or width, height and pitch); pass it to kernels as a cudaTextureObject_t "
      "argument. read_mode 'element_type' reads integer texels as integers, 'normalized_float' "
      "as floats in [0, 1] ([-1, 1] when signed).");
  texture.def(
      py::init([](const hint::texture_source &source, hint::address_modes address_mode,
                  hint::filter_mode filter_mode, bool normalized_coords, std::string read_mode,
                  bool srgb, hint::border_color border_color, unsigned max_anisotropy,
                  unsigned flags, py::kwargs layout) {
        texture_options o{std::move(address_mode),
                          std::move(filter_mode),
                          std::move(border_color),
                          normalized_coords,
                          srgb,
                          std::move(read_mode),
                          max_anisotropy,
                          flags};
        return make_texture(source, o, layout);
      }),
      py::arg("source"), py::kw_only(),
      py::arg_v("address_mode", CU_TR_ADDRESS_MODE_CLAMP, "address_mode.CLAMP"),
      py::arg_v("filter_mode", CU_TR_FILTER_MODE_POINT, "filter_mode.POINT"),
      py::arg("normalized_coords") = false, py::arg("read_mode") = "element_type",
      py::arg("srgb") = false, py::arg("border_color") = py::none(), py::arg("max_anisotropy") = 0,
      py::arg("flags") = 0,
      "A texture object." CUPLUG_DOC_PARAMS
      "source : Array | GPUArray | DeviceAllocation | int\n    What it reads.\n"
      "address_mode : address_mode | tuple[address_mode, ...]\n    Out-of-range handling, one "
      "for all dimensions or one per dimension.\n"
      "filter_mode : filter_mode\n    POINT or LINEAR.\n"
      "normalized_coords : bool\n    Coordinates in [0, 1) rather than texels.\n"
      "read_mode : str\n    'element_type' or 'normalized_float'.\n"
      "srgb : bool\n    sRGB-to-linear conversion on reads.\n"
      "border_color : tuple[float, float, float, float] | None\n    The BORDER address mode's "
      "color.\n"
      "max_anisotropy : int\n    Anisotropic filtering's limit (0: off).\n"
      "flags : int\n    TRSF_* flags, or-ed.\n"
      "**layout\n    For device memory: format, num_channels and size_in_bytes (1D), or width, "
      "height (elements) and pitch (bytes) for 2D.\n");
  bind_common(texture);

  py::class_<surface_object> surface(
      m, "SurfaceObject",
      "A surface object (cuSurfObjectCreate) over an Array made with array3d_flags.SURFACE_LDST; "
      "pass it to kernels as a cudaSurfaceObject_t argument (surf2Dwrite, surf2Dread, ...).");
  surface.def(py::init([](const hint::array &source) { return make_surface(source); }),
              py::arg("array"),
              "A surface object." CUPLUG_DOC_PARAMS
              "array : Array\n    An array made with array3d_flags.SURFACE_LDST.\n");
  bind_common(surface);
}

} // namespace cuplug::python
