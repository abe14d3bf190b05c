"""cuplug.memory.record_history() / recording() / snapshot(): the Python call site of every live
allocator block, grouped by call site, out of the record once freed (PyTorch's memory history,
tracemalloc's shape). Host allocators need no device; GPUArrays, mem_alloc and DeviceMemoryPool
use the fake driver (or a real one)."""

from __future__ import annotations

import inspect
import threading

import numpy as np
import pytest
from support import sanitizer

import cuplug
import cuplug.memory as memory


@pytest.fixture(autouse=True)
def _history_off():
    """Every test starts and ends with no record (a failed test must not leave one on)."""
    memory.record_history(False)
    yield
    memory.record_history(False)


def _line_of(marker: str) -> int:
    """The line of this file holding `marker` (a comment at the allocation under test)."""
    lines = inspect.getsource(inspect.getmodule(_line_of)).splitlines()
    (index,) = [i for i, line in enumerate(lines) if line.rstrip().endswith(f"# {marker}")]
    return index + 1


def _allocate(a, n):
    return a.allocate(n)  # site: _allocate


def test_a_live_block_has_its_call_site_and_leaves_the_record_when_freed():
    a = memory.create("host")
    memory.record_history(True)
    assert memory.is_recording()
    p = _allocate(a, 1000)
    (block,) = memory.snapshot().blocks
    assert (block.address, block.size, block.allocator) == (p, 1000, "host")
    (frame,) = block.frames
    assert (frame.filename, frame.lineno, frame.function) == (
        __file__,
        _line_of("site: _allocate"),
        "_allocate",
    )
    assert str(frame) == f"{__file__}:{frame.lineno} in _allocate"
    a.deallocate(p, 1000)
    snap = memory.snapshot()
    assert snap.blocks == () and snap.total_size == 0
    assert [(e.action, e.address, e.size) for e in snap.events] == [
        ("alloc", p, 1000),
        ("free", p, 1000),
    ]
    assert snap.events[0].frames == block.frames == snap.events[1].frames
    assert snap.started_ns <= snap.events[0].time_ns <= snap.events[1].time_ns <= snap.time_ns


def test_blocks_from_before_the_record_are_not_in_it_and_their_frees_are_harmless():
    a = memory.create("host")
    early = a.allocate(64)
    memory.record_history(True)
    late = a.allocate(128)
    a.deallocate(early, 64)
    snap = memory.snapshot()
    assert [b.address for b in snap.blocks] == [late]
    assert [e.action for e in snap.events] == ["alloc"]
    a.deallocate(late, 128)
    assert memory.snapshot().blocks == ()


def test_call_sites_group_the_live_bytes_largest_first():
    a = memory.create("host")
    memory.record_history(True)
    small = [a.allocate(100) for _ in range(3)]  # site: three small
    big = a.allocate(5000)  # site: one big
    sites = memory.snapshot().call_sites()
    assert [(s.size, s.count, s.frames[0].lineno) for s in sites] == [
        (5000, 1, _line_of("site: one big")),
        (300, 3, _line_of("site: three small")),
    ]
    assert memory.snapshot().call_sites(limit=1) == sites[:1]
    assert str(sites[1]).startswith("300 B in 3 blocks: ")
    text = str(memory.snapshot())
    assert (
        text.splitlines()[0] == "top call sites: 5.18 KiB in 4 live blocks recorded, 2 call sites"
    )
    assert f"test_memory_history.py:{_line_of('site: one big')} in " in text.splitlines()[1]
    for p in small:
        a.deallocate(p, 100)
    a.deallocate(big, 5000)
    assert memory.snapshot().call_sites() == []


def test_a_pool_records_the_users_block_not_its_upstream_calls():
    pool = memory.create("pool", upstream="host")
    memory.record_history(True)
    p = pool.allocate(1 << 20)
    (block,) = memory.snapshot().blocks
    assert (block.address, block.allocator) == (p, "pool")
    pool.deallocate(p, 1 << 20)  # held by the pool, but no longer the user's
    assert memory.snapshot().blocks == ()
    q = pool.allocate(1 << 20)  # the same block again: recorded again
    assert [b.address for b in memory.snapshot().blocks] == [q]
    pool.deallocate(q, 1 << 20)
    events = len(memory.snapshot().events)
    pool.free_held()  # the pool gives its block to the upstream: no user's block moves
    assert len(memory.snapshot().events) == events == 4


