"""Fixtures of the GL tests: an X display (an Xvfb started here when there is none) and the GL
window helper, each skipping with the reason when missing."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import tempfile
import time

import pytest


def _window_module():
    try:
        from cuplug.gl.window import window_support
    except ImportError as e:
        pytest.skip(f"cuplug.gl is not available: {e}")
    windowed, headless, why = window_support()
    return windowed, headless, why


@pytest.fixture(scope="session")
def x_display():
    """A display for GLFW windows: $DISPLAY, or an Xvfb (Mesa's GLX) started for the session."""
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.skip("no X display and no Xvfb (Debian: xvfb) to start one")
    for number in range(90, 110):
        if not os.path.exists(f"/tmp/.X{number}-lock"):
            break
    command = [xvfb, f":{number}", "-screen", "0", "1024x768x24", "-nolisten", "tcp"]
    if os.environ.get("CUPLUG_XKB_DIR"):  # an Xvfb unpacked into a prefix (tools/gl_setup.sh)
        command += ["-xkbdir", os.environ["CUPLUG_XKB_DIR"]]
    log = tempfile.NamedTemporaryFile("w+", prefix="cuplug-xvfb-", suffix=".log")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    socket = pathlib.Path(f"/tmp/.X11-unix/X{number}")
    for _ in range(100):
        if socket.exists() or proc.poll() is not None:
            break
        time.sleep(0.05)
    if proc.poll() is not None:
        log.seek(0)
        tail = " | ".join(log.read().strip().splitlines()[-5:])
        pytest.skip(f"Xvfb :{number} did not start (exit {proc.returncode}): {tail}")
    os.environ["DISPLAY"] = f":{number}"
    try:
        yield os.environ["DISPLAY"]
    finally:
        del os.environ["DISPLAY"]
        proc.terminate()
        proc.wait(10)
        log.close()


@pytest.fixture
def windowed(x_display):
    windowed, _, why = _window_module()
    if not windowed:
        pytest.skip(f"GL windows are not available here: {why}")


@pytest.fixture
def headless():
    _, headless, why = _window_module()
    if not headless:
        pytest.skip(f"headless GL (EGL) is not available here: {why}")


@pytest.fixture
def any_window():
    """Windows or headless contexts can be made here (the helper was built and GLFW or EGL
    loads), whether or not either then opens."""
    windowed, headless, why = _window_module()
    if not (windowed or headless):
        pytest.skip(f"cuplug.gl.Window is not available: {why}")
