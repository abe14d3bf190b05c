"""Contexts and the per-thread context stack (spec §1.5, §14 items 1-5)."""

import ctypes
import gc
import os
import subprocess
import sys
import time

import pytest
from support import fakecuda
from support.threads import in_thread

import cuplug.driver as drv

pytestmark = pytest.mark.gpu

INVALID_CONTEXT = 201
OUT_OF_MEMORY = 2


@pytest.fixture
def cu(driver_mode):
    """The session's CUDA driver through ctypes: what another library in the process sees."""
    if driver_mode == "fake":
        return fakecuda.FakeCuda(os.environ["CUPLUG_CUDA_DRIVER"])
    return fakecuda.Driver(os.environ.get("CUPLUG_CUDA_DRIVER") or "libcuda.so.1")


def driver_current(cu):
    """The CUcontext the driver has current on this thread, as an int (0: none)."""
    handle = ctypes.c_void_p()
    assert cu.cuCtxGetCurrent(ctypes.byref(handle)) == 0
    return handle.value or 0


def depth(cu):
    """Depth of the driver's own context stack on this thread; None where it cannot be seen."""
    return cu.context_stack_depth() if isinstance(cu, fakecuda.FakeCuda) else None


def alive(cu, context_handle):
    """Whether the driver still knows the context. Asking about a destroyed context is safe with
    the fake driver only, which answers through its control API; on a live context any driver
    answers through cuCtxGetApiVersion."""
    if hasattr(cu, "context_alive"):
        return cu.context_alive(context_handle)
    version = ctypes.c_uint()
    return cu.cuCtxGetApiVersion(ctypes.c_void_p(context_handle), ctypes.byref(version)) == 0