def test_an_allocator_written_in_python_is_recorded_once():
    class Wrapping(memory.Allocator):
        kind = "host"

        def __init__(self):
            super().__init__()
            self.inner = memory.create("host")

        def allocate(self, nbytes, stream):
            return self.inner.allocate(nbytes, stream)

        def deallocate(self, ptr, nbytes, stream):
            self.inner.deallocate(ptr, nbytes, stream)

    memory.register_allocator("test_history_wrapping", Wrapping)
    holder = memory.create("pool", upstream="test_history_wrapping")
    memory.record_history(True)
    p = holder.allocate(4096)  # the pool's door, then the Python allocator's, then the host's
    (block,) = memory.snapshot().blocks
    assert (block.address, block.allocator) == (p, "pool")
    holder.deallocate(p, 4096)
    holder.free_held()  # the pool frees through the Python allocator: not the user's block
    snap = memory.snapshot()
    assert snap.blocks == ()
    assert [(e.action, e.allocator) for e in snap.events] == [("alloc", "pool"), ("free", "pool")]


def test_frames_keeps_that_many_frames_innermost_first():
    a = memory.create("host")
    memory.record_history(True, frames=2)

    def outer():
        return _allocate(a, 10)  # site: outer

    p = outer()
    (block,) = memory.snapshot().blocks
    assert [(f.lineno, f.function) for f in block.frames] == [
        (_line_of("site: _allocate"), "_allocate"),
        (
            _line_of("site: outer"),
            f"{test_frames_keeps_that_many_frames_innermost_first.__name__}.<locals>.outer",
        ),
    ]
    assert memory.snapshot().frames == 2
    a.deallocate(p, 10)


def test_max_events_keeps_the_last_ones():
    a = memory.create("host")
    memory.record_history(True, max_events=3)
    ps = [a.allocate(8) for _ in range(5)]
    snap = memory.snapshot()
    assert (len(snap.events), snap.events_dropped) == (3, 2)
    assert [e.address for e in snap.events] == ps[2:]
    assert len(snap.blocks) == 5  # the live blocks are all there
    for p in ps:
        a.deallocate(p, 8)
    memory.record_history(False)
    memory.record_history(True, max_events=0)
    a.deallocate(a.allocate(8), 8)
    assert memory.snapshot().events == () and memory.snapshot().events_dropped == 2


def test_stopping_forgets_the_record():
    a = memory.create("host")
    memory.record_history(True)
    p = a.allocate(256)
    memory.record_history(False)
    assert not memory.is_recording()
    memory.record_history(False)  # stopping twice is fine
    a.deallocate(p, 256)
    memory.record_history(True)
    assert memory.snapshot().blocks == () and memory.snapshot().events == ()


def test_recording_gives_the_record_as_the_block_ended_and_stops():
    a = memory.create("host")
    with memory.recording(frames=1) as rec:
        assert rec.snapshot is None and memory.is_recording()
        kept = a.allocate(512)
        a.deallocate(a.allocate(64), 64)
    assert not memory.is_recording()
    assert [b.address for b in rec.snapshot.blocks] == [kept]
    assert [e.action for e in rec.snapshot.events] == ["alloc", "alloc", "free"]
    a.deallocate(kept, 512)
    with pytest.raises(KeyError), memory.recording() as rec:
        raise KeyError("inside")
    assert not memory.is_recording() and rec.snapshot is None


def test_summary_lists_the_top_call_sites_while_recording():
    a = memory.create("host")
    assert "top call sites" not in memory.summary()
    memory.record_history(True)
    p = a.allocate(3 << 20)  # site: summary
    text = memory.summary()
    table, sites = text.split("\n\n")
    assert table.startswith("cuplug memory summary\n")
    lines = sites.splitlines()
    assert lines[0].startswith("top call sites: 3.00 MiB in 1 live blocks recorded, 1 call sites")
    assert lines[1].split() == [
        "3.00",
        "MiB",
        "1",
        f"{__file__}:{_line_of('site: summary')}",
        "in",
        "test_summary_lists_the_top_call_sites_while_recording",
    ]
    assert "top call sites" not in memory.summary(top_sites=0)
    a.deallocate(p, 3 << 20)


