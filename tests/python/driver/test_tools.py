"""cuplug.tools, cuplug.characterize, cuplug.autoinit and cuplug.autoprimaryctx (spec §10, §11).
sizeof(), which runs a kernel, is test_tools_gpu.py's."""

import os
import subprocess
import sys

import numpy as np
import pytest

import cuplug.driver as drv
from cuplug import tools

# ---- C types of dtypes (no device needed) -------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, ctype",
    [
        (np.float32, "float"),
        (np.float64, "double"),
        (np.int8, "signed char"),
        (np.uint8, "unsigned char"),
        (np.int16, "short"),
        (np.uint16, "unsigned short"),
        (np.int32, "int"),
        (np.uint32, "unsigned"),
        (np.int64, "long"),
        (np.uint64, "unsigned long"),
        (np.bool_, "bool"),
        (np.float16, "__half"),
        (np.complex64, "cuda::std::complex<float>"),
        (np.complex128, "cuda::std::complex<double>"),
    ],
)
def test_dtype_to_ctype(dtype, ctype):
    assert tools.dtype_to_ctype(dtype) == ctype
    assert tools.dtype_to_ctype(np.dtype(dtype)) == ctype


def test_dtype_to_ctype_errors_and_tex_hack():
    with pytest.raises(ValueError, match="dtype may not be None"):
        tools.dtype_to_ctype(None)
    with pytest.raises(ValueError, match="unable to map dtype"):
        tools.dtype_to_ctype(np.dtype("S3"))
    assert tools.dtype_to_ctype(np.float32, with_fp_tex_hack=True) == "fp_tex_float"
    assert tools.dtype_to_ctype(np.complex128, with_fp_tex_hack=True) == "fp_tex_cdouble"
    assert tools.dtype_to_ctype(np.int32, with_fp_tex_hack=True) == "int"


def test_dtype_registry():
    assert tools.get_or_register_dtype("unsigned int") == np.uint32
    assert tools.get_or_register_dtype(["int", "signed int"]) == np.int32
    with pytest.raises(tools.TypeNameNotKnown):
        tools.get_or_register_dtype("no_such_type_t")
    point = np.dtype([("x", np.float32), ("y", np.float32)])
    assert tools.get_or_register_dtype("test_point2", point) == point
    assert tools.dtype_to_ctype(point) == "test_point2"
    # Registering again is fine; the same name for another dtype is not.
    assert tools.get_or_register_dtype(["test_point2", "test_point2_alias"], point) == point
    with pytest.raises(RuntimeError, match="already registered to different dtype"):
        tools.get_or_register_dtype("test_point2", np.float64)
    with pytest.warns(DeprecationWarning):
        with pytest.raises(RuntimeError, match="already registered"):
            tools.register_dtype(np.float32, "my_float")


def test_parse_c_arg():
    arg = tools.parse_c_arg("const float * __restrict__ x")
    assert isinstance(arg, tools.VectorArg)
    assert (arg.name, arg.dtype) == ("x", np.float32)
    assert arg.declarator() == "float *x"
    assert arg.struct_char == "P"
    n = tools.parse_c_arg("unsigned int n")
    assert isinstance(n, tools.ScalarArg) and n.dtype == np.uint32
    assert n.declarator() == "unsigned n" and n.struct_char == "I"
    assert isinstance(tools.parse_c_arg("double y[10]"), tools.VectorArg)
    assert tools.get_arg_type("long z") == "l"
    assert tools.get_arg_type("pycuda::complex<float> *c") == "P"
    with pytest.raises(ValueError, match="unknown type 'struct nope'"):
        tools.parse_c_arg("struct nope a")
    with pytest.raises(ValueError, match="couldn't parse C declarator"):
        tools.parse_c_arg("float *")
    assert repr(n) == "ScalarArg('n', uint32)"
    void = tools.ScalarArg(np.dtype([("a", np.int32), ("b", np.int8)], align=True), "s")
    assert void.struct_char == "8s"


def test_bitlog2():
    expected = {0: 0, 1: 0, 2: 1, 3: 1, 4: 2, 1023: 9, 1024: 10, 2**40 + 5: 40}
    assert {n: tools.bitlog2(n) for n in expected} == expected
    with pytest.raises(ValueError):
        tools.bitlog2(-1)


def test_platform_bits():
    from cuplug.characterize import platform_bits

    assert platform_bits() == 8 * np.dtype(np.intp).itemsize


