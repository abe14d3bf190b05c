"""Issue 26, part A, items 1 and 2 on a real GPU: the constructs that used to write into a
neighbouring array (a count that wraps around 64 bits, a reshape whose product wraps, strides
outside the array's own allocation) are refused, and a canary array on either side keeps its
contents. Before the fix each case wrote into a canary (or faulted); compute-sanitizer memcheck
over this file shows the same."""

from __future__ import annotations

import numpy as np
import pytest

import cuplug.gpuarray as gpuarray
from cuplug.gpuarray import GPUArray

pytestmark = pytest.mark.real_gpu

CANARY = 1 << 14  # elements of uint32: 64 KiB on each side of the victim


def canaries():
    before = gpuarray.to_gpu(np.arange(CANARY, dtype=np.uint32))
    return before, np.arange(CANARY, dtype=np.uint32)


def check(canary_list):
    for array, host in canary_list:
        assert np.array_equal(array.get(), host), "a neighbouring array was overwritten"


def attempt(make, write):
    """make() must be refused; were it not, write(victim, target address) is what damaged the
    neighbour, so the test shows the damage before the fix."""
    before = canaries()
    try:
        victim = make()
    except ValueError:
        victim = None
    after = canaries()
    if victim is not None:
        write(victim, after[0].ptr)
        before[0].get()  # let the kernel finish (or fault) before the checks
    check([before, after])
    assert victim is None, "the construct was accepted"


def test_a_count_that_wraps_does_not_reach_a_neighbour(ctx):
    def write(a, target):
        d = target - a.ptr
        a[d // 4, d % 4] = 0xFF

    attempt(lambda: GPUArray((2**62 + 4, 4), np.uint8), write)


def test_a_count_whose_bytes_wrap_does_not_launch_at_address_0(ctx):
    attempt(lambda: GPUArray(2**62, np.float64), lambda a, target: a.fill(1.0))


def test_a_reshape_whose_product_wraps_does_not_reach_a_neighbour(ctx):
    base = gpuarray.zeros(16, np.uint8)

    def write(a, target):
        a[0, target - a.ptr] = 0xFF

    attempt(lambda: base.reshape(16, 2**60 + 1), write)


@pytest.mark.parametrize("strides", [(4096,), (-4,), (-4096,)], ids=str)
def test_strides_outside_the_own_allocation_do_not_reach_a_neighbour(ctx, strides):
    attempt(
        lambda: GPUArray((4,), np.float32, strides=strides),
        lambda a, target: a.fill(np.float32(-1.0)),
    )


def test_a_view_outside_the_allocation_does_not_reach_a_neighbour(ctx):
    base = gpuarray.zeros(4, np.uint32)

    def write(a, target):
        a.fill(np.uint32(0xFFFFFFFF))

    attempt(lambda: base._view((4,), (CANARY,), 0), write)
