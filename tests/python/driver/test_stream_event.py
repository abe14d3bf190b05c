"""Stream and Event (spec §1.6). An event shared with another process needs a real GPU:
test_stream_event_gpu.py."""

import gc
import os
import subprocess
import sys

import pytest

import cuplug.driver as drv

pytestmark = pytest.mark.gpu

NOT_READY = 600
INVALID_HANDLE = 400
ECC_UNCORRECTABLE = 214


def test_stream_basics(ctx):
    s = drv.Stream()
    assert isinstance(s.handle, int) and s.handle != 0
    assert s.__cuda_stream__() == (0, s.handle)
    assert s.is_done()
    s.synchronize()
    assert drv.Stream(flags=1).handle != s.handle
    assert isinstance(s.priority, int)


def test_stream_priority(ctx):
    low = drv.Stream()
    high = drv.Stream(priority=-1)
    assert high.priority <= low.priority
    assert drv.Stream(0, None).priority == low.priority


def test_stream_is_done_states(ctx, fake):
    s = drv.Stream()
    fake.fail_next("cuStreamQuery", NOT_READY)
    assert s.is_done() is False
    fake.fail_next("cuStreamQuery", INVALID_HANDLE)
    with pytest.raises(drv.LogicError, match="cuStreamQuery failed"):
        s.is_done()
    assert s.is_done() is True


def test_synchronize_errors(ctx, fake):
    s = drv.Stream()
    fake.fail_next("cuStreamSynchronize", ECC_UNCORRECTABLE)
    with pytest.raises(drv.RuntimeError, match="cuStreamSynchronize failed") as info:
        s.synchronize()
    assert info.value.code == ECC_UNCORRECTABLE


def test_event_record_query_synchronize(ctx):
    s = drv.Stream()
    start = drv.Event()
    assert start.record() is start  # None: the legacy default stream
    end = drv.Event(drv.event_flags.BLOCKING_SYNC)
    assert end.record(s) is end
    assert end.synchronize() is end
    assert end.query() and start.query()
    assert isinstance(end.handle, int) and end.handle != start.handle
    elapsed = end.time_since(start)
    assert isinstance(elapsed, float) and elapsed >= 0
    assert start.time_till(end) == pytest.approx(elapsed)
    s.wait_for_event(end)


def test_event_query_not_ready(ctx, fake):
    e = drv.Event().record()
    fake.fail_next("cuEventQuery", NOT_READY)
    assert e.query() is False


def test_event_record_accepts_stream_protocol_objects(ctx):
    s = drv.Stream()

    class ForeignStream:
        def __cuda_stream__(self):
            return (0, s.handle)

    drv.Event().record(ForeignStream()).synchronize()
    drv.Event().record(s.handle).synchronize()
    with pytest.raises(TypeError, match="as a stream"):
        drv.Event().record(1.5)


IPC_FLAGS = drv.event_flags.INTERPROCESS | drv.event_flags.DISABLE_TIMING


def test_event_ipc_handle(ctx):
    handle = drv.Event(IPC_FLAGS).ipc_handle()
    assert isinstance(handle, bytearray) and len(handle) == 64
    # The driver refuses to open a handle of the same process (as the fake does by default).
    with pytest.raises(drv.LogicError, match="cuIpcOpenEventHandle failed"):
        drv.Event.from_ipc_handle(handle)
    with pytest.raises(ValueError, match="64 bytes"):
        drv.Event.from_ipc_handle(b"short")


def test_event_ipc_round_trip_in_process(ctx, fake):
    e = drv.Event(IPC_FLAGS)
    fake.set_ipc_in_process(True)
    try:
        opened = drv.Event.from_ipc_handle(bytes(e.ipc_handle()))
    finally:
        fake.set_ipc_in_process(False)
    assert isinstance(opened, drv.Event) and opened.handle != e.handle
    e.record()
    opened.synchronize()
    assert opened.query()


def test_objects_keep_their_context_alive_and_die_under_it(ctx, capfd):
    other = drv.Device(0).make_context()
    s, e = drv.Stream(), drv.Event()
    drv.Context.pop()
    del other
    gc.collect()
    # ctx is current now; the objects still work in (and are destroyed under) their own context.
    e.record(s)
    s.synchronize()
    assert drv.Context.get_current() == ctx
    del s, e
    gc.collect()
    assert drv.Context.get_current() == ctx
    assert "WARNING" not in capfd.readouterr().err


def test_objects_of_a_detached_context_go_quietly(ctx, capfd, caplog):
    other = drv.Device(0).make_context()
    s, e = drv.Stream(), drv.Event()
    other.detach()
    assert drv.Context.get_current() == ctx
    with pytest.raises(drv.LogicError, match="cannot activate dead context"):
        s.synchronize()
    del s, e
    gc.collect()
    assert "WARNING" not in capfd.readouterr().err
    assert not [r for r in caplog.records if r.name == "cuplug"]


def test_failed_destroy_warns_through_the_cuplug_logger_and_continues(ctx, fake, caplog):
    s = drv.Stream()
    fake.fail_next("cuStreamDestroy", INVALID_HANDLE)
    del s
    gc.collect()
    (record,) = [r for r in caplog.records if r.name == "cuplug"]
    assert record.levelname == "WARNING"
    assert "a clean-up operation failed" in record.getMessage()
    assert "cuStreamDestroy failed: invalid resource handle" in record.getMessage()
    drv.Stream().synchronize()


def test_without_logging_handlers_warnings_still_reach_stderr(fake):
    # No logging configuration at all (a plain script): Python's last-resort handler prints
    # the warning on stderr, as the C++ did before.

    code = (
        "import gc, cuplug.driver as drv\n"
        "from support import fakecuda\n"
        "drv.init(); ctx = drv.Device(0).make_context()\n"
        "f = fakecuda.FakeCuda(__import__('os').environ['CUPLUG_CUDA_DRIVER'])\n"
        "s = drv.Stream(); f.fail_next('cuStreamDestroy', 400); del s; gc.collect()\n"
        "ctx.pop()\n"
    )

    env = dict(os.environ)
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # where support/ lives
    env["PYTHONPATH"] = os.pathsep.join([tests, env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "cuplug WARNING: a clean-up operation failed" in proc.stderr
