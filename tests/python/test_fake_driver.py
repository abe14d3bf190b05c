"""Tests of the fake CUDA driver (tests/fake_driver) through ctypes, without cuplug.

Every behaviour test runs against the fake and, where one is usable, the real driver too
(`drv` is parametrized), so the fake is held to what libcuda does; tests of the fake's own
control API and of fake-only conventions use `fake_drv`.
"""

from __future__ import annotations

import ctypes
import pathlib
import re
import shutil
import subprocess
import sys
import threading
from ctypes import byref, c_char_p, c_float, c_int, c_size_t, c_ubyte, c_uint, c_uint64, c_void_p

import fakecuda as fc
import pytest
from fakecuda import (
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


# Entry points ---------------------------------------------------------------------------------

def driver_api_names() -> list[str]:
    header = (fc.REPO_ROOT / "core/include/cuplug/driver_api.hpp").read_text()
    start = header.index("#define CUPLUG_DRIVER_FUNCTIONS")
    table = header[start:header.index("struct driver_api")]
    # X(name) and, for entry points typed by their CUDA 13 form, X(name, versioned_name).
    return re.findall(r"X\((cu\w+)(?:,\s*\w+)?\)", table)


def test_every_entry_point_cuplug_uses_is_provided(drv):
    names = driver_api_names()
    assert len(names) > 100
    missing = [n for n in names if drv.proc_address(n)[0] != CUDA_SUCCESS]
    assert not missing
    assert set(names) <= set(fc.PROTOTYPES), "fakecuda.PROTOTYPES lags behind driver_api.hpp"


def test_unknown_entry_point_is_not_found(drv):
    # Documented (and what driver 580 does): success, a null pointer, and the status says why.
    result, address, status = drv.proc_address("cuNoSuchFunction")
    assert (result, address, status) == (CUDA_SUCCESS, 0, fc.CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)


def test_entry_points_follow_the_requested_cuda_version(drv, ctx):
    # CUDA 13.0 gave cuCtxSynchronize and cuCtxGetDevice a context argument (their _v2); callers
    # asking for 12.x get the old forms.
    for name in ("cuCtxSynchronize", "cuCtxGetDevice"):
        new, old = drv.proc_address(name, 13000), drv.proc_address(name, 12080)
        assert new[0] == old[0] == CUDA_SUCCESS and new[1] and old[1] and new[1] != old[1]
    synchronize_v1 = ctypes.CFUNCTYPE(c_int)(drv.proc_address("cuCtxSynchronize", 12080)[1])
    assert synchronize_v1() == CUDA_SUCCESS
    get_device_v1 = ctypes.CFUNCTYPE(c_int, ctypes.POINTER(c_int))(
        drv.proc_address("cuCtxGetDevice", 12080)[1])
    dev = c_int(-1)
    assert get_device_v1(byref(dev)) == CUDA_SUCCESS and dev.value == 0
    dev = c_int(-1)
    drv.check("cuCtxGetDevice", byref(dev), ctx)  # an explicit context, current or not
    drv.check("cuCtxSynchronize", ctx)
    assert dev.value == 0
    assert drv.proc_address("cuMemAlloc", 13010)[0] == CUDA_ERROR_INVALID_VALUE  # newer than it


def test_cuplug_driver_table_has_the_cuda_13_prototypes():
    """core/include/cuplug/driver_api.hpp types each entry point as decltype(&::name); that must
    be the prototype cuGetProcAddress(name, 13000) returns, i.e. cudaTypedefs.h's newest
    PFN_<name>_v<N> with N <= 13000."""
    compiler = shutil.which("g++") or shutil.which("c++")
    typedefs = pathlib.Path("/usr/local/cuda/include/cudaTypedefs.h")
    if compiler is None or not typedefs.is_file():
        pytest.skip("needs g++ and the CUDA toolkit headers in /usr/local/cuda/include")
    text = typedefs.read_text() + (typedefs.parent / "cudaProfilerTypedefs.h").read_text()
    checks = []
    for name in driver_api_names():
        versions = [int(v) for v in re.findall(rf"PFN_{name}_v(\d+)\)", text)]
        version = max(v for v in versions if v <= 13000)
        pfn = f"PFN_{name}_v{version}"
        checks.append(f"static_assert(std::is_same_v<{pfn}, "
                      f"decltype(::cuplug::driver_api::{name})>, \"{name}: {pfn}\");")
    source = "\n".join(["#include <cuplug/driver_api.hpp>", "#include <cudaTypedefs.h>",
                        "#include <cudaProfilerTypedefs.h>", "#include <type_traits>", *checks])
    result = subprocess.run([compiler, "-std=c++17", "-fsyntax-only", "-x", "c++", "-",
                             "-I", str(fc.REPO_ROOT / "core/include"), "-I", str(typedefs.parent)],
                            input=source, capture_output=True, text=True)
    mismatches = re.findall(r"static assertion failed: (.*)", result.stderr)
    assert result.returncode == 0, mismatches or result.stderr


def test_only_the_lookup_and_control_api_are_exported(fake_library):
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(fake_library)], capture_output=True,
                             text=True)
    if symbols.returncode != 0:
        pytest.skip("nm is not available")
    names = {line.split()[-1] for line in symbols.stdout.splitlines() if line.strip()}
    assert "cuGetProcAddress_v2" in names
    assert all(n == "cuGetProcAddress_v2" or n.startswith("fake_cuda_") for n in names), names


# Initialisation, versions, errors -------------------------------------------------------------

def test_calls_before_cuinit_fail(fake_instance):
    fake_instance.reset()
    count = c_int()
    assert fake_instance.cuDeviceGetCount(byref(count)) == fc.CUDA_ERROR_NOT_INITIALIZED
    version = c_int()
    assert fake_instance.cuDriverGetVersion(byref(version)) == CUDA_SUCCESS
    assert fake_instance.error_string(CUDA_ERROR_INVALID_VALUE) == "invalid argument"
    assert fake_instance.cuInit(1) == CUDA_ERROR_INVALID_VALUE
    assert fake_instance.cuInit(0) == CUDA_SUCCESS
    assert fake_instance.cuDeviceGetCount(byref(count)) == CUDA_SUCCESS


def test_driver_version(drv):
    version = c_int()
    drv.check("cuDriverGetVersion", byref(version))
    assert version.value >= 13000


def test_fake_driver_version_is_13000(fake_drv):
    version = c_int()
    fake_drv.check("cuDriverGetVersion", byref(version))
    assert version.value == 13000


