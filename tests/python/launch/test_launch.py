"""Kernel launch: Function.__call__'s type dispatch, prepare / prepared_*call, argument packing
(checked against the parameter bytes the fake driver records), In/Out/InOut, geometry checks.
A kernel that runs: test_launch_run_gpu.py."""

import gc
import struct
import warnings

import numpy as np
import pytest
from support import fakecuda
from support.threads import in_thread

import cuplug.driver as drv

pytestmark = pytest.mark.gpu

PTX = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry ptr_int(.param .u64 p, .param .u32 n) { ret; }
.visible .entry nothing() { ret; }
.visible .entry int_vec4(.param .s32 a, .param .align 16 .b8 v[16]) { ret; }
.visible .entry vec3(.param .align 4 .b8 v[12]) { ret; }
.visible .entry one_ptr(.param .u64 p) { ret; }
.visible .entry one_double(.param .f64 d) { ret; }
.visible .entry all_types(
    .param .s8 p_b, .param .u8 p_B, .param .s16 p_h, .param .u16 p_H,
    .param .s32 p_i, .param .u32 p_I, .param .s64 p_l, .param .u64 p_L,
    .param .s64 p_q, .param .u64 p_Q, .param .b16 p_e, .param .f32 p_f,
    .param .f64 p_d, .param .align 4 .b8 p_F[8], .param .align 8 .b8 p_D[16],
    .param .u8 p_bool, .param .u64 p_P, .param .s64 p_n, .param .u64 p_N, .param .b8 p_c)
{ ret; }
"""

ALL_CODES = "bBhHiIlLqQefdFD?PnNc"
ALL_VALUES = [
    -5,
    250,
    -30000,
    60000,
    -(2**31),
    2**32 - 1,
    -(2**63),
    2**64 - 1,
    -(2**62),
    2**63,
    1.5,
    0.25,
    -2.5,
    1 + 2j,
    3 - 4j,
    True,
    0xDEADBEEF000,
    -7,
    2**40,
    b"x",
]
NUMPY_TYPES = {
    "b": np.int8,
    "B": np.uint8,
    "h": np.int16,
    "H": np.uint16,
    "i": np.int32,
    "I": np.uint32,
    "l": np.int64,
    "L": np.uint64,
    "q": np.longlong,
    "Q": np.ulonglong,
    "e": np.float16,
    "f": np.float32,
    "d": np.float64,
    "F": np.complex64,
    "D": np.complex128,
    "?": np.bool_,
}
VEC4 = np.dtype([("x", "f4"), ("y", "f4"), ("z", "f4"), ("w", "f4")])
VEC3 = np.dtype([("x", "f4"), ("y", "f4"), ("z", "f4")])


def value_bytes(code, value):
    if code in "FD":
        return np.array(value, NUMPY_TYPES[code]).tobytes()
    return struct.pack("@" + code, value)


def expected_params(function, codes, values):
    """The parameter buffer laid out at the kernel's own offsets."""
    layout = function.param_layout
    out = bytearray(max(offset + size for offset, size in layout))
    for (offset, size), code, value in zip(layout, codes, values):
        part = value_bytes(code, value)
        assert len(part) == size
        out[offset : offset + size] = part
    return bytes(out)


@pytest.fixture
def mod(ctx):
    return drv.module_from_buffer(PTX)


@pytest.fixture
def alloc(ctx):
    return drv.mem_alloc(256)


# ---- prepared calls: every format code ----------------------------------------------------------


def test_prepared_packs_every_code_at_the_kernels_offsets(mod, fake):
    f = mod.get_function("all_types").prepare(ALL_CODES)
    assert f.arg_format == ALL_CODES
    f.prepared_call((2, 3), (4, 5, 6), *ALL_VALUES, shared_size=128)
    launch = fake.last_launch()
    assert launch.function == "all_types"
    assert launch.grid == (2, 3, 1) and launch.block == (4, 5, 6)
    assert launch.shared_bytes == 128 and launch.stream == 0
    assert launch.params == expected_params(f, ALL_CODES, ALL_VALUES)


def test_prepared_takes_numpy_scalars_for_every_numeric_code(mod, fake):
    f = mod.get_function("all_types").prepare(ALL_CODES)
    args = [NUMPY_TYPES[c](v) if c in NUMPY_TYPES else v for c, v in zip(ALL_CODES, ALL_VALUES)]
    f.prepared_call((1,), (1,), *args)
    assert fake.last_launch().params == expected_params(f, ALL_CODES, ALL_VALUES)


