"""Kernel launch: Function.__call__'s type dispatch and argument packing (checked against the
parameter bytes the fake driver records), geometry checks, the Function object, launches from
threads without a context. prepare / prepared_*call: test_launch_prepared.py; In/Out/InOut:
test_launch_handlers.py. A kernel that runs: test_launch_run_gpu.py."""

import gc
import struct

import numpy as np
import pytest
from support import fakecuda
from support.launch_kernels import (
    ALL_CODES,
    ALL_VALUES,
    NUMPY_TYPES,
    PTX,
    VEC3,
    VEC4,
    expected_params,
)
from support.threads import in_thread

import cuplug.driver as drv

pytestmark = pytest.mark.gpu


# ---- __call__: PyCUDA's type dispatch -----------------------------------------------------------


def test_call_packs_numpy_scalars_by_dtype(mod, fake):
    f = mod.get_function("all_types")
    args = [NUMPY_TYPES[c](v) if c in NUMPY_TYPES else v for c, v in zip(ALL_CODES, ALL_VALUES)]
    args[ALL_CODES.index("P")] = drv.mem_alloc(8)
    args[ALL_CODES.index("n")] = np.intp(ALL_VALUES[ALL_CODES.index("n")])
    args[ALL_CODES.index("N")] = np.uintp(ALL_VALUES[ALL_CODES.index("N")])
    args[ALL_CODES.index("c")] = np.int8(ord("x"))
    f(*args, block=(1, 1, 1))
    values = list(ALL_VALUES)
    values[ALL_CODES.index("P")] = int(args[ALL_CODES.index("P")])
    assert fake.last_launch().params == expected_params(f, ALL_CODES, values)


def test_call_geometry_stream_and_shared(mod, fake, alloc):
    f = mod.get_function("ptr_int")
    f(alloc, np.int32(5), block=(32, 2, 1))
    launch = fake.last_launch()
    assert launch.grid == (1, 1, 1) and launch.block == (32, 2, 1)
    assert launch.shared_bytes == 0 and launch.stream == 0
    assert launch.params == struct.pack("@Pi", int(alloc), 5)
    stream = drv.Stream()
    f(alloc, np.int32(6), block=[64], grid=(3, 2, 2), stream=stream, shared=256)
    launch = fake.last_launch()
    assert launch.grid == (3, 2, 2) and launch.block == (64, 1, 1)
    assert launch.stream == stream.handle and launch.shared_bytes == 256


def test_call_passes_structs_and_arrays_by_value(mod, fake):
    f = mod.get_function("int_vec4")
    vec = np.array((1.5, 2.5, 3.5, 4.5), VEC4)  # a 0-d array, like PyCUDA's vec.make_float4
    f(np.int32(3), vec, block=(1,))
    params = fake.last_launch().params
    assert params[:4] == struct.pack("@i", 3) and params[16:] == vec.tobytes()
    f(np.int32(4), vec[()], block=(1,))  # np.void
    assert fake.last_launch().params[16:] == vec.tobytes()
    f(np.int32(5), np.array([1, 2, 3, 4], np.float32), block=(1,))  # plain array: its bytes
    assert fake.last_launch().params[16:] == np.array([1, 2, 3, 4], np.float32).tobytes()
    g = mod.get_function("vec3")
    v3 = np.array((1, 2, 3), VEC3)
    g(v3, block=(1,))
    assert fake.last_launch().params == v3.tobytes()


