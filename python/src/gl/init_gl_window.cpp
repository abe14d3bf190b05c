// The extension module cuplug._gl_window: the GL window helper (interop/gl_window.hpp) for
// cuplug.gl.Window. It links no GL library (GLFW, EGL and GL are loaded when a Canvas is made:
// interop/gl_api.hpp); it is apart from cuplug._core so that importing cuplug loads none of it.
#include <gl_window.hpp>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <optional>
#include <string>

namespace py = pybind11;
using cuplug::gl::gl_window;

namespace {

// A writable or readable contiguous buffer of at least `bytes` bytes.
py::buffer_info contiguous(py::buffer b, std::size_t bytes, bool writable, const char *what) {
  py::buffer_info info = b.request(writable);
  const auto have = static_cast<std::size_t>(info.size * info.itemsize);
  if (have < bytes)
    throw py::value_error(std::string(what) + ": the buffer holds " + std::to_string(have) +
                          " bytes; " + std::to_string(bytes) + " are needed");
  return info;
}

} // namespace

PYBIND11_MODULE(_gl_window, m) {
  m.doc() = "cuplug's GL window helper: GLFW windows and headless EGL contexts, GLFW, EGL and GL "
            "loaded at run time";
  py::register_exception<cuplug::gl::gl_error>(m, "GLError", PyExc_RuntimeError);
  m.def("glfw_unavailable", &cuplug::gl::glfw_unavailable,
        "Why a window cannot be opened here (libglfw.so.3 does not load), or '' where it can.");
  m.def("egl_unavailable", &cuplug::gl::egl_unavailable,
        "Why a headless context cannot be made here (libEGL.so.1 does not load), or '' where it "
        "can.");
  m.def(
      "load_libraries",
      [](bool headless) {
        if (headless)
          cuplug::gl::load_egl();
        else
          cuplug::gl::load_glfw();
      },
      py::arg("headless"),
      "Loads libEGL.so.1 (headless) or libglfw.so.3; GLError naming the library and its "
      "Debian/Ubuntu package where it is missing.");

  py::class_<cuplug::gl::key_event>(m, "KeyEvent")
      .def_readonly("key", &cuplug::gl::key_event::key)
      .def_readonly("scancode", &cuplug::gl::key_event::scancode)
      .def_readonly("action", &cuplug::gl::key_event::action)
      .def_readonly("mods", &cuplug::gl::key_event::mods);

  py::class_<gl_window>(m, "Canvas", "A GL context and its offscreen framebuffer (gl_window.hpp)")
      .def(py::init([](int width, int height, const std::string &title, bool headless, bool visible,
                       bool vsync, int cuda_device) {
             cuplug::gl::window_options o;
             o.width = width;
             o.height = height;
             o.title = title;
             o.headless = headless;
             o.visible = visible;
             o.vsync = vsync;
             o.cuda_device = cuda_device;
             return new gl_window(o);
           }),
           py::arg("width"), py::arg("height"), py::arg("title") = "cuplug",
           py::arg("headless") = false, py::arg("visible") = true, py::arg("vsync") = false,
           py::arg("cuda_device") = -1)
      .def("make_current", &gl_window::make_current)
      .def_property_readonly("headless", &gl_window::headless)
      .def_property_readonly("width", &gl_window::width)
      .def_property_readonly("height", &gl_window::height)
      .def("describe", &gl_window::describe)
      .def("create_buffer", &gl_window::create_buffer, py::arg("nbytes"))
      .def("buffer_size", &gl_window::buffer_size, py::arg("buffer"))
      .def(
          "write_buffer",
          [](gl_window &w, unsigned buffer, py::buffer data, std::size_t offset) {
            py::buffer_info info = data.request();
            w.write_buffer(buffer, offset, info.ptr,
                           static_cast<std::size_t>(info.size * info.itemsize));
          },
          py::arg("buffer"), py::arg("data"), py::arg("offset") = 0)
      .def(
          "read_buffer",
          [](gl_window &w, unsigned buffer, py::buffer out, std::size_t offset) {
            py::buffer_info info = out.request(true);
            w.read_buffer(buffer, offset, info.ptr,
                          static_cast<std::size_t>(info.size * info.itemsize));
          },
          py::arg("buffer"), py::arg("out"), py::arg("offset") = 0)
      .def("delete_buffer", &gl_window::delete_buffer, py::arg("buffer"))
      .def("create_texture", &gl_window::create_texture, py::arg("width"), py::arg("height"),
           py::arg("float32") = false)
      .def("texture_from_buffer", &gl_window::texture_from_buffer, py::arg("texture"),
           py::arg("pixel_buffer"), py::arg("width"), py::arg("height"), py::arg("float32") = false)
      .def(
          "texture_from_host",
          [](gl_window &w, unsigned texture, py::buffer pixels, int width, int height,
             bool float32) {
            const std::size_t bytes = std::size_t(width) * height * 4 * (float32 ? 4 : 1);
            py::buffer_info info = contiguous(pixels, bytes, false, "texture_from_host");
            w.texture_from_host(texture, info.ptr, width, height, float32);
          },
          py::arg("texture"), py::arg("pixels"), py::arg("width"), py::arg("height"),
          py::arg("float32") = false)
      .def("delete_texture", &gl_window::delete_texture, py::arg("texture"))
      .def("clear", &gl_window::clear, py::arg("r"), py::arg("g"), py::arg("b"), py::arg("a"))
      .def("draw_texture", &gl_window::draw_texture, py::arg("texture"))
      .def("draw_buffer_image", &gl_window::draw_buffer_image, py::arg("pixel_buffer"),
           py::arg("width"), py::arg("height"), py::arg("float32") = false,
           "Draws the RGBA image in a pixel buffer into the whole framebuffer straight from the "
           "buffer; False (nothing drawn) where the context cannot: copy it into a texture.")
      .def(
          "draw_vertices",
          [](gl_window &w, unsigned buffer, std::size_t count, int components, unsigned mode,
             std::vector<float> rgba, unsigned color_buffer, float point_size,
             std::optional<std::vector<float>> transform) {
            if (rgba.size() != 4)
              throw py::value_error("draw_vertices: color needs 4 values (r, g, b, a)");
            if (transform && transform->size() != 16)
              throw py::value_error("draw_vertices: transform needs 16 values (a 4x4 matrix)");
            w.draw_vertices(buffer, count, components, mode, rgba.data(), color_buffer, point_size,
                            transform ? transform->data() : nullptr);
          },
          py::arg("buffer"), py::arg("count"), py::arg("components"), py::arg("mode"),
          py::arg("rgba"), py::arg("color_buffer") = 0, py::arg("point_size") = 1.0f,
          py::arg("transform") = py::none())
      .def(
          "read_pixels",
          [](gl_window &w, py::buffer out) {
            const std::size_t bytes = std::size_t(w.width()) * w.height() * 4;
            py::buffer_info info = contiguous(out, bytes, true, "read_pixels");
            w.read_pixels(info.ptr);
          },
          py::arg("out"))
      .def("present", &gl_window::present, py::call_guard<py::gil_scoped_release>())
      .def("finish", &gl_window::finish, py::call_guard<py::gil_scoped_release>())
      .def("poll_events", &gl_window::poll_events)
      .def("should_close", &gl_window::should_close)
      .def("set_should_close", &gl_window::set_should_close, py::arg("value"))
      .def("take_key_events", &gl_window::take_key_events)
      .def("take_resized", &gl_window::take_resized)
      .def("set_title", &gl_window::set_title, py::arg("title"));
}
