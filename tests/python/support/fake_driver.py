"""Shared pieces of the fake driver's tests: the sample images, the driver fixtures (the fake,
then the real driver where a GPU is there) and small ctypes helpers. Re-exported by
tests/python/fake_driver/conftest.py for fixtures and star-imported by the test files of that
folder."""

from __future__ import annotations

import ctypes
import pathlib
import re
import shutil
import subprocess
import sys
import threading
from ctypes import byref, c_char_p, c_float, c_int, c_size_t, c_ubyte, c_uint, c_uint64, c_void_p

import pytest

from . import fakecuda as fc
from .fakecuda import (
    CUDA_ERROR_CONTEXT_IS_DESTROYED,
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_FOUND,
    CUDA_SUCCESS,
)

FAKE_PATH = fc.find_fake_driver()
REAL_USABLE, REAL_WHY = fc.real_driver_usable()

# PTX the real driver JITs too: kernels with no effect (safe to launch on a GPU), launch bounds,
# static shared memory, and module variables with initial values.
SAMPLE_PTX = b"""
//
// Sample module for the fake driver's tests.
//
.version 8.0
.target sm_90
.address_size 64

.global .align 4 .u32 counter = 7;
.global .align 8 .b8 table[24];
.const .align 4 .f32 coeffs[4] = {0f3F800000, 0f40000000, 0f40400000, 0f40900000};

.visible .entry params_kernel(
\t.param .u64 params_kernel_param_0,
\t.param .u32 params_kernel_param_1,
\t.param .align 8 .b8 params_kernel_param_2[24],
\t.param .u8 params_kernel_param_3,
\t.param .f64 params_kernel_param_4,
\t.param .u16 params_kernel_param_5
)
{
\tret;
}

.visible .entry bounded()
.maxntid 128, 1, 1
{
\tret;
}

.visible .entry with_shared()
{
\t.shared .align 4 .b8 tile[1024];
\t.reg .b32 %r<2>;
\tmov.u32 %r1, 0;
\tst.shared.u32 [tile], %r1;
\tret;
}

.visible .entry empty()
{
\tret;
}
"""
# (offset, size) of params_kernel's parameters with natural alignment.
SAMPLE_LAYOUT = [(0, 8), (8, 4), (16, 24), (40, 1), (48, 8), (56, 2)]

SECOND_PTX = b""".version 8.0
.target sm_90
.address_size 64
.visible .entry second_kernel(.param .u32 n)
{
\tret;
}
"""


# Drivers --------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def fake_library(tmp_path_factory) -> pathlib.Path:
    """A private copy of the fake driver: its state is independent of the instance cuplug uses
    in this session (dlopen shares one instance per file), so these tests may reset it."""
    if FAKE_PATH is None:
        pytest.skip("the fake CUDA driver is not built (build target cuplug_fake_cuda)")
    copy = tmp_path_factory.mktemp("fake_driver") / fc.LIBRARY_NAME
    shutil.copyfile(FAKE_PATH, copy)
    return copy


@pytest.fixture(scope="session")
def fake_instance(fake_library) -> fc.FakeCuda:
    return fc.FakeCuda(str(fake_library))


@pytest.fixture(scope="session")
def real_instance() -> fc.Driver:
    if not REAL_USABLE:
        pytest.skip(f"no real CUDA driver with a device: {REAL_WHY}")
    return fc.Driver("libcuda.so.1")


@pytest.fixture
def fake_drv(fake_instance) -> fc.FakeCuda:
    """The fake, reset and initialised. A test may not leave calls behind that a real driver
    would not survive, unless it took their reports (take_undefined_behaviour)."""
    fake_instance.reset()
    fake_instance.check("cuInit", 0)
    yield fake_instance
    assert fake_instance.take_undefined_behaviour() == []
    fake_instance.reset()


@pytest.fixture(params=["fake", "real"])
def drv(request):
    """The fake driver, then the real one when a GPU is there."""
    if request.param == "fake":
        yield request.getfixturevalue("fake_drv")
    else:
        real = request.getfixturevalue("real_instance")
        real.check("cuInit", 0)
        yield real


def current(d) -> int:
    c = c_void_p()
    d.check("cuCtxGetCurrent", byref(c))
    return c.value or 0


@pytest.fixture
def ctx(drv):
    """A context made current on this thread, destroyed afterwards (stack left as found)."""
    before = current(drv)
    c = c_void_p()
    drv.check("cuCtxCreate", byref(c), None, 0, 0)
    yield c
    drv.check("cuCtxDestroy", c)
    assert current(drv) == before


@pytest.fixture
def fake_ctx(fake_drv):
    """A context of the fake alone, for tests of the fake's own bookkeeping."""
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    yield c
    fake_drv.check("cuCtxDestroy", c)


def in_fresh_thread(fn):
    """Runs fn() on a new thread (whose context stack is empty) and returns its result."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # re-raised on the caller's thread
            box["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def alloc(d, n: int) -> int:
    p = c_uint64()
    d.check("cuMemAlloc", byref(p), n)
    return p.value


def to_host(d, ptr: int, n: int) -> bytes:
    out = (c_ubyte * n)()
    d.check("cuMemcpyDtoH", out, ptr, n)
    return bytes(out)


def load(d, image: bytes) -> c_void_p:
    m = c_void_p()
    d.check("cuModuleLoadData", byref(m), image)
    return m


def function(d, module, name: bytes) -> c_void_p:
    f = c_void_p()
    d.check("cuModuleGetFunction", byref(f), module, name)
    return f


def device_attribute(d, attribute: int, device: int = 0) -> int:
    value = c_int()
    d.check("cuDeviceGetAttribute", byref(value), attribute, device)
    return value.value


# Attribute number from cuda.h that several areas need.
MULTIPROCESSOR_COUNT = 16
