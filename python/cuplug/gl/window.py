"""``cuplug.gl.Window``: a GLFW window (or a headless EGL context) whose vertex buffer and pixel
buffer are GPUArrays that kernels write each frame, shown without a copy through the host.

    win = Window(800, 600, pixels=True)              # headless=True: no display needed
    def draw(frame):                                 # frame.pixels: (600, 800, 4) uint8 GPUArray
        my_kernel(frame.pixels, np.float32(frame.time), block=..., grid=...)
    win.run(draw)                                    # until closed (Esc) or frames=N
    win.save_png("last.png")
"""

from __future__ import annotations

import contextlib
import operator
import time

import numpy as np

import cuplug.driver as _drv
from cuplug import _core
from cuplug.gl._png import write as _write_png
from cuplug.gl._registered import RegisteredBuffer, map_all

GL_POINTS, GL_LINES, GL_LINE_STRIP, GL_TRIANGLES = 0x0000, 0x0001, 0x0003, 0x0004
_MODES = {"points": GL_POINTS, "lines": GL_LINES, "line_strip": GL_LINE_STRIP, "triangles": 4}
KEY_ESCAPE, PRESS = 256, 1  # GLFW_KEY_ESCAPE, GLFW_PRESS
#: The largest width or height (interop/gl_window.hpp's max_window_side: GL_MAX_TEXTURE_SIZE of
#: NVIDIA's drivers, the framebuffer being one texture).
_MAX_SIDE = 32768


def _side(name, value):
    """``value`` as a window width or height; checked before anything of GL or CUDA is touched."""
    try:
        side = operator.index(value)
    except TypeError:
        raise TypeError(f"Window {name} must be an integer, not {type(value).__name__}") from None
    if not 1 <= side <= _MAX_SIDE:
        raise ValueError(f"Window {name} {side} is out of range: it must be from 1 to {_MAX_SIDE}")
    return side


def window_support():
    """(windowed, headless, why not): what ``Window`` can open here. The window helper loads its
    libraries when asked, never at import: a window needs ``libglfw.so.3`` (Debian/Ubuntu:
    libglfw3), a headless context ``libEGL.so.1`` (libegl1); this loads whichever is present."""
    if not _core.gl.WINDOW_BUILT:
        return False, False, _core.gl.WINDOW_MISSING or "not built"
    try:
        from cuplug import _gl_window
    except ImportError as e:  # a broken install: the module itself links no GL library
        return False, False, f"cuplug._gl_window cannot be loaded: {e}"
    no_window, no_headless = _gl_window.glfw_unavailable(), _gl_window.egl_unavailable()
    return not no_window, not no_headless, " / ".join(w for w in (no_window, no_headless) if w)


def _canvas_module():
    """The window helper's module; ImportError where this build has none."""
    if not _core.gl.WINDOW_BUILT:
        raise ImportError(f"cuplug.gl.Window is not available: {_core.gl.WINDOW_MISSING}")
    try:
        from cuplug import _gl_window
    except ImportError as e:
        raise ImportError(f"cuplug.gl.Window is not available: {e}") from e
    return _gl_window


class Frame:
    """What a frame callback gets: the mapped buffers as GPUArrays (None when the window has no
    such buffer), the frame's index, the seconds since the first frame and since the last."""

    def __init__(self, index, t, dt, vertices, colors, pixels, stream):
        self.index, self.time, self.dt = index, t, dt
        self.vertices, self.colors, self.pixels = vertices, colors, pixels
        self.stream = stream