def test_prepared_converts_between_numeric_kinds(mod, fake):
    f = mod.get_function("ptr_int").prepare("Pi")
    f.prepared_call((1,), (32,), np.uint64(4096), np.int64(-3))
    assert fake.last_launch().params == struct.pack("@Pi", 4096, -3)
    g = mod.get_function("one_double").prepare("d")
    for value in (np.float32(0.5), 7, np.int16(-2), True):
        g.prepared_call((1,), (1,), value)
        assert fake.last_launch().params == struct.pack("@d", float(value))


def test_prepared_pointer_accepts_allocations_and_array_objects(mod, fake, alloc):
    f = mod.get_function("one_ptr").prepare("P")

    class HasGpudata:
        gpudata = alloc

    class HasInterface:
        __cuda_array_interface__ = {
            "data": (int(alloc) + 16, False),
            "shape": (4,),
            "typestr": "<f4",
            "version": 3,
        }

    for arg, ptr in (
        (alloc, int(alloc)),
        (int(alloc), int(alloc)),
        (HasGpudata(), int(alloc)),
        (HasInterface(), int(alloc) + 16),
        (0, 0),
    ):
        f.prepared_call((1,), (1,), arg)
        assert fake.last_launch().params == struct.pack("@P", ptr)


def test_prepared_async_call_uses_the_stream(mod, fake, alloc):
    stream = drv.Stream()
    f = mod.get_function("ptr_int").prepare([np.intp, np.int32])
    f.prepared_async_call((3,), (64,), stream, alloc, 9, shared_size=16)
    launch = fake.last_launch()
    assert launch.stream == stream.handle and launch.shared_bytes == 16
    assert launch.params == struct.pack("@li", int(alloc), 9)
    f.prepared_async_call((3,), (64,), None, alloc, 9)
    assert fake.last_launch().stream == 0


def test_prepared_timed_call_returns_seconds(mod, fake, alloc):
    f = mod.get_function("ptr_int").prepare("Pi")
    timer = f.prepared_timed_call((1,), (32,), alloc, 1)
    assert fake.launch_count() == 1
    seconds = timer()
    assert isinstance(seconds, float) and seconds >= 0


