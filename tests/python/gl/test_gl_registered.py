"""cuplug.gl's PyCUDA API (RegisteredBuffer / RegisteredImage / RegisteredMapping, BufferObject)
and its modern form (context-manager mappings, as_array, map_all) over the fake driver's GL
stand-ins: ownership, state and error paths without a GPU or GL. The same on a real GPU and
GL context: test_gl_gpu.py."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import cuplug.driver as cuda

gl = pytest.importorskip("cuplug.gl")
from support.fakecuda_graphics import GL_TEXTURE_2D, GL_TEXTURE_2D_ARRAY, FakeGL  # noqa: E402


@pytest.fixture
def fake_gl(fake, ctx):
    objects = FakeGL(fake.lib)
    live = objects.live_resources()
    yield objects
    assert objects.live_resources() == live, "a test left a graphics resource registered"


def test_a_buffer_written_through_as_array_is_what_gl_holds(fake_gl):
    name = fake_gl.buffer(64 * 4)
    buf = gl.RegisteredBuffer(name, gl.graphics_map_flags.WRITE_DISCARD)
    assert buf.gl_handle() == name
    with buf.map() as mapping:
        ptr, size = mapping.device_ptr_and_size()
        assert ptr and size == 256
        values = mapping.as_array((8, 8), np.float32)
        values.set(np.arange(64, dtype=np.float32).reshape(8, 8))
    assert np.frombuffer(fake_gl.data(name, 256), np.float32).tolist() == list(range(64))
    buf.unregister()
    buf.unregister()  # a second call does nothing


def test_mapping_state_errors_name_the_call(fake_gl):
    buf = gl.RegisteredBuffer(fake_gl.buffer(16))
    mapping = buf.map()
    with pytest.raises(cuda.LogicError, match="already mapped"):
        buf.map()
    mapping.unmap()
    with pytest.raises(cuda.LogicError, match="unmapped"):
        mapping.unmap()
    with pytest.raises(cuda.LogicError, match="unmapped"):
        mapping.device_ptr_and_size()
    buf.unregister()
    with pytest.raises(cuda.LogicError, match="unregistered"):
        buf.map()


def test_as_array_refuses_shapes_larger_than_the_buffer(fake_gl):
    buf = gl.RegisteredBuffer(fake_gl.buffer(16))
    with buf.map() as mapping, pytest.raises(ValueError, match="needs 20 bytes.*has 16"):
        mapping.as_array(5, np.float32)
    buf.unregister()


def test_unregistering_a_mapped_buffer_ends_its_mapping(fake_gl):
    buf = gl.RegisteredBuffer(fake_gl.buffer(16))
    mapping = buf.map()
    buf.unregister()
    with pytest.raises(cuda.LogicError):
        mapping.device_ptr_and_size()


def test_an_image_maps_to_arrays_that_die_with_the_mapping(fake_gl):
    name = fake_gl.image(GL_TEXTURE_2D_ARRAY, 16, 8, depth=2, levels=2)
    image = gl.RegisteredImage(name, GL_TEXTURE_2D_ARRAY)
    mapping = image.map()
    layer1 = mapping.array(1, 0)
    d = layer1.get_descriptor_3d()
    assert (d.width, d.height) == (16, 8)
    assert mapping.array(0, 1).get_descriptor_3d().width == 8
    with pytest.raises(cuda.Error, match="cuGraphicsResourceGetMappedPointer"):
        mapping.device_ptr_and_size()
    mapping.unmap()
    with pytest.raises(cuda.LogicError, match="freed"):
        layer1.get_descriptor_3d()
    image.unregister()


def test_map_all_maps_several_in_one_call_on_a_stream(fake_gl):
    a = gl.RegisteredBuffer(fake_gl.buffer(8))
    b = gl.RegisteredBuffer(fake_gl.buffer(32))
    stream = cuda.Stream()
    with gl.map_all(a, b, stream=stream) as (ma, mb):
        assert ma.device_ptr_and_size()[1] == 8 and mb.device_ptr_and_size()[1] == 32
    with pytest.raises(cuda.LogicError):
        ma.device_ptr_and_size()
    a.map(stream).unmap()  # unmapped by map_all: maps again
    a.unregister()
    b.unregister()


def test_registering_an_unknown_gl_name_says_what_to_check(fake_gl):
    with pytest.raises(cuda.Error, match="GL buffer 777777 is not a GL object"):
        gl.RegisteredBuffer(777777)
    with pytest.raises(cuda.Error, match="GL_TEXTURE_2D 777778"):
        gl.RegisteredImage(777778, GL_TEXTURE_2D)


def test_the_deprecated_buffer_object_api_still_works(fake_gl):
    name = fake_gl.buffer(12)
    with pytest.warns(DeprecationWarning):
        bo = gl.BufferObject(name)
    assert bo.handle() == name
    m = bo.map()
    assert m.device_ptr() and m.size() == 12
    m.unmap()
    bo.unregister()


def test_pycuda_names_and_flags():
    assert [int(f) for f in gl.graphics_map_flags] == [0, 1, 2]
    assert [f.name for f in gl.graphics_map_flags] == ["NONE", "READ_ONLY", "WRITE_DISCARD"]
    with pytest.warns(DeprecationWarning):
        gl.init()


@pytest.mark.gpu
def test_make_context_makes_a_pushed_context():
    cuda.init()
    context = gl.make_context(cuda.Device(0))
    try:
        assert cuda.Context.get_current() == context
    finally:
        cuda.Context.pop()
        context.detach()


def test_pycuda_gl_resolves_to_cuplug_gl():
    code = (
        "import cuplug.compat.pycuda, cuplug.gl, pycuda.gl, pycuda.gl.autoinit as a\n"
        "import cuplug.gl.autoinit as b\n"
        "assert pycuda.gl is cuplug.gl and a is b\n"
    )
    # autoinit needs a device: without one the alias must still resolve pycuda.gl itself.
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                "import cuplug.compat.pycuda, cuplug.gl, pycuda.gl\nassert pycuda.gl is cuplug.gl",
            ],
            capture_output=True,
            text=True,
        )
    assert proc.returncode == 0, proc.stderr


def test_without_the_interop_backend_the_import_fails_with_the_reason(tmp_path):
    env = {"CUPLUG_INTEROP": "nosuchinterop", "CUPLUG_CONFIG": "", "HOME": str(tmp_path)}
    import os

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CUPLUG_INTEROP")}, **env}
    proc = subprocess.run(
        [sys.executable, "-c", "import cuplug.gl"], capture_output=True, text=True, env=env
    )
    assert proc.returncode != 0
    assert "ImportError: cuplug.gl is not available" in proc.stderr
    assert "nosuchinterop" in proc.stderr