def test_call_pointer_kinds(mod, fake, alloc):
    f = mod.get_function("one_ptr")

    class HasGpudata:
        def __init__(self, gpudata):
            self.gpudata = gpudata

    class HasInterface:
        def __init__(self, ptr):
            self.__cuda_array_interface__ = {
                "data": (ptr, False),
                "shape": (1,),
                "typestr": "<f4",
                "version": 3,
            }

    class Holder(drv.PointerHolderBase):
        def get_pointer(self):
            return int(alloc) + 64

    from cuplug import gpuarray

    class OnlyDLPack:  # a device array that speaks DLPack alone (JAX's arrays do)
        def __init__(self, array):
            self._array = array

        def __dlpack__(self, **kwargs):
            return self._array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self._array.__dlpack_device__()

    managed = drv.managed_empty((4,), np.float32)
    pooled = drv.DeviceMemoryPool().allocate(64)
    array = gpuarray.empty(16, np.float32)
    cases = [
        (array, int(array.gpudata)),
        (array[4:], int(array.gpudata) + 16),
        (OnlyDLPack(array[2:]), int(array.gpudata) + 8),
        (alloc, int(alloc)),
        (HasGpudata(alloc), int(alloc)),
        (HasGpudata(int(alloc) + 8), int(alloc) + 8),
        (HasInterface(int(alloc) + 32), int(alloc) + 32),
        (managed, int(managed.base)),
        (pooled, int(pooled)),
        (Holder(), int(alloc) + 64),
    ]
    g = mod.get_function("one_ptr").prepare("P")
    for arg, ptr in cases:
        f(arg, block=(1,))
        assert fake.last_launch().params == struct.pack("@P", ptr), arg
        if isinstance(arg, OnlyDLPack):
            continue  # prepared "P" takes pointers; DLPack needs the launch's stream
        if not isinstance(arg, np.ndarray):  # prepared "P" takes pointers, not host arrays
            g.prepared_call((1,), (1,), arg)
            assert fake.last_launch().params == struct.pack("@P", ptr), arg


def test_call_checks_what_a_cuda_array_interface_says(mod, fake, alloc):
    f = mod.get_function("one_ptr")

    class Interface:
        def __init__(self, **extra):
            self.__cuda_array_interface__ = {
                "data": (int(alloc), False),
                "shape": (4,),
                "typestr": "<f4",
                "version": 3,
                **extra,
            }

    other = drv.Stream()
    f(Interface(stream=other.handle), block=(1,))  # ordered after `other` (an event), launched
    f(Interface(stream=1), block=(1,), stream=other)
    assert fake.last_launch().params == struct.pack("@P", int(alloc))
    count = fake.launch_count()
    with pytest.raises(TypeError, match="parameter #0 .* has a mask"):
        f(Interface(mask=Interface()), block=(1,))
    with pytest.raises(ValueError, match="gives stream 0, which the protocol forbids"):
        f(Interface(stream=0), block=(1,))
    assert fake.launch_count() == count


def test_call_rejects_python_numbers_and_unknown_types(mod, fake, alloc):
    f = mod.get_function("ptr_int")
    with pytest.raises(TypeError, match=r"invalid type on parameter #1 \(0-based\): int"):
        f(alloc, 5, block=(1,))
    with pytest.raises(TypeError, match=r"invalid type on parameter #0 \(0-based\): float"):
        f(1.0, np.int32(1), block=(1,))
    with pytest.raises(TypeError, match=r"invalid type on parameter #0 \(0-based\): str"):
        f("x", np.int32(1), block=(1,))
    with pytest.raises(TypeError, match="numpy type .* has no kernel parameter equivalent"):
        f(alloc, np.datetime64("2020-01-01"), block=(1,))
    assert fake.launch_count() == 0


def test_call_checks_count_and_sizes_before_launching(mod, fake, alloc):
    f = mod.get_function("ptr_int")
    assert f.num_params == 2 and f.param_layout == [(0, 8), (8, 4)]
    with pytest.raises(TypeError, match="kernel 'ptr_int' takes 2 parameters, 1 arguments given"):
        f(alloc, block=(1,))
    with pytest.raises(TypeError, match="kernel 'ptr_int' takes 2 parameters, 3 arguments given"):
        f(alloc, np.int32(1), np.int32(2), block=(1,))
    with pytest.raises(
        TypeError,
        match=r"kernel 'ptr_int' parameter #1 is 4 bytes, but "
        r"numpy.float64 \(format 'd', 8 bytes\) was given",
    ):
        f(alloc, np.float64(1), block=(1,))
    with pytest.raises(TypeError, match=r"parameter #0 is 8 bytes, but a 12-byte .* by value"):
        f(np.zeros(3, np.float32), np.int32(1), block=(1,))
    empty = mod.get_function("nothing")
    assert empty.num_params == 0
    with pytest.raises(TypeError, match="kernel 'nothing' takes 0 parameters, 1 arguments given"):
        empty(np.int32(1), block=(1,))
    empty(block=(1,))
    assert fake.launch_count() == 1 and fake.last_launch().params == b""