# ---- default context ---------------------------------------------------------------------------


@pytest.fixture
def no_device_setting(monkeypatch, tmp_path):
    monkeypatch.delenv("CUDA_DEVICE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


@pytest.mark.gpu
def test_make_default_context_first_device(no_device_setting):
    drv.init()
    ctx = tools.make_default_context()
    try:
        assert drv.Context.get_current() == ctx
        assert ctx.get_device() == drv.Device(0)
    finally:
        drv.Context.pop()
    ctx.detach()


@pytest.mark.gpu
def test_make_default_context_from_environment(no_device_setting, monkeypatch):
    drv.init()
    last = drv.Device.count() - 1
    monkeypatch.setenv("CUDA_DEVICE", str(last))
    ctx = tools.make_default_context()
    assert drv.Context.get_device() == drv.Device(last)
    drv.Context.pop()
    ctx.detach()
    monkeypatch.setenv("CUDA_DEVICE", "first")
    with pytest.raises(TypeError, match="must be an integer"):
        tools.make_default_context()


@pytest.mark.gpu
def test_make_default_context_from_home_file(no_device_setting):
    drv.init()
    last = drv.Device.count() - 1
    (no_device_setting / ".cuda_device").write_text(f"{last}\n")
    made = []

    def maker(dev):
        made.append(dev)
        return dev.retain_primary_context()

    ctx = tools.make_default_context(maker)
    assert made == [drv.Device(last)] and ctx.is_primary
    with pytest.warns(DeprecationWarning):
        assert tools.get_default_device() == drv.Device(last)


@pytest.mark.gpu
def test_make_default_context_skips_failing_devices(no_device_setting):
    drv.init()
    tried = []

    def maker(dev):
        tried.append(dev)
        raise drv.LogicError("no")

    with pytest.raises(RuntimeError, match="wasn't able to create a context on any of the"):
        tools.make_default_context(maker)
    assert tried == [drv.Device(n) for n in range(drv.Device.count())]


# ---- device data and occupancy ------------------------------------------------------------------


@pytest.mark.gpu
def test_device_data_uses_the_devices_values(ctx):
    dev = ctx.get_device()
    attr = drv.device_attribute
    data = tools.DeviceData()
    assert data.max_threads == dev.get_attribute(attr.MAX_THREADS_PER_BLOCK)
    assert data.warp_size == 32
    assert data.warps_per_mp == dev.get_attribute(attr.MAX_THREADS_PER_MULTIPROCESSOR) // 32
    assert data.thread_blocks_per_mp == dev.get_attribute(attr.MAX_BLOCKS_PER_MULTIPROCESSOR)
    assert data.registers == dev.get_attribute(attr.MAX_REGISTERS_PER_BLOCK)
    assert data.shared_memory == dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK)
    assert (data.smem_alloc_granularity, data.smem_granularity) == (128, 32)
    assert data.register_allocation_unit == "warp"
    assert data.align(100) == 128 and data.align_bytes(8) == 128
    assert data.align_words(4) == 16 and data.align_dtype(10, 4) == 16
    assert data.coalesce(17) == 32
    assert tools.DeviceData.make_valid_tex_channel_count(3) == 4
    with pytest.raises(ValueError):
        data.align_bytes(3)
    assert tools.DeviceData(dev).max_threads == data.max_threads


class _Data:
    max_threads, warp_size, warps_per_mp, thread_blocks_per_mp = 1024, 32, 64, 32
    registers, shared_memory = 65536, 49152
    smem_alloc_granularity, register_allocation_unit = 128, "warp"


def test_occupancy_record():
    full = tools.OccupancyRecord(_Data, threads=1024)
    assert (full.tb_per_mp, full.limited_by, full.occupancy) == (2, "warps", 1.0)
    small = tools.OccupancyRecord(_Data, threads=32)
    assert (small.tb_per_mp, small.limited_by) == (32, "device")
    assert small.occupancy == 0.5
    regs = tools.OccupancyRecord(_Data, threads=256, registers=64)
    assert (regs.tb_per_mp, regs.limited_by) == (4, "regs")
    smem = tools.OccupancyRecord(_Data, threads=64, shared_mem=20000)
    assert (smem.tb_per_mp, smem.limited_by) == (2, "smem")
    with pytest.raises(ValueError, match="too many threads"):
        tools.OccupancyRecord(_Data, threads=2048)
    with pytest.raises(ValueError, match="too much smem"):
        tools.OccupancyRecord(_Data, threads=32, shared_mem=60000)