class Window:
    """A GL window or headless context that owns, as GL buffers registered with CUDA:

    - ``vertices``: ``vertices`` points of ``vertex_components`` float32 each (drawn as
      ``mode``: "points", "lines", "line_strip" or "triangles", in ``color`` or, with
      ``colors=True``, a per-vertex RGBA uint8 buffer), optionally through the column-major
      4x4 ``transform``;
    - ``pixels=True``: a width x height RGBA image (uint8, or float32 with
      ``pixel_dtype=np.float32``; row 0 is the top) in a pixel buffer copied into a texture by
      GL each frame and drawn under the vertices.

    ``frame()`` maps them as GPUArrays for a ``with`` block and draws at its end; ``run(callback)``
    loops over frames until the window closes (Esc, the close button, ``close()``) or ``frames``
    frames. Keys go to ``on_key(key, action, mods)`` (GLFW's values). Without a current CUDA
    context one is made on the default device (and popped by ``close()``). With
    ``interop=False`` nothing is registered with CUDA (no GPU needed): buffers are filled from
    the host with ``upload()``. The system's GLFW (``libglfw.so.3``) or, headless, EGL
    (``libEGL.so.1``) is loaded here, not at import: where it is missing, ``GLError`` (a
    ``RuntimeError``) names the library and its Debian/Ubuntu package.
    """

    def __init__(
        self,
        width=640,
        height=480,
        title="cuplug",
        *,
        headless=False,
        vertices=0,
        vertex_components=4,
        colors=False,
        pixels=False,
        pixel_dtype=np.uint8,
        mode="points",
        color=(1.0, 1.0, 1.0, 1.0),
        point_size=1.0,
        background=(0.0, 0.0, 0.0, 1.0),
        transform=None,
        visible=True,
        vsync=False,
        stream=None,
        on_key=None,
        interop=True,
    ):
        width, height = _side("width", width), _side("height", height)
        module = _canvas_module()
        if mode not in _MODES:
            raise ValueError(f"mode {mode!r}: use one of {', '.join(_MODES)}")
        self.pixel_dtype = np.dtype(pixel_dtype)
        if pixels and self.pixel_dtype not in (np.uint8, np.float32):
            raise ValueError(f"pixel_dtype {self.pixel_dtype}: use numpy.uint8 or numpy.float32")
        # GLFW or EGL before any CUDA context: a missing library is the error, naming it.
        module.load_libraries(bool(headless))
        self._own_context = None
        self.interop = bool(interop)
        if self.interop and _drv.Context.get_current(adopt=True) is None:
            from cuplug._auto import _retain_primary_context
            from cuplug.tools import make_default_context

            _drv.init()
            # The primary context, as cuplug.autoinit makes: shared with the runtime's libraries.
            self._own_context = make_default_context(_retain_primary_context)
        self._canvas = module.Canvas(
            width,
            height,
            title,
            headless=headless,
            visible=visible,
            vsync=vsync,
            cuda_device=_device_ordinal() if self.interop else -1,
        )
        self.width, self.height = width, height
        self.mode, self.color, self.point_size = _MODES[mode], tuple(color), float(point_size)
        self.background, self.transform = tuple(background), transform
        self.stream, self.on_key = stream, on_key
        self.vertex_count, self.vertex_components = int(vertices), int(vertex_components)
        self._buffers, self._registered = {}, {}
        c = self._canvas
        if self.vertex_count:
            self._add("vertices", self.vertex_count * self.vertex_components * 4)
        if self.vertex_count and colors:
            self._add("colors", self.vertex_count * 4)
        self._texture = 0
        if pixels:
            self._add("pixels", width * height * 4 * self.pixel_dtype.itemsize)
            self._texture = c.create_texture(width, height, self.pixel_dtype == np.float32)
        self.frame_index, self.frame_time = 0, 0.0
        self._start = self._last = None

    def _add(self, name, nbytes):
        buffer = self._canvas.create_buffer(nbytes)
        self._buffers[name] = buffer
        if self.interop:
            self._registered[name] = RegisteredBuffer(buffer)

    @property
    def headless(self):
        """Whether it is a headless (EGL) context rather than a window."""
        return self._canvas.headless

    def describe(self):
        """The GL version, renderer and kind of context (window or headless EGL device)."""
        return self._canvas.describe()

    def gl_buffer(self, name):
        """The GL name of buffer "vertices", "colors" or "pixels" (for your own GL calls).

        Parameters
        ----------
        name : str
            "vertices", "colors" or "pixels".

        Returns
        -------
        int
            The GL buffer name.
        """
        return self._buffers[name]

    def upload(self, name, host_array):
        """Fills buffer "vertices", "colors" or "pixels" from host memory (glBufferSubData): the
        host path, with no CUDA involved.

        Parameters
        ----------
        name : str
            "vertices", "colors" or "pixels".
        host_array : numpy.typing.ArrayLike
            The data (at most the buffer's bytes).
        """
        data = np.ascontiguousarray(host_array)
        self._canvas.write_buffer(self._buffers[name], data)

    def download(self, name, dtype=np.uint8):
        """What GL holds in buffer ``name`` (glGetBufferSubData), as a flat host array.

        Parameters
        ----------
        name : str
            "vertices", "colors" or "pixels".
        dtype : numpy.typing.DTypeLike
            The element type of the result.

        Returns
        -------
        numpy.ndarray
            The buffer's contents.
        """
        buffer = self._buffers[name]
        out = np.empty(self._canvas.buffer_size(buffer) // np.dtype(dtype).itemsize, dtype)
        self._canvas.read_buffer(buffer, out)
        return out

    @contextlib.contextmanager
    def frame(self):
        """Maps the window's buffers for one frame and yields a Frame; at the end of the block
        unmaps them (ordered on ``stream``), updates the texture and draws."""
        if not self.interop:
            raise _core.LogicError(
                "Window.frame: this window was made with interop=False; fill its buffers with "
                "upload() and call draw()"
            )
        self._canvas.make_current()
        now = time.perf_counter()
        if self._start is None:
            self._start = self._last = now
        names = list(self._registered)
        objects = [self._registered[n] for n in names]
        with map_all(*objects, stream=self.stream) as mappings:
            arrays = dict.fromkeys(("vertices", "colors", "pixels"))
            for name, m in zip(names, mappings):
                if name == "vertices":
                    shape, dtype = (self.vertex_count, self.vertex_components), np.float32
                elif name == "colors":
                    shape, dtype = (self.vertex_count, 4), np.uint8
                else:
                    shape, dtype = (self.height, self.width, 4), self.pixel_dtype
                arrays[name] = m.as_array(shape, dtype)
            yield Frame(
                self.frame_index,
                now - self._start,
                now - self._last,
                arrays["vertices"],
                arrays["colors"],
                arrays["pixels"],
                self.stream,
            )
        self.draw()
        self.frame_index += 1
        self.frame_time = time.perf_counter() - now
        self._last = now

    def draw(self):
        """Draws the current contents of the buffers and shows them (swaps, or finishes
        headless)."""
        c = self._canvas
        if self._texture:
            # The image covers the framebuffer (no clear needed) and is drawn straight from the
            # pixel buffer; GL copies it into the texture first only where it cannot.
            pixels, float32 = self._buffers["pixels"], self.pixel_dtype == np.float32
            if not c.draw_buffer_image(pixels, self.width, self.height, float32):
                c.clear(*self.background)
                c.texture_from_buffer(self._texture, pixels, self.width, self.height, float32)
                c.draw_texture(self._texture)
        else:
            c.clear(*self.background)
        if self.vertex_count:
            c.draw_vertices(
                self._buffers["vertices"],
                self.vertex_count,
                self.vertex_components,
                self.mode,
                list(self.color),
                self._buffers.get("colors", 0),
                self.point_size,
                None if self.transform is None else list(np.asarray(self.transform, "f4").flat),
            )
        c.present()

    def run(self, callback, frames=None, report_every=0.0):
        """Calls ``callback(frame)`` inside ``frame()`` until the window closes or ``frames``
        frames were drawn; with ``report_every`` seconds > 0, shows the frame rate in the
        title. Returns the number of frames drawn.

        Parameters
        ----------
        callback : collections.abc.Callable[[Frame], None]
            Draws one frame.
        frames : int | None
            Frames to draw; None: until the window closes.
        report_every : float
            Seconds between frame-rate reports in the title; 0: none.

        Returns
        -------
        int
            Frames drawn.
        """
        drawn, since, count = 0, time.perf_counter(), 0
        while not self.should_close() and (frames is None or drawn < frames):
            self.poll_events()
            with self.frame() as f:
                callback(f)
            drawn += 1
            count += 1
            if report_every and time.perf_counter() - since >= report_every:
                fps = count / (time.perf_counter() - since)
                self._canvas.set_title(f"{fps:.1f} fps, {1000 / fps:.2f} ms/frame")
                since, count = time.perf_counter(), 0
        return drawn

    def poll_events(self):
        """Handles window events: keys (Esc closes) and size changes."""
        c = self._canvas
        c.poll_events()
        for e in c.take_key_events():
            if e.key == KEY_ESCAPE and e.action == PRESS:
                c.set_should_close(True)
            if self.on_key is not None:
                self.on_key(e.key, e.action, e.mods)
        c.take_resized()

    @property
    def framebuffer_size(self):
        """(width, height) of what is drawn: the window's current size."""
        return self._canvas.width, self._canvas.height

    def should_close(self):
        """Whether the user asked the window to close (always False when headless)."""
        return self._canvas.should_close()

    def read_pixels(self):
        """What was drawn last, as an (height, width, 4) uint8 array, top row first."""
        out = np.empty((self._canvas.height, self._canvas.width, 4), np.uint8)
        self._canvas.read_pixels(out)
        return out

    def save_png(self, path):
        """Writes what was drawn last to a PNG file; returns the pixels.

        Parameters
        ----------
        path : str | os.PathLike
            The PNG file to write.

        Returns
        -------
        numpy.ndarray
            The pixels, (height, width, 4) uint8.
        """
        pixels = self.read_pixels()
        _write_png(path, pixels)
        return pixels

    def close(self):
        """Unregisters the buffers, closes the window and pops a context it made."""
        for r in self._registered.values():
            r.unregister()
        self._registered = {}
        canvas, self._canvas = getattr(self, "_canvas", None), None
        del canvas
        if self._own_context is not None:
            if _drv.Context.get_current(adopt=True) == self._own_context:
                _drv.Context.pop()
            self._own_context = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _device_ordinal():
    """The current context's device ordinal (the EGL device to prefer headless)."""
    dev = _drv.Context.get_device()
    bus = dev.pci_bus_id()
    for i in range(_drv.Device.count()):
        if _drv.Device(i).pci_bus_id() == bus:
            return i
    return -1