def test_call_without_known_layout_packs_like_pycuda(mod, fake):
    f = mod.get_function("int_vec4")
    fake.fail_next("cuFuncGetParamInfo", fakecuda.CUDA_ERROR_NOT_SUPPORTED, count=1000)
    vec = np.array((1, 2, 3, 4), VEC4)
    f(np.int8(1), np.float64(2), vec, block=(1,))  # wrong for this kernel: nothing can tell
    assert fake.last_launch().params == struct.pack("@bd16s", 1, 2.0, vec.tobytes())


def test_call_keyword_errors(mod, fake, alloc):
    f = mod.get_function("ptr_int")
    args = (alloc, np.int32(1))
    with pytest.raises(ValueError, match="must specify block size"):
        f(*args)
    with pytest.raises(ValueError, match="extra keyword arguments: blok"):
        f(*args, blok=(1,))
    with pytest.raises(drv.NotSupportedError, match="texture references"):
        f(*args, block=(1,), texrefs=[object()])
    f(*args, block=(1,), texrefs=[])
    with pytest.raises(AssertionError, match="Can't time the kernel"):
        f(*args, block=(1,), stream=drv.Stream(), time_kernel=True)
    with pytest.raises(ValueError, match="shared must be a number of bytes"):
        f(*args, block=(1,), shared=-1)
    assert fake.launch_count() == 1


@pytest.mark.parametrize(
    "block", [(), (1, 2, 3, 4), (-1,), (1.5, 1, 1), ("a",), 32, None, (2**32,)]
)
def test_invalid_block_is_a_value_error_before_launch(mod, fake, alloc, block):
    f = mod.get_function("ptr_int").prepare("Pi")
    with pytest.raises(ValueError, match="block"):
        f(alloc, np.int32(1), block=block)
    with pytest.raises(ValueError, match="grid"):
        f(alloc, np.int32(1), block=(1,), grid=block if block is not None else "x")
    if isinstance(block, tuple):
        with pytest.raises(ValueError, match="block"):
            f.prepared_call((1,), block, alloc, 1)
    assert fake.launch_count() == 0


def test_device_limits_are_checked_before_launch(mod, fake, alloc):
    f = mod.get_function("ptr_int")
    with pytest.raises(ValueError, match="size 0"):
        f(alloc, np.int32(1), block=(0, 1, 1))
    with pytest.raises(ValueError, match="threads per block"):
        f(alloc, np.int32(1), block=(1024, 2, 1))
    assert fake.launch_count() == 0


def test_time_kernel_returns_seconds(mod, fake, alloc):
    seconds = mod.get_function("ptr_int")(alloc, np.int32(1), block=(1,), time_kernel=True)
    assert isinstance(seconds, float) and seconds >= 0
    assert fake.launch_count() == 1


def test_driver_launch_errors_raise(mod, fake, alloc):
    f = mod.get_function("ptr_int")
    fake.fail_next("cuLaunchKernel", fakecuda.CUDA_ERROR_INVALID_VALUE)
    with pytest.raises(drv.LogicError, match="cuLaunchKernel failed"):
        f(alloc, np.int32(1), block=(1,))
    f(alloc, np.int32(1), block=(1,))  # the process stays usable
    assert fake.launch_count() == 1


# ---- Function object ----------------------------------------------------------------------------


