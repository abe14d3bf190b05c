"""The C++ side of whole-array reductions called with only the array (``x.sum()``, ``x.max()``):
once Python has planned such a call as one launch, the C++ layer looks the plan up and launches
(python/src/array/reduce_launch.cpp, ``reduce_fast``). Against the fake driver: the launch is
Python's, other calls keep Python's path, the plans go with their context, and bad arrays get
Python's errors. Results on a GPU: test_axis_reductions_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest
from test_axis_reductions import fields


@pytest.mark.gpu
def test_a_call_with_only_the_array_is_launched_from_cpp_with_the_same_parameters(env):
    # x.sum(): Python makes the plan once and hands it to the C++ layer, which then looks it up
    # and launches (no Python key, cache or device check); the launch is the one Python makes.
    gpuarray, fake = env
    from cuplug import _core, tools

    tools.clear_context_caches()
    x, y = gpuarray.zeros((2, 1000), np.float32)  # one layout, addresses 4000 bytes apart
    assert x.ptr % 16 == y.ptr % 16
    fake.clear_launches()
    r1 = x.sum()  # planned in Python
    slow = fake.last_launch()
    assert _core._array.reduce_fast_plans() == 1
    r2 = y.sum()  # through the C++ plan
    fast = fake.last_launch()
    assert fake.launch_count() == 2 and _core._array.reduce_fast_plans() == 1
    assert (fast.function, fast.grid, fast.block) == (slow.function, slow.grid, slow.block)
    f_slow, f_fast = fields(slow), fields(fast)
    assert (f_fast["out"], f_fast["in"]) == (r2.ptr, y.ptr)
    assert {k: v for k, v in f_fast.items() if k not in ("out", "in")} == {
        k: v for k, v in f_slow.items() if k not in ("out", "in")
    }
    assert (type(r2), r2.shape, r2.dtype) == (type(r1), (), np.float32)
    # Calls with other arguments keep Python's path, and add no plan.
    x.sum(dtype=np.float64), x.sum(axis=0), x.sum(keepdims=True), gpuarray.sum(x, stream=None)
    assert _core._array.reduce_fast_plans() == 1
    x.max(), x.var()  # each kind its plan
    assert _core._array.reduce_fast_plans() == 3
    tools.clear_context_caches()
    assert _core._array.reduce_fast_plans() == 0


@pytest.mark.gpu
def test_the_cpp_plans_go_with_their_context_and_refuse_what_python_refuses(env):
    gpuarray, fake = env
    import cuplug.driver as drv
    from cuplug import _core

    before = _core._array.reduce_fast_plans()
    ctx = drv.Device(0).make_context()
    try:
        x = gpuarray.zeros((700,), np.float32)
        x.sum(), x.sum()
        assert _core._array.reduce_fast_plans() == before + 1
        x.gpudata.free()
        with pytest.raises(drv.LogicError, match="freed"):
            x.sum()
    finally:
        drv.Context.pop()
        ctx.detach()
    assert _core._array.reduce_fast_plans() == before  # dropped as the context was destroyed
    if drv.Device.count() < 2:
        return  # the other-device half needs two devices (the fake driver has two by default)
    other = drv.Device(1).make_context()
    try:
        z = gpuarray.zeros((700,), np.float32)
        z.sum()
        drv.Context.pop()
        with pytest.raises(ValueError, match="device"):
            z.sum()  # another device's array: the fast path leaves it to Python's check
        other.push()
    finally:
        drv.Context.pop()
        other.detach()


def test_a_thread_exit_that_destroys_a_context_does_not_wait_for_the_gil(fake):
    # The context-destroy listeners run in the exiting thread, without the GIL. One that took it
    # there (the C++ plans' listener did) was ended inside the acquire when the interpreter had
    # begun to finalize, and the forced unwind met its catch (...): "FATAL: exception not
    # rethrown", abort at exit (H200, 2026-11-28). Here the main thread keeps the GIL while the
    # worker exits: its context is destroyed all the same.
    import ctypes
    import sys
    import threading

    import cuplug.driver as drv

    handles = []

    def work():
        ctx = drv.Device(0).make_context()  # left pushed: the thread's exit destroys it
        handles.append(int(ctx.handle))
        del ctx

    switch = sys.getswitchinterval()
    sys.setswitchinterval(10.0)
    try:
        t = threading.Thread(target=work)
        t.start()
        t.join()
        ctypes.PyDLL(None).usleep(300_000)  # a C call that keeps the GIL: the thread exits
        destroyed = not fake.context_alive(handles[0])
    finally:
        sys.setswitchinterval(switch)
    assert destroyed, "the exiting thread waited for the GIL to destroy its context"