def test_sites_beyond_the_limit_are_summed_up():
    a = memory.create("host")
    memory.record_history(True)
    ps = [(a.allocate(n), n) for n in (10, 20, 30)]  # one site
    qs = [(a.allocate(n), n) for n in (1, 2)]  # another
    rs = [(a.allocate(n), n) for n in (4,)]  # a third
    lines = memory.snapshot().format(limit=1).splitlines()
    assert len(lines) == 3
    assert lines[2].split() == ["7", "B", "3", "(2", "more", "call", "sites)"]
    for p, n in ps + qs + rs:
        a.deallocate(p, n)


def test_a_block_allocated_on_a_thread_has_that_threads_call_site():
    a = memory.create("host")
    memory.record_history(True)
    got = []
    t = threading.Thread(target=lambda: got.append(_allocate(a, 77)))
    t.start()
    t.join()
    (block,) = memory.snapshot().blocks
    assert block.frames[0].function == "_allocate"
    a.deallocate(got[0], 77)


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (lambda: memory.snapshot(), RuntimeError, r"no history is recorded; call cuplug\.memory"),
        (lambda: memory.record_history(1), TypeError, "enabled must be True or False, not int"),
        (lambda: memory.record_history(frames=0), ValueError, "frames must be >= 1, not 0"),
        (lambda: memory.record_history(frames=1.5), TypeError, "frames must be an int, not float"),
        (lambda: memory.record_history(max_events=-1), ValueError, "max_events must be >= 0"),
        (lambda: memory.summary(top_sites=-1), ValueError, "top_sites must be >= 0, not -1"),
        (lambda: memory.summary(top_sites="5"), TypeError, "top_sites must be an int, not str"),
    ],
)
def test_bad_arguments_say_what_was_expected(call, error, text):
    with pytest.raises(error, match=text):
        call()
    assert not memory.is_recording()


def test_starting_twice_is_refused():
    memory.record_history(True)
    with pytest.raises(RuntimeError, match=r"recorded already; call cuplug\.memory\.record_hist"):
        memory.record_history(True)
    with pytest.raises(RuntimeError, match="recorded already"), memory.recording():
        pass
    assert memory.is_recording()  # the first record goes on
    with pytest.raises(TypeError, match="limit must be an int or None, not str"):
        memory.snapshot().call_sites("3")


@pytest.mark.gpu
def test_gpuarrays_mem_alloc_and_device_pools_have_the_users_call_site(ctx):
    sanitizer.skip_if_frames_held()
    import cuplug.driver as drv
    import cuplug.gpuarray as gpuarray
    from cuplug.tools import DeviceMemoryPool

    pool = DeviceMemoryPool()
    memory.record_history(True)
    x = gpuarray.zeros(1000, np.float32)  # site: gpuarray
    y = gpuarray.to_gpu(np.arange(10, dtype=np.float64))  # site: to_gpu
    m = drv.mem_alloc(3000)  # site: mem_alloc
    z = gpuarray.empty(50, np.int32, allocator=pool.allocate)  # site: pool
    sites = {(s.frames[0].lineno, s.size) for s in memory.snapshot().call_sites()}
    assert sites == {
        (_line_of("site: gpuarray"), 4000),
        (_line_of("site: to_gpu"), 80),
        (_line_of("site: mem_alloc"), 3000),
        (_line_of("site: pool"), 200),
    }
    assert all(
        b.frames[0].filename == __file__ for b in memory.snapshot().blocks
    )  # cuplug's own frames are skipped
    del x, y, z
    m.free()
    assert memory.snapshot().blocks == ()
    kinds = [e.action for e in memory.snapshot().events]
    assert kinds.count("alloc") == kinds.count("free") == 4
    assert cuplug.memory.is_recording()