def test_function_attributes_and_aliases(mod):
    f = mod.get_function("ptr_int")
    assert f.num_regs == f.get_attribute(drv.function_attribute.NUM_REGS)
    assert f.max_threads_per_block == f.get_attribute(drv.function_attribute.MAX_THREADS_PER_BLOCK)
    f.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536)
    assert f.max_dynamic_shared_size_bytes == 65536
    f.set_cache_config(drv.func_cache.PREFER_L1)
    with pytest.raises(AttributeError):
        f.no_such_attribute  # noqa: B018
    f.anything = "PyCUDA code stores its own attributes"
    assert f.anything.startswith("PyCUDA")
    assert f.kernel_name == "ptr_int" and f.handle != 0 and f.module is mod
    assert "ptr_int" in repr(f)


def test_function_keeps_its_module_alive(ctx, fake):
    f = drv.module_from_buffer(PTX).get_function("ptr_int")
    gc.collect()
    f(drv.mem_alloc(8), np.int32(1), block=(1,))
    assert fake.last_launch().function == "ptr_int"


def test_pycuda_internal_launch_kernel(mod, fake, alloc):
    f = mod.get_function("ptr_int")
    f._launch_kernel((2, 1), (32, 1, 1), struct.pack("@Pi", int(alloc), 3), 0, None)
    launch = fake.last_launch()
    assert launch.grid == (2, 1, 1) and launch.params == struct.pack("@Pi", int(alloc), 3)


def test_call_through_pyobject_call_and_method(mod, fake, alloc):
    f = mod.get_function("ptr_int")
    kwargs = {"block": (2,), "grid": (3,)}
    f(*(alloc, np.int32(1)), **kwargs)
    drv.Function.__call__(f, alloc, np.int32(2), block=(4,))
    assert fake.launch(1).block == (2, 1, 1) and fake.launch(1).grid == (3, 1, 1)
    assert fake.last_launch().block == (4, 1, 1)


# ---- arguments holding Python objects -----------------------------------------------------------

# 16 bytes, like the by-value parameter of int_vec4, but two object references.
OBJECT_PAIR = np.dtype([("a", object), ("b", object)])


def test_by_value_arguments_never_carry_object_pointers(mod, fake):
    f = mod.get_function("int_vec4")
    pair = np.array((object(), object()), OBJECT_PAIR)
    for value in (pair, pair[()], np.array([object(), object()], dtype=object)):
        with pytest.raises(
            TypeError, match=r"kernel 'int_vec4': parameter #1 \(0-based\) holds Python objects"
        ):
            f(np.int32(1), value, block=(1,))
    g = mod.get_function("int_vec4").prepare("i16s")
    with pytest.raises(TypeError, match=r"argument #1 .* holds Python objects"):
        g.prepared_call((1,), (1,), 1, memoryview(pair))
    with pytest.raises(TypeError, match="_launch_kernel: arg_buf holds Python objects"):
        f._launch_kernel((1,), (1,), np.array([object()] * 4, dtype=object), 0, None)
    assert fake.launch_count() == 0


# ---- launches from threads without a context ----------------------------------------------------


def test_launches_work_from_a_thread_without_a_context(ctx, mod, fake, alloc):
    f = mod.get_function("ptr_int")
    p = mod.get_function("ptr_int").prepare("Pi")
    data = np.arange(4, dtype=np.int32)

    def worker():
        assert drv.Context.get_current() is None
        f(alloc, np.int32(1), block=(1,))
        f(drv.InOut(data), np.int32(4), block=(4,))  # allocates and copies in f's context
        seconds = f(alloc, np.int32(2), block=(2,), time_kernel=True)
        p.prepared_call((1,), (3,), alloc, 3)
        p.prepared_async_call((1,), (4,), None, alloc, 4)
        timer = p.prepared_timed_call((1,), (5,), alloc, 5)
        assert timer() >= 0 and seconds >= 0
        assert f.num_regs >= 0 and f.max_active_blocks_per_multiprocessor(32) > 0
        assert drv.Context.get_current() is None
        return fake.launch_count()

    assert in_thread(worker) == 6
    assert fake.last_launch().block == (5, 1, 1)
    assert np.array_equal(data, np.arange(4))
    assert drv.Context.get_current() == ctx
