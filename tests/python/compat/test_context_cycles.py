"""Contexts made and destroyed one after another, as PyCUDA's own tests do (a fresh context per
test), under the fake driver (issue 24): what cuplug caches per context (compiled
elementwise / reduction / scan kernels, axis-reduction plans, rng generators and their modules,
array pools) goes with its context, so the caches do not grow, and nothing made in a dead
context is used again, even when the driver gives the next context the dead one's handle (the
fake reports any use of a destroyed object: the autouse _no_undefined_behaviour fixture)."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import numpy as np
import pytest

import cuplug
import cuplug.driver as drv
from cuplug import _core, curandom, gpuarray
from cuplug._driver import context_cache
from cuplug.elementwise import ElementwiseKernel
from cuplug.reduction import ReductionKernel
from cuplug.scan import InclusiveScanKernel

pytestmark = pytest.mark.gpu

CYCLES = 100


@pytest.fixture
def fresh_contexts(driver_mode, fake):
    """The fake gives each new context the handle of the last destroyed one (as the real driver
    often does); nothing else is current."""
    drv.init()
    assert drv.Context.get_current() is None
    fake.reuse_context_handles()
    try:
        with cuplug.using(rng="philox"):  # cuRAND needs the CUDA runtime: not under the fake
            yield
    finally:
        fake.reuse_context_handles(False)


def _work(scale, total, scan):
    """What one PyCUDA test does in its context: rand, an elementwise kernel, operators, a
    reduction (whole-array and along an axis), a ReductionKernel, a scan, pool allocations."""
    x = curandom.rand((1000,), np.float32)
    scale(x, 2.0)
    y = x * 2 + 1
    gpuarray.sum(y)
    y.reshape(10, 100).sum(axis=1)
    total(x)
    scan(y)
    pooled = [gpuarray.empty((256,), np.float64) for _ in range(3)]
    del pooled
    return x


def _generators():
    """The rng generator objects cuplug holds (all contexts)."""
    found = []
    for entries in list(context_cache._by_context.values()):
        for key, value in entries.items():
            if key == ("weak", "rng"):
                found += [slot["generator"] for slot in value.values()]
    return found


def test_a_hundred_contexts_leave_no_cached_objects_behind(fresh_contexts, fake):
    from cuplug import tools

    @tools.context_dependent_memoize
    def made_here(n):
        return gpuarray.zeros((n,), np.float32)  # memory of the context: must not outlive it

    contexts, pools = context_cache.context_count(), _core._array.pool_count()
    allocations = fake.live_allocations()
    handles, dead, memoized = set(), [], []
    for cycle in range(CYCLES):
        ctx = drv.Device(0).make_context()
        handles.add(ctx.handle)
        try:
            if cycle == 0:  # made once, used in every context (ReductionKernel compiles now)
                scale = ElementwiseKernel("float *x, float a", "x[i] = a * x[i]", "scale")
                total = ReductionKernel(np.float32, "0", "a+b", arguments="const float *x")
                scan = InclusiveScanKernel(np.float32, "a+b")
            fake.clear_launches()
            x = _work(scale, total, scan)
            assert fake.launch_count() > 5, "the work launched nothing"
            assert context_cache.context_count() == contexts + 1
            assert _core._array.pool_count() == pools + 1
            gens = _generators()
            assert len(gens) == 1, f"cycle {cycle}: {len(gens)} rng generators"
            dead.append(weakref.ref(gens[0]))
            assert made_here(16) is made_here(16)
            memoized.append(weakref.ref(made_here(16)))
            del gens, x
        finally:
            drv.Context.pop()
            ctx.detach()
        # Everything made in it went with it, before it was destroyed.
        assert context_cache.context_count() == contexts, f"cycle {cycle}"
        assert _core._array.pool_count() == pools, f"cycle {cycle}"
        assert scale._engine_kernel().core.cached_layouts == 0, f"cycle {cycle}"
        gc.collect()
        assert dead[-1]() is None, f"cycle {cycle}: the rng generator outlived its context"
        assert memoized[-1]() is None, f"cycle {cycle}: a memoized result outlived its context"
    assert len(handles) < CYCLES, "the fake gave every context a new handle: nothing was tested"
    assert fake.live_allocations() == allocations
    assert fake.take_undefined_behaviour() == []


def test_a_new_context_at_a_dead_ones_handle_is_a_new_cache_entry(fresh_contexts):
    first = drv.Device(0).make_context()
    key = first._cache_key
    context_cache.entries(first)["probe"] = object()
    drv.Context.pop()
    first.detach()
    second = drv.Device(0).make_context()
    try:
        assert second.handle == key[0]  # the fake gave it the dead one's handle
        assert second._cache_key != key
        assert "probe" not in context_cache.entries(second)
    finally:
        drv.Context.pop()
        second.detach()


def _engine_entries(found: dict) -> set[str]:
    """Which engines have entries in a context's dict of the per-context cache."""
    names = {
        ("weak", "ElementwiseKernel range"): "elementwise range",
        ("weak", "ReductionKernel"): "ReductionKernel",
        ("weak", "scan"): "scan",
        "axis plans": "axis plans",
    }
    engines = {names[key] for key in found if key in names}
    engines |= {
        key[0] for key in found if isinstance(key, tuple) and key[0] in ("axis fn", "module")
    }
    assert "module" not in engines, "SourceModules load a module each (PyCUDA's way), uncached"
    return engines - {"module"}


ENGINES = {"elementwise range", "ReductionKernel", "scan", "axis plans", "axis fn"}


