"""GPUArray's memory against the fake CUDA driver: arrays of another context or of freed memory
refused, nothing left behind by a failure, out-of-memory retried, the allocators (results made
with the one given), array pools and compiled kernels per context (a new context that reuses a
destroyed one's handle included). Launches and transfers: test_fake_arrays.py."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import cuplug
import cuplug.driver as drv
from cuplug import _core
from cuplug._array.math import kernel_for
from cuplug.gpuarray import GPUArray

pytestmark = pytest.mark.gpu

CUDA_ERROR_OUT_OF_MEMORY = 2


def test_mixing_contexts_is_refused(env):
    gpuarray, _ = env
    x = gpuarray.zeros((4,), np.float32)
    other = drv.Device(0).make_context()
    try:
        with pytest.raises(
            ValueError,
            match=r"belongs to device 0 \(context .*, but the current context is another context "
            r"of the same device",
        ):
            x * 2
    finally:
        drv.Context.pop()
        other.detach()


def test_freed_memory_is_refused(env):
    gpuarray, _ = env
    x = GPUArray((4,), np.float32, allocator=drv.mem_alloc)
    x.gpudata.free()
    with pytest.raises(drv.LogicError, match="freed"):
        x * 2


def test_failures_leave_nothing_behind(env):
    gpuarray, fake = env
    with cuplug.using(allocator="device"):
        a = gpuarray.zeros((3, 4), np.float32)
        b = gpuarray.zeros((5,), np.float32)
        gc.collect()
        before = fake.live_allocations()
        with pytest.raises(ValueError, match=r"\(3, 4\) float32 and \(5,\) float32"):
            a + b
        with pytest.raises(ValueError):
            gpuarray.minimum(a, b)
        gc.collect()
        assert fake.live_allocations() == before


def test_out_of_memory_collects_and_retries_then_names_the_size(env):
    gpuarray, fake = env
    with cuplug.using(allocator="device"):
        fake.fail_next("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY, 1)
        x = gpuarray.empty((1000,), np.float32)  # the retry succeeds
        assert x.nbytes == 4000
        fake.fail_next("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY, 2)
        with pytest.raises(drv.MemoryError, match="4000"):
            gpuarray.empty((1000,), np.float32)


def test_allocators(env):
    gpuarray, _ = env
    assert _core._array.allocator_name() == "pool"
    with cuplug.using(allocator="device"):
        assert _core._array.allocator_name() == "device"
    calls = []

    def alloc(nbytes):
        calls.append(nbytes)
        return drv.mem_alloc(nbytes)

    x = GPUArray((10,), np.float32, allocator=alloc)
    y = x * 2
    assert calls == [40, 40] and y.allocator is alloc
    assert x.copy().allocator is alloc
    assert gpuarray.empty_like(x).allocator is alloc


def test_logical_functions_allocate_their_result_with_the_allocator_given(env):
    gpuarray, _ = env
    calls = []

    def alloc(nbytes):
        calls.append(nbytes)
        return drv.mem_alloc(nbytes)

    x = gpuarray.zeros((2, 5), np.float32)
    for r in (
        gpuarray.logical_and(x, 1.0, allocator=alloc),
        gpuarray.logical_or(x, x[0], allocator=alloc),
        gpuarray.logical_xor(0, x, allocator=alloc),
        gpuarray.logical_not(x, allocator=alloc),
    ):
        assert r.allocator is alloc and r.shape == (2, 5) and r.dtype == np.bool_
    assert calls == [10, 10, 10, 10]
    with pytest.raises(ValueError, match=r"\(2, 5\) float32 and \(3,\) float32"):
        gpuarray.logical_and(x, gpuarray.zeros((3,), np.float32), allocator=alloc)
    assert len(calls) == 4


def test_clear_context_caches_drops_compiled_kernels(env):
    gpuarray, _ = env
    from cuplug import tools

    x = gpuarray.zeros((3,), np.float32)
    x * 5.0
    kernel = kernel_for("multiply", (np.dtype(np.float32), float))
    assert kernel.core.cached_layouts >= 1
    tools.clear_context_caches()
    assert kernel.core.cached_layouts == 0
    x * 5.0  # compiled (or taken from the compile cache) again
    assert kernel.core.cached_layouts == 1


def test_a_new_context_with_a_destroyed_ones_handle_loads_kernels_again(env):
    """The driver often gives a new context a destroyed one's handle: kernels cached for the
    old one (keyed by that handle) are gone with its modules and must be loaded again."""
    gpuarray, fake = env
    fake.reuse_context_handles()
    try:
        first = drv.Device(0).make_context()
        try:
            x = gpuarray.zeros((3,), np.float32)
            x * 5.0
            del x
            gc.collect()
        finally:
            drv.Context.pop()
            first_handle = first.handle
            first.detach()
        second = drv.Device(0).make_context()
        try:
            assert second.handle == first_handle  # what the test is about
            fake.clear_launches()
            y = gpuarray.zeros((3,), np.float32) * 5.0
            assert fake.last_launch().function.startswith("cuplug_multiply")
            del y
            gc.collect()
        finally:
            drv.Context.pop()
            second.detach()
    finally:
        fake.reuse_context_handles(False)
    assert fake.take_undefined_behaviour() == []


def test_array_pools_are_per_context(env):
    gpuarray, fake = env
    other = drv.Device(0).make_context()
    try:
        x = gpuarray.zeros((100,), np.float32)
        dead_ptr = x.ptr
        del x  # its block goes back to this context's pool
        gc.collect()
    finally:
        drv.Context.pop()
        other.detach()  # destroys the context and its memory
    # The test's own context must not be handed the destroyed context's block.
    y = gpuarray.to_gpu(np.arange(100, dtype=np.float32))
    assert y._context_handle == drv.Context.get_current().handle
    np.testing.assert_array_equal(y.get(), np.arange(100, dtype=np.float32))
    assert y.ptr != dead_ptr or fake.take_undefined_behaviour() == []
