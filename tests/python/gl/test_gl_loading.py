"""The window helper loads GLFW, EGL and GL at run time (interop/gl_api.hpp): its module links
none of them (so a wheel can ship it), importing cuplug.gl loads none of them, and a missing one
is an error of the Window being made, naming the library and the package that provides it."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

# What a build of the helper must not link: each would have to travel in a wheel.
GL_LIBRARIES = re.compile(r"lib(glfw|EGL|GL|GLX|OpenGL|GLEW)\b")


@pytest.fixture
def helper():
    """The built window helper module (cuplug._gl_window)."""
    gl = pytest.importorskip("cuplug.gl", reason="cuplug.gl is not available")
    from cuplug import _core

    if not _core.gl.WINDOW_BUILT:
        pytest.skip(f"built without the window helper: {_core.gl.WINDOW_MISSING}")
    from cuplug import _gl_window

    assert gl is not None
    return _gl_window


def run_python(code, **env):
    """`code` in a fresh interpreter (libraries load once per process), with `env` added."""
    full = {**os.environ, **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full)


def test_the_helper_module_links_no_gl_library(helper):
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("no readelf (Debian: binutils)")
    dynamic = subprocess.run([readelf, "-d", helper.__file__], capture_output=True, text=True)
    assert dynamic.returncode == 0, dynamic.stderr
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic.stdout)
    assert needed, f"readelf found no NEEDED entries at all in {helper.__file__}:\n{dynamic.stdout}"
    linked = [n for n in needed if GL_LIBRARIES.match(n)]
    assert linked == [], f"{helper.__file__} links {linked}: they must be loaded at run time"


def test_importing_cuplug_gl_and_the_helper_loads_no_gl_library(helper):
    code = (
        "import cuplug, cuplug.gl\n"
        "from cuplug import _gl_window\n"
        "maps = open('/proc/self/maps').read()\n"
        "print(sorted({l.split('/')[-1] for l in maps.splitlines()"
        " if any(n in l for n in ('libglfw', 'libEGL', 'libGL', 'libOpenGL', 'libGLEW'))}))\n"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"loaded at import: {proc.stdout}"


WINDOW = "from cuplug.gl import Window\nWindow(8, 8, interop=False, visible=False{})\n"


def test_a_window_without_glfw_names_the_library_and_its_package(helper):
    missing = "/nonexistent/libglfw.so.3"
    proc = run_python("import cuplug.gl\n" + WINDOW.format(""), CUPLUG_GLFW_LIBRARY=missing)
    assert proc.returncode != 0
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("cuplug._gl_window.GLError: cuplug.gl.Window needs libglfw.so.3"), error
    assert "(Debian/Ubuntu: libglfw3)" in error and f"CUPLUG_GLFW_LIBRARY={missing}" in error
    assert "headless=True needs libEGL.so.1" in error  # what works without GLFW
    assert "No such file or directory" in error  # dlopen's own reason


def test_a_headless_context_without_egl_names_the_library_and_its_package(helper):
    proc = run_python(WINDOW.format(", headless=True"), CUPLUG_EGL_LIBRARY="libEGL-nonexistent.so")
    assert proc.returncode != 0
    error = proc.stderr.strip().splitlines()[-1]
    assert "cuplug.gl.Window needs libEGL.so.1 (Debian/Ubuntu: libegl1)" in error, error
    assert "CUPLUG_EGL_LIBRARY=libEGL-nonexistent.so" in error


def test_a_missing_library_is_an_error_of_the_window_and_is_reported_by_window_support(helper):
    """cuplug and cuplug.gl import without the libraries; window_support() says why not; the
    error is a RuntimeError (GLError) raised by Window(), before any CUDA context is made."""
    code = (
        "import cuplug, cuplug.gl\n"
        "windowed, headless, why = cuplug.gl.window_support()\n"
        "assert (windowed, headless) == (False, False), (windowed, headless)\n"
        "assert 'libglfw.so.3' in why and 'libEGL.so.1' in why, why\n"
        "try:\n"
        "    cuplug.gl.Window(8, 8, headless=True)\n"  # interop=True: a context would be next
        "except RuntimeError as e:\n"
        "    assert type(e).__name__ == 'GLError' and 'libEGL.so.1' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('no error')\n"
        "import cuplug.driver as drv\n"
        "assert drv.Context.get_current() is None, 'a CUDA context was made before the error'\n"
        "print('ok')\n"
    )
    proc = run_python(
        code,
        CUPLUG_GLFW_LIBRARY="/nonexistent/libglfw.so.3",
        CUPLUG_EGL_LIBRARY="/nonexistent/libEGL.so.1",
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_window_support_is_true_where_the_libraries_load(helper):
    """Where GLFW and EGL are installed (CI: tools/ensure_deps.sh), both kinds are reported."""
    from cuplug.gl import window_support

    windowed, headless, why = window_support()
    glfw, egl = helper.glfw_unavailable(), helper.egl_unavailable()
    assert windowed == (glfw == "") and headless == (egl == ""), (glfw, egl)
    assert why == " / ".join(w for w in (glfw, egl) if w)
    if os.environ.get("CI") and not (windowed and headless):
        pytest.fail(f"CI installs libglfw3 and libegl1 (tools/ensure_deps.sh): {why}")


def test_the_helper_sources_include_no_gl_header():
    """Building the helper needs no GL, EGL or GLFW header (a wheel builds where none is
    installed), nor does the interop plugin: only gl_api_check.cpp, built where they are,
    includes them."""
    root = pathlib.Path(__file__).resolve().parents[3]
    sources = sorted(root.glob("interop/gl_*.[ch]pp")) + [root / "python/src/gl/init_gl_window.cpp"]
    assert root / "interop/gl_api.cpp" in sources
    header = re.compile(r"#\s*include\s*[<\"](GL|EGL|GLFW|KHR)/")
    including = [
        p.name for p in sources if p.name != "gl_api_check.cpp" and header.search(p.read_text())
    ]
    assert including == [], f"include GL headers: {including}"