# ---- context-dependent memoization --------------------------------------------------------------


@pytest.mark.gpu
def test_context_dependent_memoize(ctx):
    calls = []

    @tools.context_dependent_memoize
    def square(x, offset=0):
        calls.append(x)
        return x * x + offset

    assert square(3) == 9 and square(3) == 9
    assert square(3, offset=1) == 10
    assert calls == [3, 3]
    other = drv.Device(0).make_context()
    assert square(3) == 9  # another context: computed again
    drv.Context.pop()
    other.detach()
    assert calls == [3, 3, 3]
    assert square.__name__ == "square"
    tools.clear_context_caches()
    assert square(3) == 9 and calls == [3, 3, 3, 3]
    tools.clear_context_caches()


def test_context_dependent_memoize_forgets_a_destroyed_context_whose_handle_came_back(ctx, fake):
    calls = []

    @tools.context_dependent_memoize
    def kernel_of(x):
        calls.append(x)
        return object()  # stands for something of the context: a kernel, device memory

    fake.reuse_context_handles()
    try:
        first = drv.Device(0).make_context()
        made_in_first = kernel_of(1)
        assert kernel_of(1) is made_in_first
        handle = first.handle
        drv.Context.pop()
        first.detach()
        second = drv.Device(0).make_context()
        try:
            assert second.handle == handle and second == first  # equal by handle
            assert kernel_of(1) is not made_in_first
            assert calls == [1, 1]
        finally:
            drv.Context.pop()
            second.detach()
    finally:
        fake.reuse_context_handles(False)
        tools.clear_context_caches()


# ---- test helpers -------------------------------------------------------------------------------


@pytest.mark.gpu
def test_mark_cuda_test(no_device_setting):
    seen = []

    def inner(value):
        seen.append((value, drv.Context.get_current()))

    wrapped = tools.mark_cuda_test(inner)
    assert any(mark.name == "gpu" for mark in wrapped.pytestmark)
    before = drv.Context.get_current()
    wrapped(5)
    assert seen[0][0] == 5 and seen[0][1] is not None
    assert drv.Context.get_current() == before


@pytest.mark.gpu
def test_init_cuda_context_fixture(no_device_setting):
    before = drv.Context.get_current()
    fixture = tools.init_cuda_context_fixture()
    ctx = next(fixture)
    assert drv.Context.get_current() == ctx
    with pytest.raises(StopIteration):
        next(fixture)
    assert drv.Context.get_current() == before


@pytest.mark.gpu
def test_characterize(ctx):
    from cuplug import characterize

    assert characterize.has_stack() and characterize.has_double_support()


# ---- autoinit / autoprimaryctx ------------------------------------------------------------------


def run_script(code):
    env = dict(os.environ)
    env.pop("CUDA_DEVICE", None)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.gpu
@pytest.mark.parametrize(
    "module, primary",
    [("autoinit", True), ("autoprimaryctx", True), ("autoinit_private", False)],
)
def test_auto_modules(module, primary):
    result = run_script(
        f"import cuplug.{module} as auto, cuplug.driver as cuda\n"
        "assert cuda.Context.get_current() == auto.context\n"
        "assert auto.device == cuda.Device(0) == auto.context.get_device()\n"
        f"assert auto.context.is_primary is {primary}\n"
        "s = cuda.Stream(); s.synchronize()\n"
        "print('ok')\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert result.stderr == ""


@pytest.mark.gpu
def test_autoinit_shares_the_context_the_runtime_would_use():
    # The point of the primary context: a second retain (what the CUDA runtime, PyTorch and CuPy
    # do) gets the very context autoinit made current.
    result = run_script(
        "import cuplug.autoinit as auto, cuplug.driver as cuda\n"
        "other = cuda.Device(0).retain_primary_context()\n"
        "assert other.handle == auto.context.handle\n"
        "import cuplug.autoinit_private as private\n"
        "assert private.context.handle != auto.context.handle\n"
        "assert cuda.Context.get_current() == private.context\n"
        "print('ok')\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.gpu
def test_autoinit_exit_tolerates_a_popped_context():
    result = run_script(
        "import cuplug.autoinit, cuplug.driver as cuda\n"
        "cuda.Context.pop()\n"  # the program popped it itself
        "print('ok')\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