@pytest.mark.parametrize("code, name, text", [
    (0, "CUDA_SUCCESS", "no error"),
    (1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"),
    (2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
    (3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"),
    (100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
    (201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"),
    (400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"),
    (500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"),
    (600, "CUDA_ERROR_NOT_READY", "device not ready"),
    (719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"),
    (999, "CUDA_ERROR_UNKNOWN", "unknown error"),
])
def test_error_names_and_strings(drv, code, name, text):
    assert drv.error_name(code) == name
    assert drv.error_string(code) == text


def test_unknown_error_code(drv):
    text = c_char_p()
    assert drv.cuGetErrorString(12345, byref(text)) == CUDA_ERROR_INVALID_VALUE
    assert drv.cuGetErrorName(12345, byref(text)) == CUDA_ERROR_INVALID_VALUE


def cuda_h_error_codes() -> list[int]:
    header = pathlib.Path("/usr/local/cuda/include/cuda.h")
    if not header.is_file():
        pytest.skip("cuda.h is not at /usr/local/cuda/include")
    text = header.read_text()
    body = text[text.index("typedef enum cudaError_enum"):text.index("} CUresult;")]
    return [int(v) for v in re.findall(r"CUDA_\w+\s*=\s*(\d+)", body)]


def test_every_cuda_h_error_code_has_a_name_and_text(fake_drv):
    for code in cuda_h_error_codes():
        assert fake_drv.error_name(code), code
        assert fake_drv.error_string(code), code


def test_error_texts_match_the_real_driver(fake_drv, real_instance):
    real_instance.check("cuInit", 0)
    differences = {}
    for code in cuda_h_error_codes():
        for what in ("error_name", "error_string"):
            fake_text = getattr(fake_drv, what)(code)
            real_text = getattr(real_instance, what)(code)
            if real_text is not None and fake_text != real_text:
                differences[(code, what)] = (fake_text, real_text)
    assert not differences


# Devices --------------------------------------------------------------------------------------

def device_attribute(d, attribute: int, device: int = 0) -> int:
    value = c_int()
    d.check("cuDeviceGetAttribute", byref(value), attribute, device)
    return value.value


def test_device_count_and_ordinals(drv):
    count = c_int()
    drv.check("cuDeviceGetCount", byref(count))
    assert count.value >= 1
    dev = c_int()
    drv.check("cuDeviceGet", byref(dev), count.value - 1)
    assert dev.value == count.value - 1
    assert drv.cuDeviceGet(byref(dev), count.value) == CUDA_ERROR_INVALID_DEVICE
    assert drv.cuDeviceGet(byref(dev), -1) == CUDA_ERROR_INVALID_DEVICE


def test_fake_devices(fake_drv):
    count = c_int()
    fake_drv.check("cuDeviceGetCount", byref(count))
    assert count.value == 2
    name = ctypes.create_string_buffer(256)
    fake_drv.check("cuDeviceGetName", name, 256, 1)
    assert name.value == b"cuplug fake device"
    total = c_size_t()
    fake_drv.check("cuDeviceTotalMem", byref(total), 0)
    assert total.value == 80 << 30


def test_device_count_from_environment(fake_library):
    here = str(pathlib.Path(__file__).parent)
    script = (
        f"import sys; sys.path.insert(0, {here!r})\n"
        "import ctypes, fakecuda as fc\n"
        f"d = fc.FakeCuda({str(fake_library)!r})\n"
        "r = d.cuInit(0)\n"
        "n = ctypes.c_int(); d.cuDeviceGetCount(ctypes.byref(n))\n"
        "print(r, n.value)\n")
    for env_value, expected in (("5", "0 5"), ("0", "100 0")):
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env={"FAKE_CUDA_DEVICE_COUNT": env_value, "PATH": "/usr/bin:/bin"})
        assert out.stdout.split() == expected.split(), out.stderr


def test_device_name_is_truncated_to_the_buffer(drv):
    name = ctypes.create_string_buffer(8)
    drv.check("cuDeviceGetName", name, 5, 0)
    assert len(name.value) == 4


# Attribute numbers from cuda.h.
MAX_THREADS_PER_BLOCK, MAX_BLOCK_DIM_X, MAX_BLOCK_DIM_Z = 1, 2, 4
MAX_GRID_DIM_X, MAX_GRID_DIM_Y = 5, 6
MAX_SHARED_MEMORY_PER_BLOCK, WARP_SIZE, MULTIPROCESSOR_COUNT = 8, 10, 16
PCI_BUS_ID, L2_CACHE_SIZE = 33, 38
COMPUTE_CAPABILITY_MAJOR, COMPUTE_CAPABILITY_MINOR = 75, 76
MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, MAX_REGISTERS_PER_BLOCK = 97, 12


def test_common_device_attributes(drv):
    assert device_attribute(drv, MAX_THREADS_PER_BLOCK) == 1024
    assert device_attribute(drv, MAX_BLOCK_DIM_X) == 1024
    assert device_attribute(drv, MAX_BLOCK_DIM_Z) == 64
    assert device_attribute(drv, MAX_GRID_DIM_X) == 2**31 - 1
    assert device_attribute(drv, MAX_GRID_DIM_Y) == 65535
    assert device_attribute(drv, MAX_SHARED_MEMORY_PER_BLOCK) == 49152
    assert device_attribute(drv, WARP_SIZE) == 32
    assert device_attribute(drv, MAX_REGISTERS_PER_BLOCK) == 65536


def test_fake_device_is_an_h100(fake_drv):
    assert device_attribute(fake_drv, COMPUTE_CAPABILITY_MAJOR) == 9
    assert device_attribute(fake_drv, COMPUTE_CAPABILITY_MINOR) == 0
    assert device_attribute(fake_drv, MULTIPROCESSOR_COUNT) == 132
    assert device_attribute(fake_drv, L2_CACHE_SIZE) == 50 << 20
    assert device_attribute(fake_drv, MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) == 232448


def test_every_attribute_cuda_h_names_is_answered(drv):
    max_attribute = 148  # CU_DEVICE_ATTRIBUTE_MAX in CUDA 13.0
    for attribute in range(1, max_attribute):
        value = c_int()
        assert drv.cuDeviceGetAttribute(byref(value), attribute, 0) == CUDA_SUCCESS, attribute


@pytest.mark.parametrize("attribute", [0, 148, 100000, -1])
def test_unknown_attribute_is_invalid_value(drv, attribute):
    value = c_int()
    assert drv.cuDeviceGetAttribute(byref(value), attribute, 0) == CUDA_ERROR_INVALID_VALUE


def test_pci_bus_id_round_trip(drv):
    bus_id = ctypes.create_string_buffer(64)
    drv.check("cuDeviceGetPCIBusId", bus_id, 64, 0)
    text = bus_id.value.decode()
    assert re.fullmatch(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]", text), text
    bus = int(text.split(":")[1], 16)
    assert device_attribute(drv, PCI_BUS_ID) == bus
    for spelling in (text, text.lower(), text.upper()):
        dev = c_int(-1)
        drv.check("cuDeviceGetByPCIBusId", byref(dev), spelling.encode())
        assert dev.value == 0


def test_pci_bus_id_is_never_truncated(drv):
    bus_id = ctypes.create_string_buffer(64)
    assert drv.cuDeviceGetPCIBusId(bus_id, 5, 0) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuDeviceGetPCIBusId", bus_id, 13, 0)  # "dddd:bb:dd.f" and its NUL
    assert len(bus_id.value) == 12


def test_unknown_pci_bus_id(drv):
    dev = c_int()
    assert drv.cuDeviceGetByPCIBusId(byref(dev), b"00FF:FE:1F.7") == CUDA_ERROR_INVALID_DEVICE


def test_peer_access_between_devices(fake_drv):
    can = c_int()
    fake_drv.check("cuDeviceCanAccessPeer", byref(can), 0, 1)
    assert can.value == 1
    fake_drv.check("cuDeviceCanAccessPeer", byref(can), 0, 0)
    assert can.value == 0


# Contexts -------------------------------------------------------------------------------------

def test_context_calls_need_a_current_context(drv):
    def body():
        p, free, total = c_uint64(), c_size_t(), c_size_t()
        stream, dev = c_void_p(), c_int()
        return [
            drv.cuMemAlloc(byref(p), 16),
            drv.cuMemGetInfo(byref(free), byref(total)),
            drv.cuCtxSynchronize(None),
            drv.cuCtxGetDevice(byref(dev), None),
            drv.cuStreamCreate(byref(stream), 0),
            drv.cuModuleLoadData(byref(c_void_p()), SAMPLE_PTX),
            drv.cuCtxPopCurrent(byref(c_void_p())),
        ]

    assert in_fresh_thread(body) == [CUDA_ERROR_INVALID_CONTEXT] * 7


def test_create_push_pop(drv):
    def body():
        a, b, popped = c_void_p(), c_void_p(), c_void_p()
        drv.check("cuCtxCreate", byref(a), None, 0, 0)
        assert current(drv) == a.value
        drv.check("cuCtxCreate", byref(b), None, 0, 0)
        assert current(drv) == b.value
        drv.check("cuCtxPopCurrent", byref(popped))
        assert popped.value == b.value and current(drv) == a.value
        drv.check("cuCtxPushCurrent", b)
        drv.check("cuCtxPushCurrent", a)  # the same context may be on the stack twice
        drv.check("cuCtxPopCurrent", None)
        assert current(drv) == b.value
        drv.check("cuCtxDestroy", b)  # current: popped as well
        assert current(drv) == a.value
        drv.check("cuCtxDestroy", a)
        assert current(drv) == 0
        return drv.cuCtxPopCurrent(byref(popped))

    assert in_fresh_thread(body) == CUDA_ERROR_INVALID_CONTEXT


def test_set_current_replaces_the_top(drv):
    def body():
        a, b = c_void_p(), c_void_p()
        drv.check("cuCtxCreate", byref(a), None, 0, 0)
        drv.check("cuCtxCreate", byref(b), None, 0, 0)
        drv.check("cuCtxSetCurrent", a)  # stack: a, a
        drv.check("cuCtxPopCurrent", None)
        assert current(drv) == a.value
        drv.check("cuCtxSetCurrent", None)  # pops
        assert current(drv) == 0
        drv.check("cuCtxSetCurrent", None)  # nothing to pop: still fine
        drv.check("cuCtxDestroy", a)
        drv.check("cuCtxDestroy", b)
        return current(drv)

    assert in_fresh_thread(body) == 0


def test_destroying_a_non_current_context_leaves_the_stack(drv):
    def body():
        a, b = c_void_p(), c_void_p()
        drv.check("cuCtxCreate", byref(a), None, 0, 0)
        drv.check("cuCtxCreate", byref(b), None, 0, 0)
        drv.check("cuCtxDestroy", a)
        assert current(drv) == b.value
        drv.check("cuCtxDestroy", b)
        # `a` is still on the stack, destroyed: calls fail until it is popped.
        destroyed_current = current(drv)
        p = c_uint64()
        result = drv.cuMemAlloc(byref(p), 16)
        drv.check("cuCtxPopCurrent", None)
        return destroyed_current == a.value, result, current(drv)

    assert in_fresh_thread(body) == (True, CUDA_ERROR_CONTEXT_IS_DESTROYED, 0)


def test_context_destroyed_on_another_thread(drv):
    created, destroyed = threading.Event(), threading.Event()
    box = {}

    def owner():
        c = c_void_p()
        drv.check("cuCtxCreate", byref(c), None, 0, 0)
        box["ctx"] = c
        created.set()
        destroyed.wait()
        p = c_uint64()
        box["alloc"] = drv.cuMemAlloc(byref(p), 16)
        box["pop"] = drv.cuCtxPopCurrent(None)

    t = threading.Thread(target=owner)
    t.start()
    created.wait()
    drv.check("cuCtxDestroy", box["ctx"])
    destroyed.set()
    t.join()
    assert box["alloc"] == CUDA_ERROR_CONTEXT_IS_DESTROYED
    assert box["pop"] == CUDA_SUCCESS


def test_destroyed_context_cannot_be_pushed(fake_drv):
    # The real driver aborts the process here (undefined behaviour); the fake says no, and
    # reports it.
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    fake_drv.check("cuCtxDestroy", c)
    assert fake_drv.cuCtxPushCurrent(c) == CUDA_ERROR_INVALID_CONTEXT
    assert fake_drv.cuCtxDestroy(c) == CUDA_ERROR_INVALID_CONTEXT
    reports = fake_drv.take_undefined_behaviour()
    assert len(reports) == 2
    assert reports[0].startswith("cuCtxPushCurrent: context ")
    assert "destroyed or never created" in reports[0] and "may crash" in reports[0]


def test_context_create_flags(drv):
    def body():
        c = c_void_p()
        results = [drv.cuCtxCreate(byref(c), None, 0x100, 0),  # not a flag
                   drv.cuCtxCreate(byref(c), None, 3, 0)]  # SPIN|YIELD: not one policy
        drv.check("cuCtxCreate", byref(c), None, 4, 0)  # BLOCKING_SYNC
        flags = c_uint()
        drv.check("cuCtxGetFlags", byref(flags))
        dev = c_int(-1)
        drv.check("cuCtxGetDevice", byref(dev), None)
        drv.check("cuCtxDestroy", c)
        return results, flags.value & 0x7, dev.value

    assert in_fresh_thread(body) == ([CUDA_ERROR_INVALID_VALUE] * 2, 4, 0)


def test_context_stacks_are_per_thread(drv, ctx):
    assert current(drv) == ctx.value
    assert in_fresh_thread(lambda: current(drv)) == 0


def test_primary_context_refcount(drv):
    def body():
        flags, active = c_uint(), c_int()
        drv.check("cuDevicePrimaryCtxGetState", 0, byref(flags), byref(active))
        was_active = active.value
        a, b = c_void_p(), c_void_p()
        drv.check("cuDevicePrimaryCtxRetain", byref(a), 0)
        drv.check("cuDevicePrimaryCtxRetain", byref(b), 0)
        assert a.value == b.value
        drv.check("cuDevicePrimaryCtxGetState", 0, byref(flags), byref(active))
        assert active.value == 1
        assert current(drv) == 0  # retaining does not make it current
        drv.check("cuCtxPushCurrent", a)
        p = alloc(drv, 64)
        drv.check("cuMemFree", p)
        drv.check("cuCtxPopCurrent", None)
        drv.check("cuDevicePrimaryCtxRelease", 0)
        drv.check("cuDevicePrimaryCtxRelease", 0)
        drv.check("cuDevicePrimaryCtxGetState", 0, byref(flags), byref(active))
        if was_active:
            return None
        return active.value, drv.cuDevicePrimaryCtxRelease(0)

    result = in_fresh_thread(body)
    if result is not None:  # the primary context was ours alone
        assert result == (0, CUDA_ERROR_INVALID_CONTEXT)


def test_primary_context_is_not_destroyed_by_cuctxdestroy(fake_drv):
    c = c_void_p()
    fake_drv.check("cuDevicePrimaryCtxRetain", byref(c), 0)
    assert fake_drv.cuCtxDestroy(c) == CUDA_ERROR_INVALID_CONTEXT
    fake_drv.check("cuDevicePrimaryCtxRelease", 0)


CU_LIMIT_STACK_SIZE, CU_LIMIT_PRINTF_FIFO_SIZE, CU_LIMIT_MALLOC_HEAP_SIZE = 0, 1, 2
CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH, CU_LIMIT_SHMEM_SIZE = 3, 7
CUDA_ERROR_NOT_PERMITTED = 800


def test_limits(drv, ctx):
    value = c_size_t()
    drv.check("cuCtxGetLimit", byref(value), CU_LIMIT_STACK_SIZE)
    assert value.value == 1024
    drv.check("cuCtxGetLimit", byref(value), CU_LIMIT_PRINTF_FIFO_SIZE)
    assert value.value >= 1 << 20
    drv.check("cuCtxGetLimit", byref(value), CU_LIMIT_MALLOC_HEAP_SIZE)
    assert value.value == 8 << 20
    drv.check("cuCtxSetLimit", CU_LIMIT_MALLOC_HEAP_SIZE, 64 << 20)
    drv.check("cuCtxGetLimit", byref(value), CU_LIMIT_MALLOC_HEAP_SIZE)
    assert value.value == 64 << 20
    assert drv.cuCtxGetLimit(byref(value), 1000) == CUDA_ERROR_INVALID_VALUE
    assert (drv.cuCtxGetLimit(byref(value), CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH)
            == fc.CUDA_ERROR_UNSUPPORTED_LIMIT)
    drv.check("cuCtxGetLimit", byref(value), CU_LIMIT_SHMEM_SIZE)
    assert value.value == device_attribute(drv, MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    assert drv.cuCtxSetLimit(CU_LIMIT_SHMEM_SIZE, 1024) == CUDA_ERROR_NOT_PERMITTED


def test_cache_config_and_api_version(drv, ctx):
    config = c_int(-1)
    drv.check("cuCtxGetCacheConfig", byref(config))
    assert config.value == 0
    drv.check("cuCtxSetCacheConfig", 2)  # PREFER_L1
    drv.check("cuCtxGetCacheConfig", byref(config))
    assert config.value == 2
    assert drv.cuCtxSetCacheConfig(7) == CUDA_ERROR_INVALID_VALUE
    version = c_uint()
    drv.check("cuCtxGetApiVersion", ctx, byref(version))
    explicit = version.value
    drv.check("cuCtxGetApiVersion", None, byref(version))
    assert version.value == explicit == 3020


def test_peer_access(fake_drv):
    a, b = c_void_p(), c_void_p()
    fake_drv.check("cuCtxCreate", byref(b), None, 0, 1)
    fake_drv.check("cuCtxCreate", byref(a), None, 0, 0)
    assert fake_drv.cuCtxDisablePeerAccess(b) == fc.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
    fake_drv.check("cuCtxEnablePeerAccess", b, 0)
    assert fake_drv.cuCtxEnablePeerAccess(b, 0) == fc.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
    fake_drv.check("cuCtxDisablePeerAccess", b)
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    fake_drv.check("cuCtxPopCurrent", None)
    assert fake_drv.cuCtxEnablePeerAccess(c, 0) == CUDA_ERROR_INVALID_DEVICE  # same device


def test_profiler(drv, ctx):
    drv.check("cuProfilerStart")
    drv.check("cuProfilerStop")


# Device memory --------------------------------------------------------------------------------

def test_alloc_copy_free(drv, ctx):
    p = alloc(drv, 1000)
    assert p % 256 == 0
    data = bytes(range(256)) * 3 + bytes(232)
    drv.check("cuMemcpyHtoD", p, data, len(data))
    assert to_host(drv, p, 1000) == data
    drv.check("cuMemFree", p)


def test_bad_frees(drv, ctx):
    drv.check("cuMemFree", 0)  # like free(NULL)
    p = alloc(drv, 1024)
    assert drv.cuMemFree(p + 16) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuMemFree", p)
    assert drv.cuMemFree(p) == CUDA_ERROR_INVALID_VALUE


def test_alloc_sizes(drv, ctx):
    p = c_uint64()
    assert drv.cuMemAlloc(byref(p), 0) == CUDA_ERROR_INVALID_VALUE
    assert drv.cuMemAlloc(byref(p), 1 << 50) == fc.CUDA_ERROR_OUT_OF_MEMORY


def test_mem_get_info_follows_allocations(drv, ctx):
    free0, total = c_size_t(), c_size_t()
    drv.check("cuMemGetInfo", byref(free0), byref(total))
    assert 0 < free0.value <= total.value
    drv.check("cuMemGetInfo", None, byref(total))  # either output may be left out
    size = 256 << 20
    p = alloc(drv, size)
    free1 = c_size_t()
    drv.check("cuMemGetInfo", byref(free1), byref(total))
    assert free1.value <= free0.value - size
    drv.check("cuMemFree", p)
    drv.check("cuMemGetInfo", byref(free1), byref(total))
    assert free1.value >= free0.value - (2 << 20)


def test_address_range(drv, ctx):
    p = alloc(drv, 5000)
    base, size = c_uint64(), c_size_t()
    drv.check("cuMemGetAddressRange", byref(base), byref(size), p + 1234)
    assert (base.value, size.value) == (p, 5000)
    drv.check("cuMemGetAddressRange", None, byref(size), p)
    drv.check("cuMemFree", p)
    assert drv.cuMemGetAddressRange(byref(base), byref(size), p) == CUDA_ERROR_NOT_FOUND


def test_alloc_pitch(drv, ctx):
    p, pitch = c_uint64(), c_size_t()
    drv.check("cuMemAllocPitch", byref(p), byref(pitch), 100, 10, 4)
    assert pitch.value >= 100 and pitch.value % 128 == 0
    base, size = c_uint64(), c_size_t()
    drv.check("cuMemGetAddressRange", byref(base), byref(size), p.value)
    assert size.value >= pitch.value * 10
    drv.check("cuMemFree", p.value)
    assert drv.cuMemAllocPitch(byref(p), byref(pitch), 100, 10, 3) == CUDA_ERROR_INVALID_VALUE


def test_copies_are_bounds_checked(drv, ctx):
    p = alloc(drv, 4096)
    q = alloc(drv, 4096)
    data = (c_ubyte * 8192)()
    assert drv.cuMemcpyHtoD(p, data, 4097) == CUDA_ERROR_INVALID_VALUE
    assert drv.cuMemcpyDtoH(data, p + 4000, 100) == CUDA_ERROR_INVALID_VALUE
    assert drv.cuMemcpyDtoD(q, p + 1, 4096) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuMemcpyDtoD", q, p, 4096)
    drv.check("cuMemFree", p)
    drv.check("cuMemFree", q)


def test_copies_touching_freed_memory_fail(drv, ctx):
    p = alloc(drv, 4096)
    drv.check("cuMemFree", p)
    data = (c_ubyte * 16)()
    assert drv.cuMemcpyHtoD(p, data, 16) == CUDA_ERROR_INVALID_VALUE


def test_unified_copies(drv, ctx):
    p = alloc(drv, 64)
    q = alloc(drv, 64)
    src = (c_ubyte * 64)(*range(64))
    dst = (c_ubyte * 64)()
    drv.check("cuMemcpy", p, ctypes.addressof(src), 64)  # pageable host -> device
    drv.check("cuMemcpy", q, p, 64)
    drv.check("cuMemcpy", ctypes.addressof(dst), q, 64)
    assert bytes(dst) == bytes(src)
    stream = c_void_p()
    drv.check("cuStreamCreate", byref(stream), 0)
    dst2 = (c_ubyte * 64)()
    drv.check("cuMemcpyDtoDAsync", q, p, 64, stream)
    drv.check("cuMemcpyDtoHAsync", dst2, q, 64, stream)
    drv.check("cuMemcpyAsync", q, p, 64, stream)
    drv.check("cuStreamSynchronize", stream)
    assert bytes(dst2) == bytes(src)
    drv.check("cuStreamDestroy", stream)
    for x in (p, q):
        drv.check("cuMemFree", x)


def test_memsets(drv, ctx):
    p = alloc(drv, 64)
    drv.check("cuMemsetD8", p, 0xAB, 64)
    assert to_host(drv, p, 64) == b"\xab" * 64
    drv.check("cuMemsetD16", p, 0x1234, 8)
    assert to_host(drv, p, 16) == b"\x34\x12" * 8
    drv.check("cuMemsetD32", p + 16, 0xDEADBEEF, 4)
    assert to_host(drv, p + 16, 16) == bytes.fromhex("efbeadde") * 4
    drv.check("cuMemsetD32Async", p, 0, 16, None)
    drv.check("cuMemsetD2D8", p, 16, 0x11, 4, 4)  # 4 rows of 4 bytes, 16 apart
    row = b"\x11" * 4 + b"\x00" * 12
    assert to_host(drv, p, 64) == row * 4
    drv.check("cuMemsetD2D32", p, 16, 0x22222222, 2, 2)
    assert to_host(drv, p, 8) == b"\x22" * 8
    assert drv.cuMemsetD8(p, 0, 65) == CUDA_ERROR_INVALID_VALUE
    assert drv.cuMemsetD32(p + 2, 0, 1) == CUDA_ERROR_INVALID_VALUE  # misaligned
    drv.check("cuMemFree", p)


def memcpy2d(**fields) -> fc.CUDA_MEMCPY2D:
    c = fc.CUDA_MEMCPY2D()
    for k, v in fields.items():
        setattr(c, k, v)
    return c


def test_copy_2d_honours_pitches_and_offsets(drv, ctx):
    rows, width, dpitch = 4, 10, 32
    host = (c_ubyte * (rows * 16))(*range(rows * 16))  # host pitch 16
    p = alloc(drv, rows * dpitch)
    drv.check("cuMemsetD8", p, 0, rows * dpitch)
    c = memcpy2d(srcMemoryType=fc.CU_MEMORYTYPE_HOST, srcHost=ctypes.addressof(host), srcPitch=16,
                 srcXInBytes=2, srcY=1,
                 dstMemoryType=fc.CU_MEMORYTYPE_DEVICE, dstDevice=p, dstPitch=dpitch,
                 dstXInBytes=4, WidthInBytes=width, Height=rows - 1)
    drv.check("cuMemcpy2D", byref(c))
    got = to_host(drv, p, rows * dpitch)
    for y in range(rows - 1):
        assert got[y * dpitch + 4:y * dpitch + 4 + width] == bytes(host)[(y + 1) * 16 + 2:
                                                                        (y + 1) * 16 + 2 + width]
        assert got[y * dpitch:y * dpitch + 4] == b"\0" * 4
    back = (c_ubyte * (rows * 16))()
    c2 = memcpy2d(srcMemoryType=fc.CU_MEMORYTYPE_UNIFIED, srcDevice=p, srcPitch=dpitch,
                  dstMemoryType=fc.CU_MEMORYTYPE_HOST, dstHost=ctypes.addressof(back), dstPitch=16,
                  WidthInBytes=16, Height=rows)
    drv.check("cuMemcpy2DUnaligned", byref(c2))
    drv.check("cuMemcpy2DAsync", byref(c2), None)
    assert bytes(back)[4:14] == bytes(host)[18:28]
    drv.check("cuMemFree", p)


def test_copy_2d_rejects_bad_pitch_and_overflow(drv, ctx):
    p = alloc(drv, 256)
    host = (c_ubyte * 1024)()
    narrow = memcpy2d(srcMemoryType=fc.CU_MEMORYTYPE_HOST, srcHost=ctypes.addressof(host),
                      srcPitch=8, dstMemoryType=fc.CU_MEMORYTYPE_DEVICE, dstDevice=p, dstPitch=64,
                      WidthInBytes=16, Height=2)
    assert drv.cuMemcpy2D(byref(narrow)) == CUDA_ERROR_INVALID_VALUE
    overflow = memcpy2d(srcMemoryType=fc.CU_MEMORYTYPE_HOST, srcHost=ctypes.addressof(host),
                        srcPitch=64, dstMemoryType=fc.CU_MEMORYTYPE_DEVICE, dstDevice=p,
                        dstPitch=64, WidthInBytes=64, Height=5)
    assert drv.cuMemcpy2D(byref(overflow)) == CUDA_ERROR_INVALID_VALUE
    offset = memcpy2d(srcMemoryType=fc.CU_MEMORYTYPE_HOST, srcHost=ctypes.addressof(host),
                      srcPitch=16, srcXInBytes=8, dstMemoryType=fc.CU_MEMORYTYPE_DEVICE,
                      dstDevice=p, dstPitch=16, WidthInBytes=16, Height=2)
    assert drv.cuMemcpy2D(byref(offset)) == CUDA_ERROR_INVALID_VALUE  # x + width beyond the pitch
    one_row = memcpy2d(srcMemoryType=fc.CU_MEMORYTYPE_HOST, srcHost=ctypes.addressof(host),
                       dstMemoryType=fc.CU_MEMORYTYPE_DEVICE, dstDevice=p, WidthInBytes=16,
                       Height=1)
    drv.check("cuMemcpy2D", byref(one_row))  # a single row needs no pitch
    no_array = memcpy2d(srcMemoryType=fc.CU_MEMORYTYPE_ARRAY, dstMemoryType=fc.CU_MEMORYTYPE_DEVICE,
                        dstDevice=p, dstPitch=64, WidthInBytes=16, Height=2)
    assert drv.cuMemcpy2D(byref(no_array)) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuMemFree", p)


def test_copy_2d_with_arrays_is_not_supported(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    p = alloc(fake_drv, 256)
    copy = memcpy2d(srcMemoryType=fc.CU_MEMORYTYPE_ARRAY, srcArray=1234,
                    dstMemoryType=fc.CU_MEMORYTYPE_DEVICE, dstDevice=p, dstPitch=64,
                    WidthInBytes=16, Height=2)
    assert fake_drv.cuMemcpy2D(byref(copy)) == fc.CUDA_ERROR_NOT_SUPPORTED


def test_copy_3d(drv, ctx):
    w, h, d = 8, 3, 4
    pitch, height = 16, 4  # device layout: 16-byte rows, 4 rows per slice
    host = (c_ubyte * (w * h * d))(*range(w * h * d))
    p = alloc(drv, pitch * height * (d + 1))
    drv.check("cuMemsetD8", p, 0xFF, pitch * height * (d + 1))
    c = fc.CUDA_MEMCPY3D(srcMemoryType=fc.CU_MEMORYTYPE_HOST, srcHost=ctypes.addressof(host),
                         srcPitch=w, srcHeight=h,
                         dstMemoryType=fc.CU_MEMORYTYPE_DEVICE, dstDevice=p, dstPitch=pitch,
                         dstHeight=height, dstZ=1, dstXInBytes=2,
                         WidthInBytes=w, Height=h, Depth=d)
    drv.check("cuMemcpy3D", byref(c))
    got = to_host(drv, p, pitch * height * (d + 1))
    for z in range(d):
        for y in range(h):
            start = (z + 1) * pitch * height + y * pitch + 2
            assert got[start:start + w] == bytes(host)[(z * h + y) * w:(z * h + y + 1) * w]
    assert got[:pitch * height] == b"\xff" * (pitch * height)
    back = (c_ubyte * (w * h * d))()
    r = fc.CUDA_MEMCPY3D(srcMemoryType=fc.CU_MEMORYTYPE_DEVICE, srcDevice=p, srcPitch=pitch,
                         srcHeight=height, srcZ=1, srcXInBytes=2,
                         dstMemoryType=fc.CU_MEMORYTYPE_HOST, dstHost=ctypes.addressof(back),
                         dstPitch=w, dstHeight=h, WidthInBytes=w, Height=h, Depth=d)
    drv.check("cuMemcpy3DAsync", byref(r), None)
    drv.check("cuCtxSynchronize", None)
    assert bytes(back) == bytes(host)
    drv.check("cuMemFree", p)


def test_peer_copies(drv, ctx):
    other = c_void_p()
    drv.check("cuCtxCreate", byref(other), None, 0, 0)
    q = alloc(drv, 128)  # in `other`
    drv.check("cuCtxPopCurrent", None)
    p = alloc(drv, 128)
    drv.check("cuMemsetD8", p, 7, 128)
    drv.check("cuMemcpyPeer", q, other, p, ctx, 128)
    drv.check("cuMemcpyPeerAsync", q, other, p, ctx, 64, None)
    c = fc.CUDA_MEMCPY3D_PEER(srcMemoryType=fc.CU_MEMORYTYPE_DEVICE, srcDevice=q,
                              srcContext=other, srcPitch=128,
                              dstMemoryType=fc.CU_MEMORYTYPE_DEVICE, dstDevice=p + 0,
                              dstContext=ctx, dstPitch=128, WidthInBytes=128, Height=1, Depth=1)
    drv.check("cuMemcpy3DPeer", byref(c))
    drv.check("cuMemcpy3DPeerAsync", byref(c), None)
    drv.check("cuCtxSynchronize", None)
    assert to_host(drv, p, 128) == b"\x07" * 128
    drv.check("cuMemFree", p)
    drv.check("cuCtxDestroy", other)


# Host, managed and registered memory ---------------------------------------------------------

def test_host_alloc(drv, ctx):
    p = c_void_p()
    drv.check("cuMemHostAlloc", byref(p), 4096, 1)  # PORTABLE
    flags = c_uint()
    drv.check("cuMemHostGetFlags", byref(flags), p)
    assert flags.value == 3  # unified addressing maps every allocation: DEVICEMAP is reported
    dptr = c_uint64()
    drv.check("cuMemHostGetDevicePointer", byref(dptr), p, 0)
    assert dptr.value == p.value
    assert drv.cuMemHostGetDevicePointer(byref(c_uint64()), p, 1) == CUDA_ERROR_INVALID_VALUE
    ctypes.memset(p, 0x5A, 4096)  # host-accessible
    d = alloc(drv, 4096)
    drv.check("cuMemcpyHtoD", d, p, 4096)
    assert to_host(drv, d, 16) == b"\x5a" * 16
    drv.check("cuMemsetD8", dptr.value, 1, 8)  # device-accessible through its device pointer
    drv.check("cuMemsetD8", d, 2, 16)
    drv.check("cuMemcpyDtoD", dptr.value + 8, d, 8)
    assert ctypes.string_at(p, 16) == b"\x01" * 8 + b"\x02" * 8
    drv.check("cuMemFree", d)
    drv.check("cuMemFreeHost", p)
    plain = (c_ubyte * 64)()
    assert drv.cuMemHostGetFlags(byref(flags), plain) == CUDA_ERROR_INVALID_VALUE
    assert drv.cuMemHostAlloc(byref(p), 4096, 0x80) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuMemHostAlloc", byref(p), 0, 0)  # zero bytes is allowed
    drv.check("cuMemFreeHost", p)


def test_host_register(drv, ctx):
    buffer = ctypes.create_string_buffer(8192)
    drv.check("cuMemHostRegister", buffer, 8192, 0)
    assert drv.cuMemHostRegister(buffer, 4096, 0) == fc.CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
    flags = c_uint()
    drv.check("cuMemHostGetFlags", byref(flags), buffer)
    dptr = c_uint64()
    drv.check("cuMemHostGetDevicePointer", byref(dptr), buffer, 0)
    drv.check("cuMemsetD8", dptr.value, 9, 8192)
    assert buffer.raw[:4] == b"\x09" * 4
    drv.check("cuMemHostUnregister", buffer)
    assert drv.cuMemHostUnregister(buffer) == fc.CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
    assert drv.cuMemHostRegister(buffer, 8192, 4) == CUDA_ERROR_INVALID_VALUE  # not I/O memory


def test_managed_memory(drv, ctx):
    p = c_uint64()
    drv.check("cuMemAllocManaged", byref(p), 4096, 1)  # ATTACH_GLOBAL
    drv.check("cuMemsetD8", p, 3, 4096)
    drv.check("cuCtxSynchronize", None)
    assert ctypes.string_at(p.value, 8) == b"\x03" * 8  # host-accessible
    managed = ctypes.c_bool()
    drv.check("cuPointerGetAttribute", byref(managed), 8, p)  # IS_MANAGED
    assert managed.value
    stream = c_void_p()
    drv.check("cuStreamCreate", byref(stream), 0)
    drv.check("cuStreamAttachMemAsync", stream, p, 0, 4)  # ATTACH_SINGLE
    assert drv.cuStreamAttachMemAsync(None, p, 0, 4) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuStreamSynchronize", stream)
    drv.check("cuStreamDestroy", stream)
    drv.check("cuMemFree", p)
    assert drv.cuMemAllocManaged(byref(p), 4096, 4) == CUDA_ERROR_INVALID_VALUE


CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 1, 2
CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_IS_MANAGED = 3, 8
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE = 11, 12


def test_pointer_attributes(drv, ctx):
    p = alloc(drv, 1000)
    owner = c_void_p()
    drv.check("cuPointerGetAttribute", byref(owner), CU_POINTER_ATTRIBUTE_CONTEXT, p + 10)
    assert owner.value == ctx.value
    kind = c_uint()
    drv.check("cuPointerGetAttribute", byref(kind), CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p)
    assert kind.value == fc.CU_MEMORYTYPE_DEVICE
    ordinal = c_int(-1)
    drv.check("cuPointerGetAttribute", byref(ordinal), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p)
    assert ordinal.value == 0
    start, size = c_uint64(), c_size_t()
    drv.check("cuPointerGetAttribute", byref(start), CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 9)
    drv.check("cuPointerGetAttribute", byref(size), CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 9)
    assert (start.value, size.value) == (p, 1000)
    managed = ctypes.c_bool(True)
    drv.check("cuPointerGetAttribute", byref(managed), CU_POINTER_ATTRIBUTE_IS_MANAGED, p)
    assert not managed.value
    host = c_void_p()
    drv.check("cuMemHostAlloc", byref(host), 100, 0)
    drv.check("cuPointerGetAttribute", byref(kind), CU_POINTER_ATTRIBUTE_MEMORY_TYPE, host.value)
    assert kind.value == fc.CU_MEMORYTYPE_HOST
    drv.check("cuMemFreeHost", host)
    plain = (c_ubyte * 64)()
    assert drv.cuPointerGetAttribute(byref(kind), CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     ctypes.addressof(plain)) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuMemFree", p)


def test_ipc_memory_handle_needs_cumemalloc_memory(drv, ctx):
    handle = fc.CUipcMemHandle()
    p = alloc(drv, 4096)
    drv.check("cuIpcGetMemHandle", byref(handle), p)
    drv.check("cuMemFree", p)
    host = c_void_p()
    drv.check("cuMemHostAlloc", byref(host), 4096, 0)
    assert drv.cuIpcGetMemHandle(byref(handle), host.value) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuMemFreeHost", host)


def test_ipc_handles_of_this_process_cannot_be_opened(drv, ctx):
    p = alloc(drv, 256)
    handle = fc.CUipcMemHandle()
    drv.check("cuIpcGetMemHandle", byref(handle), p)
    opened = c_uint64()
    assert drv.cuIpcOpenMemHandle(byref(opened), handle, 1) == CUDA_ERROR_INVALID_CONTEXT
    event = c_void_p()
    drv.check("cuEventCreate", byref(event), 6)  # INTERPROCESS | DISABLE_TIMING
    event_handle = fc.CUipcEventHandle()
    drv.check("cuIpcGetEventHandle", byref(event_handle), event)
    assert drv.cuIpcOpenEventHandle(byref(c_void_p()), event_handle) == CUDA_ERROR_INVALID_CONTEXT
    drv.check("cuEventDestroy", event)
    drv.check("cuMemFree", p)


def test_ipc_memory_round_trip_in_process(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    fake_drv.set_ipc_in_process(True)
    p = alloc(fake_drv, 256)
    fake_drv.check("cuMemsetD8", p, 0x42, 256)
    handle = fc.CUipcMemHandle()
    fake_drv.check("cuIpcGetMemHandle", byref(handle), p)
    opened, again = c_uint64(), c_uint64()
    fake_drv.check("cuIpcOpenMemHandle", byref(opened), handle, 1)
    fake_drv.check("cuIpcOpenMemHandle", byref(again), handle, 1)
    assert opened.value == again.value != p
    assert to_host(fake_drv, opened.value, 256) == b"\x42" * 256
    fake_drv.check("cuMemsetD8", opened.value, 0x17, 1)
    assert to_host(fake_drv, p, 1) == b"\x17"
    fake_drv.check("cuIpcCloseMemHandle", opened.value)
    fake_drv.check("cuIpcCloseMemHandle", opened.value)
    assert fake_drv.cuIpcCloseMemHandle(opened.value) == CUDA_ERROR_INVALID_VALUE
    bogus = fc.CUipcMemHandle()
    assert fake_drv.cuIpcOpenMemHandle(byref(opened), bogus, 1) == CUDA_ERROR_INVALID_VALUE


# Stream-ordered allocation and pools ----------------------------------------------------------

CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 4, 5
CU_MEMPOOL_ATTR_USED_MEM_CURRENT, CU_MEMPOOL_ATTR_USED_MEM_HIGH = 7, 8


def pool_attribute(d, pool, attribute) -> int:
    value = c_uint64()
    d.check("cuMemPoolGetAttribute", pool, attribute, byref(value))
    return value.value


def test_async_alloc_and_pool_accounting(drv, ctx):
    pool = c_void_p()
    drv.check("cuDeviceGetDefaultMemPool", byref(pool), 0)
    stream = c_void_p()
    drv.check("cuStreamCreate", byref(stream), 0)
    used0 = pool_attribute(drv, pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    p = c_uint64()
    drv.check("cuMemAllocAsync", byref(p), 1 << 20, stream)
    drv.check("cuMemsetD8Async", p, 1, 1 << 20, stream)
    owner = c_void_p(1)
    drv.check("cuPointerGetAttribute", byref(owner), CU_POINTER_ATTRIBUTE_CONTEXT, p)
    assert owner.value is None  # pool memory belongs to no context
    assert pool_attribute(drv, pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) >= used0 + (1 << 20)
    assert (pool_attribute(drv, pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
            >= pool_attribute(drv, pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT))
    drv.check("cuMemFreeAsync", p, stream)
    drv.check("cuStreamSynchronize", stream)
    assert pool_attribute(drv, pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == used0
    drv.check("cuMemPoolTrimTo", pool, 0)
    assert pool_attribute(drv, pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH) >= used0 + (1 << 20)
    p = c_uint64(1)
    drv.check("cuMemAllocAsync", byref(p), 0, stream)  # zero bytes: allowed, a null pointer
    assert p.value == 0
    drv.check("cuMemFreeAsync", p, stream)
    drv.check("cuStreamDestroy", stream)


def test_pool_create_and_attributes(drv, ctx):
    props = fc.CUmemPoolProps(allocType=1, handleTypes=0, location=fc.CUmemLocation(1, 0))
    pool = c_void_p()
    drv.check("cuMemPoolCreate", byref(pool), byref(props))
    threshold = c_uint64(1 << 30)
    drv.check("cuMemPoolSetAttribute", pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, byref(threshold))
    assert pool_attribute(drv, pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 1 << 30
    p = c_uint64()
    drv.check("cuMemAllocFromPoolAsync", byref(p), 4 << 20, pool, None)
    drv.check("cuMemFreeAsync", p, None)
    drv.check("cuCtxSynchronize", None)
    # Below the release threshold the pool keeps what was freed.
    assert pool_attribute(drv, pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= 4 << 20
    drv.check("cuMemPoolTrimTo", pool, 0)
    assert pool_attribute(drv, pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0
    nonzero = c_uint64(5)
    assert drv.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                                     byref(nonzero)) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuMemPoolDestroy", pool)
    default = c_void_p()
    drv.check("cuDeviceGetDefaultMemPool", byref(default), 0)
    assert drv.cuMemPoolDestroy(default) == CUDA_ERROR_INVALID_VALUE
    bad = fc.CUmemPoolProps(allocType=0, location=fc.CUmemLocation(1, 0))
    assert drv.cuMemPoolCreate(byref(pool), byref(bad)) == CUDA_ERROR_INVALID_VALUE


def test_managed_memory_pool(drv, ctx):
    props = fc.CUmemPoolProps(allocType=2, location=fc.CUmemLocation(1, 0))  # MANAGED, device 0
    pool = c_void_p()
    drv.check("cuMemPoolCreate", byref(pool), byref(props))
    p = c_uint64()
    drv.check("cuMemAllocFromPoolAsync", byref(p), 4096, pool, None)
    drv.check("cuMemsetD8Async", p, 5, 4096, None)
    drv.check("cuCtxSynchronize", None)
    assert ctypes.string_at(p.value, 4) == b"\x05" * 4  # managed: host-accessible
    managed = ctypes.c_bool()
    drv.check("cuPointerGetAttribute", byref(managed), CU_POINTER_ATTRIBUTE_IS_MANAGED, p)
    assert managed.value
    drv.check("cuMemFreeAsync", p, None)
    drv.check("cuCtxSynchronize", None)
    drv.check("cuMemPoolDestroy", pool)


# Streams and events ---------------------------------------------------------------------------

def test_streams(drv, ctx):
    s = c_void_p()
    drv.check("cuStreamCreateWithPriority", byref(s), 1, -100)  # NON_BLOCKING, clamped priority
    priority, flags = c_int(), c_uint()
    drv.check("cuStreamGetPriority", s, byref(priority))
    assert -10 <= priority.value < 0
    drv.check("cuStreamGetFlags", s, byref(flags))
    assert flags.value == 1
    assert drv.cuStreamQuery(s) == CUDA_SUCCESS
    drv.check("cuStreamSynchronize", None)
    drv.check("cuStreamGetPriority", None, byref(priority))
    assert priority.value == 0
    drv.check("cuStreamDestroy", s)
    assert drv.cuStreamCreate(byref(s), 0x10) == CUDA_ERROR_INVALID_VALUE


def test_stream_handles_are_checked(fake_drv):
    c, s = c_void_p(), c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    fake_drv.check("cuStreamCreate", byref(s), 0)
    fake_drv.check("cuStreamDestroy", s)
    assert fake_drv.cuStreamDestroy(s) == CUDA_ERROR_INVALID_HANDLE
    assert fake_drv.cuStreamSynchronize(s) == CUDA_ERROR_INVALID_HANDLE
    made_up = c_void_p(0xDEAD0)
    assert fake_drv.cuMemsetD8Async(alloc(fake_drv, 8), 0, 8, made_up) == CUDA_ERROR_INVALID_HANDLE
    reports = fake_drv.take_undefined_behaviour()
    assert [r.split(":")[0] for r in reports] == ["cuStreamDestroy", "cuStreamSynchronize",
                                                 "cuMemsetD8Async"]
    assert all("stream handle" in r for r in reports)


def test_event_timing(drv, ctx):
    start, end = c_void_p(), c_void_p()
    drv.check("cuEventCreate", byref(start), 0)
    drv.check("cuEventCreate", byref(end), 0)
    ms = c_float(-1)
    assert drv.cuEventElapsedTime(byref(ms), start, end) == CUDA_ERROR_INVALID_HANDLE
    assert drv.cuEventQuery(start) == CUDA_SUCCESS  # never recorded: complete
    drv.check("cuEventRecord", start, None)
    drv.check("cuEventRecord", end, None)
    drv.check("cuEventSynchronize", end)
    drv.check("cuEventElapsedTime", byref(ms), start, end)
    assert ms.value >= 0
    untimed = c_void_p()
    drv.check("cuEventCreate", byref(untimed), 2)  # DISABLE_TIMING
    drv.check("cuEventRecord", untimed, None)
    drv.check("cuEventSynchronize", untimed)
    assert drv.cuEventElapsedTime(byref(ms), start, untimed) == CUDA_ERROR_INVALID_HANDLE
    stream = c_void_p()
    drv.check("cuStreamCreate", byref(stream), 0)
    drv.check("cuStreamWaitEvent", stream, end, 0)
    drv.check("cuStreamDestroy", stream)
    for e in (start, end, untimed):
        drv.check("cuEventDestroy", e)
    assert drv.cuEventCreate(byref(start), 4) == CUDA_ERROR_INVALID_VALUE  # IPC needs no timing


def test_ipc_event_handle(drv, ctx):
    timed, ipc = c_void_p(), c_void_p()
    drv.check("cuEventCreate", byref(timed), 0)
    drv.check("cuEventCreate", byref(ipc), 6)  # INTERPROCESS | DISABLE_TIMING
    handle = fc.CUipcEventHandle()
    assert drv.cuIpcGetEventHandle(byref(handle), timed) == CUDA_ERROR_INVALID_HANDLE
    drv.check("cuIpcGetEventHandle", byref(handle), ipc)
    drv.check("cuEventDestroy", timed)
    drv.check("cuEventDestroy", ipc)


def test_ipc_event_round_trip_in_process(fake_drv):
    c, ipc, opened = c_void_p(), c_void_p(), c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    fake_drv.set_ipc_in_process(True)
    fake_drv.check("cuEventCreate", byref(ipc), 6)
    handle = fc.CUipcEventHandle()
    fake_drv.check("cuIpcGetEventHandle", byref(handle), ipc)
    fake_drv.check("cuIpcOpenEventHandle", byref(opened), handle)
    fake_drv.check("cuEventRecord", opened, None)
    fake_drv.check("cuEventSynchronize", ipc)
    fake_drv.check("cuEventDestroy", opened)


# Modules --------------------------------------------------------------------------------------

def test_ptx_parameter_layout(drv, ctx):
    m = load(drv, SAMPLE_PTX)
    f = function(drv, m, b"params_kernel")
    offset, size = c_size_t(), c_size_t()
    layout = []
    for i in range(len(SAMPLE_LAYOUT)):
        drv.check("cuFuncGetParamInfo", f, i, byref(offset), byref(size))
        layout.append((offset.value, size.value))
    assert layout == SAMPLE_LAYOUT
    assert drv.cuFuncGetParamInfo(f, len(SAMPLE_LAYOUT), byref(offset),
                                  byref(size)) == CUDA_ERROR_INVALID_VALUE
    name = c_char_p()
    drv.check("cuFuncGetName", byref(name), f)
    assert name.value == b"params_kernel"
    drv.check("cuModuleUnload", m)


def test_unknown_function_and_global(drv, ctx):
    m = load(drv, SAMPLE_PTX)
    f = c_void_p()
    assert drv.cuModuleGetFunction(byref(f), m, b"no_such_kernel") == CUDA_ERROR_NOT_FOUND
    g = c_uint64()
    assert drv.cuModuleGetGlobal(byref(g), None, m, b"no_such_global") == CUDA_ERROR_NOT_FOUND
    drv.check("cuModuleUnload", m)


def test_module_globals(drv, ctx):
    m = load(drv, SAMPLE_PTX)
    g, size = c_uint64(), c_size_t()
    drv.check("cuModuleGetGlobal", byref(g), byref(size), m, b"counter")
    assert size.value == 4
    assert to_host(drv, g.value, 4) == (7).to_bytes(4, "little")
    drv.check("cuModuleGetGlobal", byref(g), byref(size), m, b"coeffs")
    assert size.value == 16
    values = (c_float * 4)()
    drv.check("cuMemcpyDtoH", values, g.value, 16)
    assert list(values) == [1.0, 2.0, 3.0, 4.5]
    drv.check("cuModuleGetGlobal", byref(g), byref(size), m, b"table")
    assert size.value == 24
    drv.check("cuMemcpyHtoD", g.value, b"x" * 24, 24)
    assert drv.cuMemcpyHtoD(g.value, b"x" * 25, 25) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuModuleUnload", m)


def test_function_attributes(drv, ctx):
    m = load(drv, SAMPLE_PTX)
    value = c_int()

    def attribute(name, attr):
        drv.check("cuFuncGetAttribute", byref(value), attr, function(drv, m, name))
        return value.value

    assert attribute(b"bounded", 0) == 128  # MAX_THREADS_PER_BLOCK from .maxntid
    assert attribute(b"empty", 0) == 1024
    assert attribute(b"with_shared", 1) == 1024  # SHARED_SIZE_BYTES
    assert attribute(b"empty", 1) == 0
    assert attribute(b"empty", 4) > 0  # NUM_REGS
    assert attribute(b"empty", 2) == 16  # CONST_SIZE_BYTES: the module's __constant__ data
    assert attribute(b"empty", 5) == 90  # PTX_VERSION: the virtual architecture (.target)
    assert attribute(b"empty", 6) == 90  # BINARY_VERSION
    assert attribute(b"empty", 8) == 49152  # MAX_DYNAMIC_SHARED_SIZE_BYTES
    f = function(drv, m, b"empty")
    assert drv.cuFuncGetAttribute(byref(value), 99, f) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuFuncSetAttribute", f, 8, 100000)
    assert attribute(b"empty", 8) == 100000
    assert drv.cuFuncSetAttribute(f, 8, 300000) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuFuncSetCacheConfig", f, 1)
    drv.check("cuModuleUnload", m)


def test_fake_function_registers(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    m = load(fake_drv, SAMPLE_PTX)
    value = c_int()
    fake_drv.check("cuFuncGetAttribute", byref(value), 4, function(fake_drv, m, b"empty"))
    assert value.value == 16


def test_invalid_images(drv, ctx):
    m = c_void_p()
    assert drv.cuModuleLoadData(byref(m), b"this is not a module\0") == fc.CUDA_ERROR_INVALID_IMAGE
    log = ctypes.create_string_buffer(4096)
    options = (c_int * 2)(fc.CU_JIT_ERROR_LOG_BUFFER, fc.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
    values = (c_void_p * 2)(ctypes.addressof(log), 4096)
    broken = SAMPLE_PTX.replace(b"ret;", b"this is not an instruction;", 1)
    result = drv.cuModuleLoadDataEx(byref(m), broken, 2, options, values)
    assert result == fc.CUDA_ERROR_INVALID_PTX
    assert b"error" in log.value
    assert 0 < values[1] < 4096  # the log's length is written back


def test_ptx_for_a_newer_gpu_is_refused(drv, ctx):
    m = c_void_p()
    newer = SAMPLE_PTX.replace(b".target sm_90", b".target sm_100")
    assert drv.cuModuleLoadData(byref(m), newer) == fc.CUDA_ERROR_INVALID_PTX


def test_module_from_file(drv, ctx, tmp_path):
    path = tmp_path / "sample.ptx"
    path.write_bytes(SAMPLE_PTX)
    m = c_void_p()
    drv.check("cuModuleLoad", byref(m), str(path).encode())
    function(drv, m, b"empty")
    drv.check("cuModuleUnload", m)
    missing = str(tmp_path / "missing.ptx").encode()
    assert drv.cuModuleLoad(byref(m), missing) == fc.CUDA_ERROR_FILE_NOT_FOUND


def test_unloaded_module_handles_are_invalid(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    m = load(fake_drv, SAMPLE_PTX)
    f = function(fake_drv, m, b"empty")
    fake_drv.check("cuModuleUnload", m)
    value = c_int()
    assert fake_drv.cuFuncGetAttribute(byref(value), 0, f) == CUDA_ERROR_INVALID_HANDLE
    assert fake_drv.cuModuleUnload(m) == CUDA_ERROR_INVALID_HANDLE
    assert len(fake_drv.take_undefined_behaviour()) == 2


def test_linker(drv, ctx):
    log = ctypes.create_string_buffer(4096)
    options = (c_int * 2)(fc.CU_JIT_ERROR_LOG_BUFFER, fc.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
    values = (c_void_p * 2)(ctypes.addressof(log), 4096)
    link = c_void_p()
    drv.check("cuLinkCreate", 2, options, values, byref(link))
    drv.check("cuLinkAddData", link, fc.CU_JIT_INPUT_PTX, SAMPLE_PTX, len(SAMPLE_PTX), b"a.ptx",
              0, None, None)
    drv.check("cuLinkAddData", link, fc.CU_JIT_INPUT_PTX, SECOND_PTX, len(SECOND_PTX), b"b.ptx",
              0, None, None)
    image, size = c_void_p(), c_size_t()
    drv.check("cuLinkComplete", link, byref(image), byref(size))
    assert size.value > 0
    m = c_void_p()
    drv.check("cuModuleLoadData", byref(m), image)
    f = function(drv, m, b"second_kernel")
    offset, psize = c_size_t(), c_size_t()
    drv.check("cuFuncGetParamInfo", f, 0, byref(offset), byref(psize))
    assert (offset.value, psize.value) == (0, 4)
    function(drv, m, b"params_kernel")
    drv.check("cuLinkDestroy", link)
    drv.check("cuModuleUnload", m)


def test_empty_link(drv, ctx):
    link = c_void_p()
    drv.check("cuLinkCreate", 0, None, None, byref(link))
    image, size = c_void_p(), c_size_t()
    drv.check("cuLinkComplete", link, byref(image), byref(size))
    drv.check("cuLinkDestroy", link)


def test_linker_rejects_bad_ptx(drv, ctx):
    link = c_void_p()
    drv.check("cuLinkCreate", 0, None, None, byref(link))
    bad = b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { nonsense; }\n"
    assert drv.cuLinkAddData(link, fc.CU_JIT_INPUT_PTX, bad, len(bad), b"bad.ptx", 0, None,
                             None) == fc.CUDA_ERROR_INVALID_PTX
    drv.check("cuLinkDestroy", link)


# Launches -------------------------------------------------------------------------------------

def params_kernel_buffer() -> bytes:
    buf = bytearray(58)
    buf[0:8] = (0x1122334455667788).to_bytes(8, "little")
    buf[8:12] = (42).to_bytes(4, "little")
    buf[16:40] = bytes(range(24))
    buf[40] = 0x7F
    buf[48:56] = bytes.fromhex("000000000000f03f")  # 1.0
    buf[56:58] = (513).to_bytes(2, "little")
    return bytes(buf)


def launch(d, f, grid=(1, 1, 1), block=(1, 1, 1), shared=0, stream=None, kernel_params=None,
           buffer: bytes | None = None) -> int:
    extra = None
    if buffer is not None:
        raw = ctypes.create_string_buffer(buffer, len(buffer))
        size = c_size_t(len(buffer))
        extra = (c_void_p * 5)(fc.CU_LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(raw),
                               fc.CU_LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(size),
                               fc.CU_LAUNCH_PARAM_END)
    return d.cuLaunchKernel(f, *grid, *block, shared, stream, kernel_params, extra)


def test_launch_checks_like_the_driver(drv, ctx):
    m = load(drv, SAMPLE_PTX)
    empty = function(drv, m, b"empty")
    bounded = function(drv, m, b"bounded")
    assert launch(drv, empty, (4, 2, 1), (256, 4, 1)) == CUDA_SUCCESS
    assert launch(drv, empty, block=(1025, 1, 1)) == CUDA_ERROR_INVALID_VALUE
    assert launch(drv, empty, block=(1, 1, 65)) == CUDA_ERROR_INVALID_VALUE
    assert launch(drv, empty, block=(64, 32, 1)) == CUDA_ERROR_INVALID_VALUE  # 2048 threads
    assert launch(drv, empty, grid=(1, 65536, 1)) == CUDA_ERROR_INVALID_VALUE
    assert launch(drv, empty, grid=(0, 1, 1)) == CUDA_ERROR_INVALID_VALUE
    assert launch(drv, empty, shared=49153) == CUDA_ERROR_INVALID_VALUE
    assert launch(drv, empty, shared=49152) == CUDA_SUCCESS
    drv.check("cuFuncSetAttribute", empty, 8, 100000)
    assert launch(drv, empty, shared=100000) == CUDA_SUCCESS
    assert launch(drv, bounded, block=(128, 1, 1)) == CUDA_SUCCESS
    drv.check("cuCtxSynchronize", None)
    drv.check("cuModuleUnload", m)


def test_launch_parameters(drv, ctx):
    m = load(drv, SAMPLE_PTX)
    f = function(drv, m, b"params_kernel")
    buffer = params_kernel_buffer()
    assert launch(drv, f, buffer=buffer) == CUDA_SUCCESS
    values = [ctypes.create_string_buffer(buffer[o:o + s], s) for o, s in SAMPLE_LAYOUT]
    pointers = (c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    assert launch(drv, f, kernel_params=pointers) == CUDA_SUCCESS
    raw = ctypes.create_string_buffer(buffer, len(buffer))
    size = c_size_t(len(buffer))
    extra = (c_void_p * 5)(fc.CU_LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(raw),
                           fc.CU_LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(size),
                           fc.CU_LAUNCH_PARAM_END)
    both = drv.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, pointers, extra)
    assert both == CUDA_ERROR_INVALID_VALUE
    assert launch(drv, f, buffer=buffer[:40]) == CUDA_SUCCESS  # the rest is left undefined
    assert launch(drv, f, buffer=buffer + bytes(6)) == fc.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    assert launch(drv, f, buffer=b"") == CUDA_ERROR_INVALID_VALUE
    assert launch(drv, f) == CUDA_ERROR_INVALID_VALUE  # parameters missing
    drv.check("cuCtxSynchronize", None)
    drv.check("cuModuleUnload", m)


def test_launches_are_recorded(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    m = load(fake_drv, SAMPLE_PTX)
    f = function(fake_drv, m, b"params_kernel")
    stream = c_void_p()
    fake_drv.check("cuStreamCreate", byref(stream), 0)
    assert fake_drv.launch_count() == 0 and fake_drv.last_launch() is None
    buffer = params_kernel_buffer()
    assert launch(fake_drv, f, (3, 2, 1), (32, 4, 2), 128, stream, buffer=buffer) == CUDA_SUCCESS
    rec = fake_drv.last_launch()
    assert rec == fc.Launch("params_kernel", (3, 2, 1), (32, 4, 2), 128, stream.value, buffer)
    values = [ctypes.create_string_buffer(buffer[o:o + s], s) for o, s in SAMPLE_LAYOUT]
    pointers = (c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    assert launch(fake_drv, f, kernel_params=pointers) == CUDA_SUCCESS
    rec = fake_drv.last_launch()
    # From kernelParams the buffer is laid out by the kernel's parameter layout (padding zero).
    expected = bytearray(58)
    for (o, s) in SAMPLE_LAYOUT:
        expected[o:o + s] = buffer[o:o + s]
    assert rec.params == bytes(expected)
    assert fake_drv.launch(1).grid == (3, 2, 1)
    assert fake_drv.launch_count() == 2
    assert launch(fake_drv, f, block=(2048, 1, 1), buffer=buffer) == CUDA_ERROR_INVALID_VALUE
    assert fake_drv.launch_count() == 2  # failed launches are not recorded
    assert fake_drv.launch(2) is None
    assert launch(fake_drv, f, buffer=buffer[:40]) == CUDA_SUCCESS
    assert fake_drv.last_launch().params == buffer[:40] + bytes(18)  # padded to the layout
    fake_drv.clear_launches()
    assert fake_drv.launch_count() == 0


def test_launch_needs_the_functions_context(fake_drv):
    a, b = c_void_p(), c_void_p()
    fake_drv.check("cuCtxCreate", byref(a), None, 0, 0)
    m = load(fake_drv, SAMPLE_PTX)
    f = function(fake_drv, m, b"empty")
    fake_drv.check("cuCtxCreate", byref(b), None, 0, 0)
    assert launch(fake_drv, f) == CUDA_ERROR_INVALID_HANDLE


def test_occupancy(drv, ctx):
    m = load(drv, SAMPLE_PTX)
    f = function(drv, m, b"empty")
    blocks = c_int()
    drv.check("cuOccupancyMaxActiveBlocksPerMultiprocessor", byref(blocks), f, 256, 0)
    assert blocks.value == 8  # 2048 threads per SM
    drv.check("cuOccupancyMaxActiveBlocksPerMultiprocessor", byref(blocks), f, 32, 0)
    assert blocks.value == 32  # at most 32 blocks per SM
    drv.check("cuOccupancyMaxActiveBlocksPerMultiprocessor", byref(blocks), f, 1024, 200000)
    assert blocks.value == 0  # more dynamic shared memory than the function may use
    drv.check("cuFuncSetAttribute", f, 8, 200000)  # MAX_DYNAMIC_SHARED_SIZE_BYTES
    drv.check("cuOccupancyMaxActiveBlocksPerMultiprocessor", byref(blocks), f, 1024, 200000)
    assert blocks.value == 1
    min_grid, block = c_int(), c_int()
    drv.check("cuOccupancyMaxPotentialBlockSize", byref(min_grid), byref(block), f, None, 0, 0)
    sms = device_attribute(drv, MULTIPROCESSOR_COUNT)
    assert block.value * (min_grid.value // sms) == 2048
    bounded = function(drv, m, b"bounded")
    drv.check("cuOccupancyMaxPotentialBlockSize", byref(min_grid), byref(block), bounded, None,
              0, 0)
    assert block.value == 128
    drv.check("cuModuleUnload", m)


# Binary images (need the CUDA toolkit's ptxas / nvcc) ------------------------------------------

TOOLKIT_BIN = pathlib.Path("/usr/local/cuda/bin")


def tool(name: str) -> str:
    bundled = TOOLKIT_BIN / name
    path = shutil.which(name) or (str(bundled) if bundled.exists() else None)
    if path is None:
        pytest.skip(f"{name} is not installed")
    return path


@pytest.fixture(scope="module")
def sample_cubin(tmp_path_factory) -> bytes:
    work = tmp_path_factory.mktemp("cubin")
    (work / "sample.ptx").write_bytes(SAMPLE_PTX)
    subprocess.run([tool("ptxas"), "-arch=sm_90", "-o", str(work / "sample.cubin"),
                    str(work / "sample.ptx")], check=True)
    return (work / "sample.cubin").read_bytes()


CUDA_SOURCE = r"""
struct S { double a; char b; };
__constant__ float coeffs[4] = {1.0f, 2.0f, 3.0f, 4.5f};
__device__ int counter = 7;
extern "C" __global__ void __launch_bounds__(128) add(float *x, const float *y, int n, S s, char c,
                                                      double d) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = y[i];
  __syncthreads();
  if (i < n) x[i] += tile[threadIdx.x ^ 1] * coeffs[i % 4] + s.a + c + d + counter;
}
"""
ADD_LAYOUT = [(0, 8), (8, 8), (16, 4), (24, 16), (40, 1), (48, 8)]


@pytest.fixture(scope="module")
def nvcc_images(tmp_path_factory) -> dict[str, bytes]:
    work = tmp_path_factory.mktemp("nvcc")
    (work / "k.cu").write_text(CUDA_SOURCE)
    images = {}
    for kind, flags in (("ptx", ["-ptx"]), ("cubin", ["-cubin"]), ("fatbin", ["-fatbin"])):
        out = work / f"k.{kind}"
        subprocess.run([tool("nvcc"), "-arch=sm_90", *flags, "-o", str(out), str(work / "k.cu")],
                       check=True)
        images[kind] = out.read_bytes() + (b"\0" if kind == "ptx" else b"")
    return images


def describe_module(d, image: bytes, kernel: bytes, layout_len: int):
    m = load(d, image)
    f = function(d, m, kernel)
    layout = []
    offset, size = c_size_t(), c_size_t()
    for i in range(layout_len):
        d.check("cuFuncGetParamInfo", f, i, byref(offset), byref(size))
        layout.append((offset.value, size.value))
    attrs = []
    value = c_int()
    for attribute in (0, 1):  # MAX_THREADS_PER_BLOCK, SHARED_SIZE_BYTES
        d.check("cuFuncGetAttribute", byref(value), attribute, f)
        attrs.append(value.value)
    d.check("cuModuleUnload", m)
    return layout, attrs


def test_cubin_from_ptxas_matches_the_ptx(drv, ctx, sample_cubin):
    assert describe_module(drv, sample_cubin, b"params_kernel", 6)[0] == SAMPLE_LAYOUT
    assert describe_module(drv, sample_cubin, b"bounded", 0)[1] == [128, 0]
    assert describe_module(drv, sample_cubin, b"with_shared", 0)[1] == [1024, 1024]
    m = load(drv, sample_cubin)
    g, size = c_uint64(), c_size_t()
    drv.check("cuModuleGetGlobal", byref(g), byref(size), m, b"counter")
    assert to_host(drv, g.value, 4) == (7).to_bytes(4, "little")
    drv.check("cuModuleUnload", m)


@pytest.mark.parametrize("kind", ["ptx", "cubin", "fatbin"])
def test_nvcc_images(drv, ctx, nvcc_images, kind):
    layout, attrs = describe_module(drv, nvcc_images[kind], b"add", 6)
    assert layout == ADD_LAYOUT
    assert attrs == [128, 1024]
    m = load(drv, nvcc_images[kind])
    g, size = c_uint64(), c_size_t()
    drv.check("cuModuleGetGlobal", byref(g), byref(size), m, b"coeffs")
    values = (c_float * 4)()
    drv.check("cuMemcpyDtoH", values, g.value, 16)
    assert (size.value, list(values)) == (16, [1.0, 2.0, 3.0, 4.5])
    drv.check("cuModuleUnload", m)


def test_cubin_for_another_gpu_is_refused(fake_drv, tmp_path):
    (tmp_path / "s.ptx").write_bytes(SAMPLE_PTX.replace(b"sm_90", b"sm_80"))
    subprocess.run([tool("ptxas"), "-arch=sm_80", "-o", str(tmp_path / "s.cubin"),
                    str(tmp_path / "s.ptx")], check=True)
    c, m = c_void_p(), c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    image = (tmp_path / "s.cubin").read_bytes()
    assert fake_drv.cuModuleLoadData(byref(m), image) == fc.CUDA_ERROR_NO_BINARY_FOR_GPU


# Control API ----------------------------------------------------------------------------------

def test_fault_injection(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    fake_drv.fail_next("cuMemAlloc", fc.CUDA_ERROR_OUT_OF_MEMORY, 2)
    p = c_uint64()
    assert fake_drv.cuMemAlloc(byref(p), 16) == fc.CUDA_ERROR_OUT_OF_MEMORY
    assert fake_drv.cuMemAlloc(byref(p), 16) == fc.CUDA_ERROR_OUT_OF_MEMORY
    assert fake_drv.live_allocations() == 0  # a failed call has no effect
    assert fake_drv.cuMemAlloc(byref(p), 16) == CUDA_SUCCESS
    fake_drv.fail_next("cuCtxSynchronize", fc.CUDA_ERROR_UNKNOWN)
    fake_drv.fail_next("cuCtxSynchronize", 719, 0)  # count 0 removes it again
    assert fake_drv.cuCtxSynchronize(None) == CUDA_SUCCESS
    fake_drv.fail_next("cuInit", fc.CUDA_ERROR_NO_DEVICE)
    assert fake_drv.cuInit(0) == fc.CUDA_ERROR_NO_DEVICE
    fake_drv.fail_next("cuStreamQuery", fc.CUDA_ERROR_NOT_READY, 5)
    fake_drv.clear_faults()
    assert fake_drv.cuStreamQuery(None) == CUDA_SUCCESS
    with pytest.raises(ValueError, match="cuNoSuchCall"):
        fake_drv.fail_next("cuNoSuchCall", 1)


def test_live_allocations_and_bytes_in_use(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    assert fake_drv.live_allocations() == 0
    p = alloc(fake_drv, 1000)
    managed = c_uint64()
    fake_drv.check("cuMemAllocManaged", byref(managed), 64, 1)
    host = c_void_p()
    fake_drv.check("cuMemHostAlloc", byref(host), 64, 0)
    assert fake_drv.live_allocations() == 2
    assert fake_drv.live_host_allocations() == 1
    assert fake_drv.device_bytes_in_use(0) == 1024  # rounded to the allocation granularity
    assert fake_drv.device_bytes_in_use(1) == 0
    fake_drv.check("cuMemFree", p)
    fake_drv.check("cuMemFree", managed)
    fake_drv.check("cuMemFreeHost", host)
    assert fake_drv.live_allocations() == fake_drv.live_host_allocations() == 0


def test_destroying_a_context_frees_its_resources(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    alloc(fake_drv, 4096)
    host = c_void_p()
    fake_drv.check("cuMemHostAlloc", byref(host), 64, 0)
    s = c_void_p()
    fake_drv.check("cuStreamCreate", byref(s), 0)
    fake_drv.check("cuCtxDestroy", c)
    assert fake_drv.live_allocations() == fake_drv.live_host_allocations() == 0
    assert fake_drv.device_bytes_in_use(0) == 0
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    assert fake_drv.cuStreamQuery(s) == CUDA_ERROR_INVALID_HANDLE  # destroyed with its context
    assert len(fake_drv.take_undefined_behaviour()) == 1


def test_context_stack_depth_and_reset(fake_drv):
    assert fake_drv.context_stack_depth() == 0
    a, b = c_void_p(), c_void_p()
    fake_drv.check("cuCtxCreate", byref(a), None, 0, 0)
    fake_drv.check("cuDevicePrimaryCtxRetain", byref(b), 1)
    fake_drv.check("cuCtxPushCurrent", b)
    assert fake_drv.context_stack_depth() == 2
    assert in_fresh_thread(fake_drv.context_stack_depth) == 0
    assert fake_drv.context_alive(a.value) and fake_drv.context_alive(b.value)
    fake_drv.check("cuCtxPopCurrent", None)
    fake_drv.check("cuDevicePrimaryCtxRelease", 1)
    assert not fake_drv.context_alive(b.value)  # released primary context
    fake_drv.check("cuDevicePrimaryCtxRetain", byref(b), 1)
    fake_drv.check("cuCtxPushCurrent", b)
    alloc(fake_drv, 64)
    fake_drv.reset()
    assert fake_drv.context_stack_depth() == 0
    assert fake_drv.live_allocations() == 0
    assert not fake_drv.context_alive(a.value)
    assert fake_drv.cuCtxPushCurrent(a) == fc.CUDA_ERROR_NOT_INITIALIZED
    fake_drv.check("cuInit", 0)
    assert fake_drv.cuCtxPushCurrent(a) == CUDA_ERROR_INVALID_CONTEXT
    assert len(fake_drv.take_undefined_behaviour()) == 1


def test_device_pointers_are_not_host_addresses(fake_drv):
    """Device memory lives at addresses the host cannot touch, as on a GPU: passing one where a
    host buffer belongs is an error, not silent success."""
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    p = alloc(fake_drv, 64)
    q = alloc(fake_drv, 64)
    assert fake_drv.cuMemcpyHtoD(q, p, 64) == CUDA_ERROR_INVALID_VALUE
    assert fake_drv.cuMemcpyDtoH(p, q, 64) == CUDA_ERROR_INVALID_VALUE
    reports = fake_drv.take_undefined_behaviour()
    assert len(reports) == 2 and all("passed as host memory" in r for r in reports)
    fake_drv.check("cuMemFree", p)
    # A freed device address is not mistaken for pageable host memory by unified copies.
    assert fake_drv.cuMemcpy(q, p, 64) == CUDA_ERROR_INVALID_VALUE


def test_threads_share_the_driver(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    errors = []

    def worker():
        try:
            fake_drv.check("cuCtxPushCurrent", c)
            for _ in range(200):
                p = alloc(fake_drv, 4096)
                fake_drv.check("cuMemsetD8", p, 1, 4096)
                fake_drv.check("cuMemFree", p)
            fake_drv.check("cuCtxPopCurrent", None)
        except Exception as e:  # collected for the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert fake_drv.live_allocations() == 0