def test_every_engine_caches_in_the_one_per_context_cache(fresh_contexts):
    """The engines of cuplug._kernels (ElementwiseKernel's range kernels, ReductionKernel, scans,
    axis-reduction plans and kernels) keep what they make in the context's dict of
    cuplug._driver.context_cache (a SourceModule's own module is not cached: each loads its own),
    and all of it goes when the context is destroyed: a new context at the dead one's handle
    starts with none of it, and makes it again."""
    scale = ElementwiseKernel("float *x, float a", "x[i] = a * x[i]", "scale_range")
    scan = key = None
    for _ in range(2):
        ctx = drv.Device(0).make_context()
        try:
            assert key is None or ctx.handle == key[0]  # the fake reuses the dead one's handle
            found = context_cache.entries(ctx)
            assert _engine_entries(found) == set()
            if scan is None:  # made once (it compiles now), used in both contexts
                scan = InclusiveScanKernel(np.float32, "a+b")
            x = gpuarray.zeros((64,), np.float32)
            scale(x, 2.0, slice=slice(0, 32))
            ReductionKernel(np.float32, "0", "a+b", arguments="const float *x")(x)
            scan(x)
            x.reshape(8, 8).sum(axis=1)
            assert _engine_entries(found) == ENGINES
            key = ctx._cache_key
        finally:
            drv.Context.pop()
            ctx.detach()
        assert key not in context_cache._by_context
        assert _engine_entries(found) == set(), "dropped, not just forgotten"


def test_clear_context_caches_empties_the_cache(fresh_contexts):
    from cuplug import tools

    ctx = drv.Device(0).make_context()
    try:
        _work(
            ElementwiseKernel("float *x, float a", "x[i] = a * x[i]", "scale"),
            ReductionKernel(np.float32, "0", "a+b", arguments="const float *x"),
            InclusiveScanKernel(np.float32, "a+b"),
        )
        assert context_cache.entry_count() > 0
        tools.clear_context_caches()
        assert context_cache.entry_count() == 0
        assert _core._array.pool_count() == 0
        _work(  # and everything is made again
            ElementwiseKernel("float *x, float a", "x[i] = a * x[i]", "scale"),
            ReductionKernel(np.float32, "0", "a+b", arguments="const float *x"),
            InclusiveScanKernel(np.float32, "a+b"),
        )
    finally:
        drv.Context.pop()
        ctx.detach()


def test_peer_access_is_enabled_again_for_a_new_context_at_a_dead_ones_handle(fresh_contexts, fake):
    from cuplug._driver import peer as _peer

    if drv.Device.count() < 2:
        pytest.skip("needs two devices")
    other = drv.Device(1).make_context()
    drv.Context.pop()
    first = drv.Device(0).make_context()
    drv.Context.pop()
    try:
        assert _peer.peer_access(first, other) and fake.peer_enabled(first.handle, other.handle)
        handle = first.handle
        first.detach()
        second = drv.Device(0).make_context()
        drv.Context.pop()
        try:
            assert second.handle == handle and not fake.peer_enabled(handle, other.handle)
            assert _peer.peer_access(second, other)
            assert fake.peer_enabled(handle, other.handle)  # enabled for the new one itself
        finally:
            second.detach()
    finally:
        other.detach()


def run_alone(script, last_word, folder):
    """Runs `script` in a Python of its own (an abort or a hang there must not take the test
    run with it); it must exit 0 having printed `last_word`."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
    )
    assert done.returncode == 0 and last_word in done.stdout, done.stdout + done.stderr


CLEAR_AFTER_POPPED_CONTEXTS = """
import gc
import numpy as np
import cuplug.driver as drv
from cuplug import gpuarray, tools
drv.init()
for _ in range(3):
    ctx = drv.Device(0).make_context()
    a = gpuarray.zeros(64, np.float32)  # a pool block: the array pool holds the context
    b = a + 1  # an elementwise kernel: its module holds the context too
    del a, b
    ctx.pop()  # popped, never detached: the caches hold the last references
    del ctx
    gc.collect()
tools.clear_context_caches()
print("cleared")
"""


def test_clearing_caches_that_hold_the_last_reference_to_their_contexts(tmp_path):
    # Clearing the array pools and elementwise kernels destroys such a context, whose destroy
    # listeners walk those same caches: they used to be mid-loop ("double free or corruption",
    # the process aborted).
    run_alone(CLEAR_AFTER_POPPED_CONTEXTS, "cleared", tmp_path)


COLLECTION_WHILE_THE_CACHE_WORKS = """
import gc
import cuplug.driver as drv
from cuplug._driver import context_cache


class CollectingDict(dict):
    # A garbage collection at the moment the cache makes a context's entry, as any allocation
    # there can start one.
    def setdefault(self, key, default=None):
        gc.collect()
        return super().setdefault(key, default)


class Cycle:
    pass


drv.init()
context_cache._by_context = CollectingDict(context_cache._by_context)
dying = drv.Device(0).make_context()
context_cache.entries(dying)["x"] = 1
drv.Context.pop()
cycle = Cycle()
cycle.me, cycle.ctx = cycle, dying  # only the cycle keeps it: the collection destroys it
del cycle, dying
fresh = drv.Device(0).make_context()
context_cache.entries(fresh)  # collects inside; the destroyed context's drop runs there
drv.Context.pop()
fresh.detach()
print("done", context_cache.context_count())
"""


def test_a_context_destroyed_by_a_collection_inside_the_cache_is_dropped(tmp_path):
    # drop() runs whenever a context dies, also from a collection started inside the cache's
    # own work; it used to wait there for a lock its own thread held, forever (a test process
    # on the GPU machine hung at exit so).
    run_alone(COLLECTION_WHILE_THE_CACHE_WORKS, "done", tmp_path)
