"""Kernel launch with In / Out / InOut arguments: the copies before and after the launch, and
every argument checked before anything is allocated, copied or launched. Function.__call__:
test_launch.py."""

import struct

import numpy as np
import pytest
from support import fakecuda

import cuplug.driver as drv

pytestmark = pytest.mark.gpu


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