def test_old_signature_warns_and_reuses_the_last_block(mod, fake, alloc):
    f = mod.get_function("ptr_int").prepare("Pi")
    with pytest.raises(ValueError, match="must specify block size"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            f.prepared_call((1,), alloc, 5)
    assert fake.launch_count() == 0
    f.prepared_call((1,), (128, 2), alloc, 5)
    with pytest.warns(DeprecationWarning, match="Not passing the block size to prepared_call"):
        f.prepared_call((4,), alloc, 6)
    launch = fake.last_launch()
    assert launch.block == (128, 2, 1) and launch.grid == (4, 1, 1)
    assert launch.params == struct.pack("@Pi", int(alloc), 6)
    stream = drv.Stream()
    with pytest.warns(DeprecationWarning, match="prepared_async_call"):
        f.prepared_async_call((2,), stream, alloc, 7)
    assert fake.last_launch().stream == stream.handle


def test_block_as_list_is_a_block_not_the_old_signature(mod, fake, alloc):
    f = mod.get_function("ptr_int").prepare("Pi")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f.prepared_call([2, 2], [8, 4, 2], alloc, 1)
    assert fake.last_launch().block == (8, 4, 2)


# ---- prepare ------------------------------------------------------------------------------------


def test_prepare_sets_arg_format_and_returns_self(mod):
    f = mod.get_function("ptr_int")
    assert f.prepare([np.uintp, np.int32]) is f
    assert f.arg_format == np.dtype(np.uintp).char + "i"
    assert f.texrefs == []
    f.arg_format = "Pi"
    assert f.arg_format == "Pi"


@pytest.mark.parametrize(
    "arg_types, format_",
    [
        ([np.float32, np.dtype(np.float64), np.int32], "fdi"),
        ([np.intp, object, None], np.dtype(np.intp).char + "PP"),
        ([np.bool_, np.float16, np.complex64], "?eF"),
        (["i", VEC4], "i16s"),
        ("PPi", "PPi"),
    ],
)
def test_prepare_item_rules(mod, fake, arg_types, format_):
    # A kernel whose layout is unknown, so that any format is accepted.
    f = mod.get_function("nothing")
    fake.fail_next("cuFuncGetParamInfo", fakecuda.CUDA_ERROR_NOT_SUPPORTED, count=1000)
    f.prepare(arg_types)
    assert f.arg_format == format_


def test_prepare_checks_the_format_against_the_kernel(mod, fake):
    f = mod.get_function("ptr_int")
    with pytest.raises(
        TypeError,
        match=r"format 'P' has 1 arguments, but kernel 'ptr_int' "
        r"takes 2 parameters",
    ):
        f.prepare("P")
    with pytest.raises(
        TypeError,
        match=r"kernel 'ptr_int' parameter #1 is 4 bytes, but format "
        r"code 'd' packs 8 bytes",
    ):
        f.prepare([np.intp, np.float64])
    with pytest.raises(TypeError, match="parameter #1 is 4 bytes"):
        f.arg_format = "Pq"
    with pytest.raises(ValueError, match="bad char 'Z'"):
        f.prepare("PZ")
    with pytest.raises(ValueError, match="native byte order"):
        f.prepare("<Pi")
    with pytest.raises(AttributeError, match="arg_format"):
        f.arg_format  # noqa: B018 - nothing was prepared
    with pytest.raises(AttributeError, match="call prepare"):
        f.prepared_call((1,), (1,), 0, 0)
    assert fake.launch_count() == 0


def test_prepare_rejects_texrefs(mod):
    with pytest.raises(drv.NotSupportedError, match="CUDA 12"):
        mod.get_function("ptr_int").prepare("Pi", texrefs=[object()])


def test_prepared_struct_goes_to_the_kernels_aligned_offset(mod, fake):
    f = mod.get_function("int_vec4").prepare(["i", VEC4])
    vec = np.array((1.0, 2.0, 3.0, 4.0), VEC4)
    f.prepared_call((1,), (1,), 7, vec)
    params = fake.last_launch().params
    assert len(params) == 32
    assert params[:4] == struct.pack("@i", 7) and params[4:16] == bytes(12)
    assert params[16:] == vec.tobytes()


def test_unknown_layout_packs_like_struct(mod, fake):
    f = mod.get_function("int_vec4")
    fake.fail_next("cuFuncGetParamInfo", fakecuda.CUDA_ERROR_NOT_SUPPORTED, count=1000)
    f.prepare("i16s")
    assert f.num_params is None and f.param_layout is None
    vec = np.array((1.0, 2.0, 3.0, 4.0), VEC4)
    f.prepared_call((1,), (1,), 7, vec.tobytes())
    # 20 bytes where the kernel expects 32: the driver (and the fake) take a short buffer
    assert fake.last_launch().params == struct.pack("@i16s", 7, vec.tobytes()) + bytes(12)


def test_prepared_call_errors_name_kernel_and_argument(mod, fake, alloc):
    f = mod.get_function("ptr_int").prepare("Pi")
    with pytest.raises(
        TypeError,
        match=r"kernel 'ptr_int' was prepared with format 'Pi' "
        r"\(2 arguments\), got 1 arguments",
    ):
        f.prepared_call((1,), (1,), alloc)
    with pytest.raises(
        OverflowError,
        match=r"argument #1 of kernel 'ptr_int' \(format 'i'\): "
        r"2147483648 is out of range",
    ):
        f.prepared_call((1,), (1,), alloc, 2**31)
    with pytest.raises(TypeError, match=r"argument #1 .*expected an integer, got float"):
        f.prepared_call((1,), (1,), alloc, 1.5)
    with pytest.raises(TypeError, match=r"argument #1 .*expected an integer, got numpy.float32"):
        f.prepared_call((1,), (1,), alloc, np.float32(1))
    with pytest.raises(OverflowError, match="device pointer cannot be negative"):
        f.prepared_call((1,), (1,), -1, 1)
    with pytest.raises(TypeError, match=r"argument #0 of kernel 'ptr_int' \(format 'P'\)"):
        f.prepared_call((1,), (1,), "not a pointer", 1)
    with pytest.raises(TypeError, match="unknown keyword arguments: shared"):
        f.prepared_call((1,), (1,), alloc, 1, shared=4)
    v = mod.get_function("vec3").prepare("12s")
    with pytest.raises(TypeError, match="16 bytes do not fit in 12"):
        v.prepared_call((1,), (1,), bytes(16))
    v.prepared_call((1,), (1,), b"abc")  # shorter: zero-padded, as PyCUDA
    assert fake.last_launch().params == b"abc" + bytes(9)
    assert fake.launch_count() == 1


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


# ---- In / Out / InOut ---------------------------------------------------------------------------


def test_in_copies_to_a_new_allocation_before_the_launch(mod, fake):
    host = np.arange(16, dtype=np.float32)
    handler = drv.In(host)
    mod.get_function("ptr_int")(handler, np.int32(16), block=(16,))
    (ptr,) = struct.unpack_from("@P", fake.last_launch().params)
    assert ptr == int(handler.dev_alloc)
    assert np.array_equal(drv.from_device(ptr, (16,), np.float32), host)


def test_out_copies_back_after_the_launch(mod, fake):
    result = np.zeros(8, np.int32)
    handler = drv.Out(result)
    handler.dev_alloc = drv.to_device(np.arange(8, dtype=np.int32))  # what the kernel "wrote"
    mod.get_function("ptr_int")(handler, np.int32(8), block=(8,))
    assert np.array_equal(result, np.arange(8))
    assert struct.unpack_from("@P", fake.last_launch().params)[0] == int(handler.dev_alloc)


def test_inout_round_trips_and_out_with_stream(mod, fake):
    data = np.arange(4, dtype=np.float64)
    f = mod.get_function("ptr_int")
    f(drv.InOut(data), np.int32(4), block=(4,))
    assert np.array_equal(data, np.arange(4))
    result = np.zeros(4, np.float64)
    handler = drv.Out(result)
    handler.dev_alloc = drv.to_device(np.full(4, 2.5))
    stream = drv.Stream()
    f(handler, np.int32(4), block=(4,), stream=stream)
    assert fake.last_launch().stream == stream.handle
    assert np.array_equal(result, np.full(4, 2.5))


def test_argument_handler_rejects_non_arrays(mod, fake):
    with pytest.raises(TypeError, match="could not determine array length"):
        mod.get_function("ptr_int")(drv.In([1, 2, 3]), np.int32(3), block=(1,))
    assert fake.launch_count() == 0


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


# ---- In / Out / InOut: every argument is checked before anything happens ------------------------


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda: drv.Out(np.zeros((4, 4), np.float32)[:, ::2]),
            r"Out: the array must be a writable contiguous",
        ),
        (
            lambda: drv.InOut(np.zeros((4, 4), np.float32)[:, ::2]),
            r"InOut: the array must be a writable contiguous",
        ),
        (lambda: drv.In(np.zeros((4, 4), np.float32)[::2]), r"In: the array must be a contiguous"),
        (
            lambda: drv.InOut(np.frombuffer(bytes(16), np.float32)),
            r"InOut: the array must be a writable",
        ),
        (
            lambda: drv.Out(np.array([object()] * 4, dtype=object)),
            r"Out: the array holds Python objects",
        ),
        (
            lambda: drv.In(np.array([object()] * 4, dtype=object)),
            r"In: the array holds Python objects",
        ),
    ],
)
def test_bad_handlers_raise_before_any_allocation_copy_or_launch(mod, fake, make, message):
    f = mod.get_function("int_vec4")
    fake.fail_next("cuFuncGetParamInfo", fakecuda.CUDA_ERROR_NOT_SUPPORTED, count=1000)
    good = drv.InOut(np.arange(4, dtype=np.float32))  # checked first, would allocate and copy
    bad = make()
    allocations = fake.live_allocations()
    with pytest.raises((TypeError, ValueError), match=message):
        f(good, bad, block=(1,))
    assert fake.launch_count() == 0
    assert good.dev_alloc is None and bad.dev_alloc is None
    assert fake.live_allocations() == allocations


def test_handler_check_runs_after_all_arguments_are_classified(mod, fake):
    order = []

    class Recording(drv.In):
        def check(self):
            order.append("check")
            super().check()

        def get_device_alloc(self):
            order.append("alloc")
            return super().get_device_alloc()

    f = mod.get_function("ptr_int")
    with pytest.raises(TypeError, match="invalid type on parameter #1"):
        f(Recording(np.zeros(4, np.int32)), 3, block=(1,))
    assert order == [] and fake.launch_count() == 0
    f(Recording(np.zeros(4, np.int32)), np.int32(4), block=(1,))
    assert order == ["check", "alloc", "alloc"]  # pre_call asks for it again
    assert fake.launch_count() == 1


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
