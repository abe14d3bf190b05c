"""Kernel launch through prepare / prepared_call / prepared_async_call / prepared_timed_call:
every format code packed at the kernel's offsets (checked against the parameter bytes the fake
driver records), prepare's format rules and the errors of prepared calls. Function.__call__:
test_launch.py."""

import struct
import warnings

import numpy as np
import pytest
from support import fakecuda
from support.launch_kernels import ALL_CODES, ALL_VALUES, NUMPY_TYPES, VEC4, expected_params

import cuplug.driver as drv

pytestmark = pytest.mark.gpu


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
