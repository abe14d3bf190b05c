"""PyCUDA's context-per-test pattern on a GPU (issue 24): 100 times a fresh context with
cuRAND's rand, an elementwise kernel, operators, reductions (whole array, along an axis, a
ReductionKernel), a scan and pool allocations, each result checked against NumPy; then the
context popped and detached. Before the fix the second context's rand failed with
CURAND_STATUS_PREEXISTING_FAILURE (a cuRAND generator destroyed after its context), and every
later cuRAND call of the process too. Afterwards the process is healthy and the device's free
memory is back where it started."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import cuplug.driver as drv
from cuplug import _core, curandom, gpuarray
from cuplug._driver import context_cache
from cuplug.elementwise import ElementwiseKernel
from cuplug.reduction import ReductionKernel
from cuplug.scan import InclusiveScanKernel

pytestmark = pytest.mark.real_gpu

CYCLES = 100


def _one_context(cycle, scale, total, scan):
    x = curandom.rand((1000,), np.float32)
    h = x.get()
    assert 0 <= h.min() and h.max() <= 1 and h.std() > 0.2, f"cycle {cycle}: not uniform"
    scale(x, 2.0)
    h2 = h * np.float32(2)
    np.testing.assert_array_equal(x.get(), h2)
    y = x * 2 + 1
    np.testing.assert_allclose(y.get(), h2 * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(gpuarray.sum(y).get(), (h2 * 2 + 1).sum(), rtol=1e-5)
    np.testing.assert_allclose(
        y.reshape(10, 100).sum(axis=1).get(), (h2 * 2 + 1).reshape(10, 100).sum(axis=1), rtol=1e-5
    )
    np.testing.assert_allclose(total(x).get(), h2.sum(), rtol=1e-5)
    np.testing.assert_allclose(scan(x.copy()).get(), np.cumsum(h2), rtol=1e-4)
    pooled = [gpuarray.zeros((1 << 20,), np.float64) for _ in range(4)]
    assert all(float(p.get().sum()) == 0 for p in pooled)


@pytest.mark.alone  # reads the whole device's free memory
def test_a_hundred_contexts_with_rand_kernels_and_pools_leave_the_process_healthy():
    drv.init()
    scale = ElementwiseKernel("float *x, float a", "x[i] = a * x[i]", "scale")
    # ReductionKernel and InclusiveScanKernel compile when made (as PyCUDA's do): in the first
    # context, and the later contexts load them again from their source.
    total = scan = None
    # The first context's own set-up (runtime, cuRAND's kernels) is not a leak: measure from
    # after one cycle.
    free_before = None
    contexts, pools = context_cache.context_count(), _core._array.pool_count()
    for cycle in range(CYCLES + 1):
        ctx = drv.Device(0).make_context()
        try:
            if total is None:
                total = ReductionKernel(np.float32, "0", "a+b", arguments="const float *x")
                scan = InclusiveScanKernel(np.float32, "a+b")
            _one_context(cycle, scale, total, scan)
        finally:
            drv.Context.pop()
            ctx.detach()
        gc.collect()
        assert context_cache.context_count() == contexts, f"cycle {cycle}"
        assert _core._array.pool_count() == pools, f"cycle {cycle}"
        probe = drv.Device(0).retain_primary_context()
        probe.push()
        try:
            free = drv.mem_get_info()[0]
        finally:
            drv.Context.pop()
            del probe
        if free_before is None:
            free_before = free
    # Contexts come and go; what they held went with them (2 MiB: the driver's own slack).
    assert free >= free_before - (2 << 20), (free_before, free)
    # And the process still works: a last context, cuRAND and all.
    ctx = drv.Device(0).make_context()
    try:
        _one_context(CYCLES + 1, scale, total, scan)
    finally:
        drv.Context.pop()
        ctx.detach()