def wait_until(condition, timeout=5.0):
    """Thread-local clean-up runs as the OS thread ends, which may be just after join()."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# ---- the stack ---------------------------------------------------------------------------------


def test_make_context_pushes_and_pop_restores(ctx):
    assert drv.Context.get_current() == ctx
    other = drv.Device(0).make_context()
    assert drv.Context.get_current() == other != ctx
    assert drv.Context.get_device() == drv.Device(0)
    drv.Context.pop()
    assert drv.Context.get_current() == ctx
    other.detach()


def test_push_pop_order(ctx, cu):
    base = depth(cu)
    a = drv.Device(0).make_context()
    drv.Context.pop()
    b = drv.Device(0).make_context()
    drv.Context.pop()
    a.push()
    b.push()
    a.push()  # the same context may be pushed twice
    assert depth(cu) == base  # CUDA's own stack holds one of ours at most
    assert drv.Context.get_current() == a and driver_current(cu) == a.handle
    b.pop()  # static: pops the top, whichever instance it is called on
    assert drv.Context.get_current() == b and driver_current(cu) == b.handle
    drv.Context.pop()
    assert drv.Context.get_current() == a
    drv.Context.pop()
    assert drv.Context.get_current() == ctx and driver_current(cu) == ctx.handle
    assert depth(cu) == base
    a.detach()
    b.detach()


def test_pop_with_nothing_pushed():
    drv.init()

    def pop_empty():
        with pytest.raises(drv.LogicError) as info:
            drv.Context.pop()
        return str(info.value), info.value.code

    message, code = in_thread(pop_empty)
    assert message == (
        "context::pop failed: invalid device context - cannot pop non-current context"
    )
    assert code == INVALID_CONTEXT


def test_context_equality_hash_and_handle(ctx):
    same = drv.Context.get_current()
    assert same == ctx and hash(same) == hash(ctx)
    assert {ctx: 1}[same] == 1
    assert isinstance(ctx.handle, int) and ctx.handle != 0
    assert ctx != "a string"
    assert not ctx.is_primary
    assert hex(ctx.handle) in repr(ctx)


def test_context_queries(ctx):
    assert isinstance(ctx.get_api_version(), int)
    drv.Context.set_limit(drv.limit.STACK_SIZE, 4096)
    assert drv.Context.get_limit(drv.limit.STACK_SIZE) == 4096
    drv.Context.set_cache_config(drv.func_cache.PREFER_L1)
    assert drv.Context.get_cache_config() == drv.func_cache.PREFER_L1
    assert isinstance(drv.Context.get_cache_config(), drv.func_cache)
    drv.Context.set_shared_config(drv.shared_config.FOUR_BYTE_BANK_SIZE)
    assert isinstance(drv.Context.get_shared_config(), drv.shared_config)
    ctx.synchronize()  # static, callable on an instance as in PyCUDA


def test_peer_access(ctx):
    if drv.Device.count() < 2:
        pytest.skip("needs two devices")
    peer = drv.Device(1).make_context()
    drv.Context.pop()
    if not drv.Device(0).can_access_peer(drv.Device(1)):
        peer.detach()
        pytest.skip("devices 0 and 1 cannot access each other")
    drv.Context.enable_peer_access(peer)
    with pytest.raises(drv.LogicError, match="cuCtxEnablePeerAccess failed"):
        drv.Context.enable_peer_access(peer)
    drv.Context.disable_peer_access(peer)
    peer.detach()


def test_attach_is_gone():
    with pytest.raises(drv.NotSupportedError, match="Device.make_context"):
        drv.Context.attach()


# ---- with ctx: ---------------------------------------------------------------------------------


def test_with_pushes_and_pops(ctx):
    other = drv.Device(0).make_context()
    drv.Context.pop()
    with other as entered:
        assert entered is other
        assert drv.Context.get_current() == other
        with ctx:
            assert drv.Context.get_current() == ctx
        assert drv.Context.get_current() == other
    assert drv.Context.get_current() == ctx
    other.detach()


def test_with_pops_on_exceptions(ctx, cu):
    base = depth(cu)
    other = drv.Device(0).make_context()
    drv.Context.pop()
    with pytest.raises(ZeroDivisionError):
        with other:
            1 / 0  # noqa: B018
    assert drv.Context.get_current() == ctx and driver_current(cu) == ctx.handle
    assert depth(cu) == base
    other.detach()


def test_with_detects_unbalanced_push(ctx):
    other = drv.Device(0).make_context()
    drv.Context.pop()
    with pytest.raises(drv.LogicError, match="no longer on top"):
        with other:
            ctx.push()
    drv.Context.pop()  # the stray push
    drv.Context.pop()  # the with's own
    assert drv.Context.get_current() == ctx
    other.detach()


# ---- primary contexts and contexts of other libraries -----------------------------------------


def test_retain_primary_does_not_push(ctx):
    primary = drv.Device(0).retain_primary_context()
    assert primary.is_primary
    assert drv.Context.get_current() == ctx
    again = drv.Device(0).retain_primary_context()
    assert again == primary  # the one primary context of the device
    with primary:
        assert drv.Context.get_current() == primary
        assert drv.Context.get_device() == drv.Device(0)
        s = drv.Stream()
        s.synchronize()
    assert drv.Context.get_current() == ctx
    del s, primary, again
    gc.collect()


def test_adopts_a_context_another_library_made_current(cu):
    drv.init()

    def foreign():
        # What the runtime API (PyTorch, CuPy) does: retain the primary context, make it current.
        handle = ctypes.c_void_p()
        assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(handle), 0) == 0
        assert cu.cuCtxSetCurrent(handle) == 0
        try:
            # PyCUDA's get_current() knows its own stack only: code that pops until it is None
            # (pyvkfft's exit handler) must not be handed the library's context to pop.
            assert drv.Context.get_current() is None
            adopted = drv.Context.get_current(adopt=True)
            assert adopted is not None and adopted.handle == handle.value
            assert adopted.is_primary
            assert drv.Context.get_device() == drv.Device(0)
            assert drv.Device(0).retain_primary_context() == adopted
            s = drv.Stream()  # made in the adopted context
            s.synchronize()
            e = drv.Event().record(s)
            e.synchronize()
            del s, e, adopted
            gc.collect()
            # Ours are gone; the library's context is still current and alive.
            assert driver_current(cu) == handle.value
            assert alive(cu, handle.value)
        finally:
            cu.cuCtxSetCurrent(None)
            cu.cuDevicePrimaryCtxRelease(0)
        assert drv.Context.get_current(adopt=True) is None

    in_thread(foreign)


def test_pushing_over_a_foreign_context_restores_it(cu):
    drv.init()

    def foreign():
        handle = ctypes.c_void_p()
        assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(handle), 0) == 0
        assert cu.cuCtxPushCurrent(handle) == 0
        try:
            ours = drv.Device(0).make_context()
            assert depth(cu) in (2, None)
            assert driver_current(cu) == ours.handle
            drv.Context.pop()
            assert driver_current(cu) == handle.value
            ours.detach()
            assert driver_current(cu) == handle.value
        finally:
            cu.cuCtxPopCurrent(None)
            cu.cuDevicePrimaryCtxRelease(0)

    in_thread(foreign)


# ---- errors leave the stack as it was (inducer/pycuda#335) ------------------------------------


def test_failed_make_context_keeps_the_stack(ctx, fake):
    base = depth(fake)
    fake.fail_next("cuCtxCreate", OUT_OF_MEMORY)
    with pytest.raises(drv.MemoryError, match="cuCtxCreate failed"):
        drv.Device(0).make_context()
    assert drv.Context.get_current() == ctx
    assert depth(fake) == base
    drv.Context.synchronize()  # and ctx is really current in the driver


def test_failed_push_and_pop_keep_the_stack(ctx, fake):
    other = drv.Device(0).make_context()
    drv.Context.pop()
    fake.fail_next("cuCtxSetCurrent", INVALID_CONTEXT)
    with pytest.raises(drv.LogicError):
        other.push()
    assert drv.Context.get_current() == ctx
    other.push()
    fake.fail_next("cuCtxSetCurrent", INVALID_CONTEXT)
    with pytest.raises(drv.LogicError):
        drv.Context.pop()
    assert drv.Context.get_current() == other
    drv.Context.pop()
    assert drv.Context.get_current() == ctx
    other.detach()


# ---- detach and lifetime ----------------------------------------------------------------------


def test_detach_current_makes_the_next_current(ctx, fake):
    base = depth(fake)
    other = drv.Device(0).make_context()
    handle = other.handle
    other.detach()
    assert not alive(fake, handle)
    assert drv.Context.get_current() == ctx
    assert depth(fake) == base
    with pytest.raises(drv.LogicError, match="cannot detach from invalid context"):
        other.detach()
    with pytest.raises(drv.LogicError, match="cannot push invalid context"):
        other.push()
    assert "detached" in repr(other)


def test_created_context_is_destroyed_with_its_last_user(ctx, fake):
    other = drv.Device(0).make_context()
    handle = other.handle
    s = drv.Stream()
    drv.Context.pop()
    del other
    gc.collect()
    assert alive(fake, handle)  # the stream still holds it
    s.synchronize()
    del s
    gc.collect()
    assert not alive(fake, handle)


# ---- threads ----------------------------------------------------------------------------------


def test_each_thread_has_its_own_stack(ctx, cu):
    def worker():
        assert drv.Context.get_current() is None
        assert driver_current(cu) == 0
        ctx.push()  # a context may be current on several threads
        assert drv.Context.get_current() == ctx
        drv.Context.pop()
        return drv.Context.get_current()

    assert in_thread(worker) is None
    assert drv.Context.get_current() == ctx


def test_objects_work_from_threads_without_their_context(ctx, cu):
    s = drv.Stream()
    e = drv.Event()

    def worker():
        # No context is current here: each call pushes the object's context and pops it again.
        e.record(s)
        s.synchronize()
        e.synchronize()
        assert s.is_done() and e.query()
        s.wait_for_event(e)
        assert drv.Context.get_current() is None
        assert driver_current(cu) == 0
        return True

    assert in_thread(worker)
    assert drv.Context.get_current() == ctx


def test_thread_exit_with_a_pushed_context_releases_it(fake):
    drv.init()
    handles = []

    def worker():
        handles.append(drv.Device(0).make_context().handle)  # never popped

    in_thread(worker)
    assert wait_until(lambda: not alive(fake, handles[0]))


def test_thread_exit_keeps_a_context_others_still_use(cu):
    drv.init()
    made = []

    def worker():
        made.append(drv.Device(0).make_context())  # never popped; the main thread keeps it

    in_thread(worker)
    ctx = made[0]
    time.sleep(0.05)
    assert alive(cu, ctx.handle)
    with ctx:
        drv.Context.synchronize()
    ctx.detach()


# ---- process exit ------------------------------------------------------------------------------


def run_script(code):
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )


def assert_clean_exit(result):
    assert result.returncode == 0, result.stderr
    for word in ("abort", "Abort", "ERROR", "WARNING", "Traceback", "terminate"):
        assert word not in result.stderr, result.stderr


@pytest.mark.parametrize("pops", [False, True])
def test_exit_with_live_contexts_is_clean(pops):
    code = (
        "import cuplug.driver as cuda\n"
        "cuda.init()\n"
        "ctx = cuda.Device(0).make_context()\n"
        "s = cuda.Stream(); e = cuda.Event().record(s)\n"
        "other = cuda.Device(0).make_context()\n"  # two contexts left pushed
        "primary = cuda.Device(0).retain_primary_context(); primary.push()\n"
        "import threading\n"
        "t = threading.Thread(target=lambda: cuda.Device(0).make_context()); t.start(); t.join()\n"
        + ("cuda.Context.pop(); cuda.Context.pop(); cuda.Context.pop()\n" if pops else "")
        + "print('done')\n"
    )
    result = run_script(code)
    assert_clean_exit(result)
    assert result.stdout.strip() == "done"


def test_exit_after_detach_with_objects_alive():
    code = (
        "import cuplug.driver as cuda\n"
        "cuda.init()\n"
        "ctx = cuda.Device(0).make_context()\n"
        "s = cuda.Stream(); e = cuda.Event()\n"
        "ctx.detach()\n"  # s and e outlive their context
        "del s, e\n"
        "print('done')\n"
    )
    result = run_script(code)
    assert_clean_exit(result)
