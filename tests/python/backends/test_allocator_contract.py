"""The allocator contract from Python, for every allocator backend: the built-in plugins, the
adaptors over host memory, and an allocator written in Python. (The C++ suite in
tests/cpp/allocators checks the same contract; test_custom_allocator.py runs these checks on
the out-of-tree example plugin.)"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import cuplug.memory as memory
from cuplug import _core

SIZES = (1, 7, 255, 256, 257, 4096, 65537, (1 << 20) + 3, 3000)


class PythonHost(memory.Allocator):
    """The Python-defined backend under test: host memory from ctypes buffers."""

    kind = "host"

    def __init__(self):
        super().__init__()
        self.live = {}
        self.lock = threading.Lock()

    def allocate(self, nbytes, stream):
        if nbytes > 1 << 40:
            raise MemoryError(f"{nbytes} bytes is more than this allocator will try")
        buf = ctypes.create_string_buffer(nbytes + 256)
        address = (ctypes.addressof(buf) + 255) & ~255
        with self.lock:
            self.live[address] = buf
        return address

    def deallocate(self, ptr, nbytes, stream):
        with self.lock:
            del self.live[ptr]


memory.register_allocator("contract_python", PythonHost)


@dataclass
class Case:
    make: Callable[[], memory.Allocator]
    kind: str
    gpu: bool = False


def _host_case(name, **options):
    return Case(lambda: memory.create(name, **options), "host")


def _cases(tmp_log: str) -> dict[str, Case]:
    return {
        "host": _host_case("host"),
        "pool_over_host": _host_case("pool", upstream="host"),
        "limiting_over_host": _host_case("limiting", upstream="host", limit="64GiB"),
        "logging_over_host": _host_case("logging", upstream="host", path=tmp_log),
        "python": _host_case("contract_python"),
        "pool_over_python": _host_case("pool", upstream="contract_python"),
        "device": Case(lambda: memory.create("device"), "device", True),
        "pool": Case(lambda: memory.create("pool"), "device", True),
        "async": Case(lambda: memory.create("async"), "device", True),
        "managed": Case(lambda: memory.create("managed"), "managed", True),
        "pinned": Case(lambda: memory.create("pinned"), "pinned_host", True),
        "pinned_pooled": Case(lambda: memory.create("pinned", pooled=True), "pinned_host", True),
    }


CASE_IDS = list(_cases("x"))


# ---- the checks (also used by test_custom_allocator.py) -------------------------------------
#
# Calls go through the Allocator base class, the door C++ callers use (argument checks,
# statistics), also for Python-defined allocators whose own allocate() Python would call.
_allocate = memory.Allocator.allocate
_deallocate = memory.Allocator.deallocate


def fill(case: Case, ptr: int, nbytes: int, tag: int) -> None:
    n = min(nbytes, 4096)
    if case.kind == "device":
        import cuplug.driver as drv

        drv.memcpy_htod(ptr, np.full(n, tag, np.uint8))
    else:
        ctypes.memset(ptr, tag, n)


def holds(case: Case, ptr: int, nbytes: int, tag: int) -> bool:
    n = min(nbytes, 4096)
    if case.kind == "device":
        import cuplug.driver as drv

        back = np.empty(n, np.uint8)
        drv.memcpy_dtoh(back, ptr)
        return bool((back == tag).all())
    return ctypes.string_at(ptr, n) == bytes([tag]) * n


def check_kind_and_zero_bytes(case: Case) -> None:
    a = case.make()
    assert a.kind == case.kind
    assert _allocate(a, 0) == 0
    _deallocate(a, 0, 0)
    s = memory.stats(a)
    assert (s["bytes_in_use"], s["allocations"], s["deallocations"], s["failures"]) == (0, 0, 0, 0)


def check_blocks_are_distinct_and_usable(case: Case) -> None:
    a = case.make()
    live = [(_allocate(a, n), n) for n in SIZES]
    for i, (p, n) in enumerate(live):
        assert p != 0 and p % 256 == 0, f"block of {n} bytes at {p:#x} is not 256-byte aligned"
        fill(case, p, n, i + 1)
    for i, (p, n) in enumerate(live):
        assert holds(case, p, n, i + 1), f"block {i} was overwritten by another block"
    ordered = sorted(live)
    for (p, n), (q, _) in zip(ordered, ordered[1:]):
        assert p + n <= q
    s = memory.stats(a)
    assert s["bytes_in_use"] == sum(SIZES) and s["peak_bytes"] >= sum(SIZES)
    assert s["allocations"] == len(SIZES)
    for p, n in live:
        _deallocate(a, p, n)
    s = memory.stats(a)
    assert s["bytes_in_use"] == 0 and s["deallocations"] == len(SIZES) and s["failures"] == 0


def check_stream_ordered_use(case: Case) -> None:
    a = case.make()
    stream = 0x100
    if case.gpu:
        import cuplug.driver as drv

        stream = drv.Stream()
    for _ in range(3):
        p = _allocate(a, 1 << 16, stream)
        _deallocate(a, p, 1 << 16, stream)
        q = _allocate(a, 1 << 16)
        fill(case, q, 1 << 16, 0x33)
        assert holds(case, q, 1 << 16, 0x33)
        _deallocate(a, q, 1 << 16)
    if case.gpu:
        stream.synchronize()
    assert memory.stats(a)["bytes_in_use"] == 0


def check_held_memory_can_be_freed(case: Case) -> None:
    a = case.make()
    blocks = [(_allocate(a, 1000 * (i + 1)), 1000 * (i + 1)) for i in range(8)]
    for p, n in blocks:
        _deallocate(a, p, n)
    if a.can_free_held:
        a.trim(0)
        a.free_held()
        assert memory.stats(a)["bytes_held"] == 0
    else:
        assert memory.stats(a)["bytes_held"] == 0
        with pytest.raises(_core.NotSupportedError):
            a.free_held()
        assert memory.free_held(a) == 0


def check_out_of_memory_leaves_it_usable(case: Case) -> None:
    a = case.make()
    keep = _allocate(a, 4096)
    with pytest.raises(_core.MemoryError, match="out of memory"):
        _allocate(a, 1 << 62)
    assert memory.stats(a)["failures"] == 1
    p = _allocate(a, 4096)
    _deallocate(a, p, 4096)
    _deallocate(a, keep, 4096)
    assert memory.stats(a)["bytes_in_use"] == 0


def check_bad_arguments_are_rejected(case: Case) -> None:
    a = case.make()
    with pytest.raises(ValueError, match="must not be negative"):
        _allocate(a, -1)
    with pytest.raises(TypeError, match="must be an integer"):
        _allocate(a, 1.5)
    with pytest.raises(TypeError, match="as a stream"):
        _allocate(a, 16, "default")


def check_threads_never_share_blocks(case: Case) -> None:
    a = case.make()
    failures = []
    if case.gpu:
        import cuplug.driver as drv

        context = drv.Context.get_current()

    def work(tag):
        if case.gpu:
            context.push()
        try:
            rng = np.random.default_rng(tag)
            mine = []
            for _ in range(100):
                n = int(rng.integers(64, 20000))
                p = _allocate(a, n)
                fill(case, p, n, tag)
                mine.append((p, n))
                if len(mine) > 6 or rng.integers(3) == 0:
                    q, m = mine.pop(0)
                    if not holds(case, q, m, tag):
                        failures.append(f"thread {tag}: a block was overwritten")
                    _deallocate(a, q, m)
            for q, m in mine:
                _deallocate(a, q, m)
        except Exception as e:  # noqa: BLE001
            failures.append(repr(e))
        finally:
            if case.gpu:
                drv.Context.pop()

    threads = [threading.Thread(target=work, args=(t + 1,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    s = memory.stats(a)
    assert s["bytes_in_use"] == 0 and s["allocations"] == s["deallocations"] == 400


CONTRACT = [
    check_kind_and_zero_bytes,
    check_blocks_are_distinct_and_usable,
    check_stream_ordered_use,
    check_held_memory_can_be_freed,
    check_out_of_memory_leaves_it_usable,
    check_bad_arguments_are_rejected,
    check_threads_never_share_blocks,
]


# ---- the suite --------------------------------------------------------------------------------


@pytest.fixture
def case(request, tmp_path):
    c = _cases(str(tmp_path / "alloc.log"))[request.param]
    if c.gpu:
        # Device memory needs a context: the ctx fixture (which skips without a device).
        request.getfixturevalue("ctx")
    return c


def _params():
    out = []
    for name in CASE_IDS:
        gpu = _cases("x")[name].gpu
        out.append(pytest.param(name, id=name, marks=[pytest.mark.gpu] if gpu else []))
    return out


@pytest.mark.parametrize("case", _params(), indirect=True)
@pytest.mark.parametrize("check", CONTRACT, ids=lambda f: f.__name__[len("check_") :])
def test_contract(case, check):
    check(case)


def test_every_loaded_allocator_backend_is_covered():
    """A new allocator plugin must join the contract (the example and Python ones are ours;
    exact_pool, the test pool plugin that driver/test_pools.py loads, is in the C++ contract)."""
    known = set(CASE_IDS) | {"limiting", "logging", "arena", "exact_pool"}
    for name in memory_backends():
        assert name in known, f"allocator backend '{name}' has no case in the contract suite"


def memory_backends():
    return [p.name for p in _core.backends.available("allocator") if p.source != "builtin"]


def test_a_logged_run_replays_against_another_allocator(tmp_path):
    log = tmp_path / "run.log"
    logged = memory.create("logging", upstream="host", path=str(log))
    blocks = [(_allocate(logged, n, 0x10), n) for n in (100, 5000, 1 << 20, 300)]
    with pytest.raises(_core.MemoryError):
        _allocate(logged, 1 << 62)
    for p, n in blocks[:3]:
        _deallocate(logged, p, n, 0x10)
    events = memory.read_log(log)
    assert [e.event for e in events] == ["allocate"] * 4 + ["allocate_failed"] + ["deallocate"] * 3
    assert [e.seq for e in events] == list(range(1, 9))
    assert events[0].nbytes == 100 and events[0].stream == 0x10 and events[0].ptr == blocks[0][0]

    target = memory.create("pool", upstream="host")
    summary = memory.replay(log, target)
    assert summary["events"] == 8
    assert summary["allocations"] == 4  # the failed one fails again
    assert summary["failures"] == 1
    assert summary["live_at_end"] == 1  # the 300-byte block was never freed in the log
    assert summary["deallocations"] == 4  # ... and is freed at the end
    assert summary["peak_bytes"] == 100 + 5000 + (1 << 20) + 300
    assert memory.stats(target)["bytes_in_use"] == 0

    log.write_text(log.read_text() + "9 1 1 allocate zzz 1 0x0\n")
    with pytest.raises(ValueError, match=r"run\.log:10: not an allocator log line"):
        memory.read_log(log)


def test_a_log_that_could_not_be_written_says_so(tmp_path):
    with pytest.raises(_core.ConfigError, match="cannot write the log '/dev/full': No space left"):
        memory.create("logging", upstream="host", path="/dev/full")
    # What the logging allocator leaves when the disk fills up: a line cut short, the mark.
    log = tmp_path / "full.log"
    log.write_text(
        "# cuplug allocator log v1: seq time_ns thread event ptr bytes stream\n"
        "1 10 1 allocate 0x1000 100 0x0\n"
        "2 20 1 allocate 0x2000 200 0x0\n"
        "3 30 1 dealloc\n"
        "# 3 events missing here (3 to 5): writing them failed: No space left on device\n"
        "6 60 1 deallocate 0x1000 100 0x0\n"
    )
    with pytest.warns(RuntimeWarning, match=r"full\.log: 3 events are missing from this log"):
        events = memory.read_log(log)
    assert [e.seq for e in events] == [1, 2, 6]
    # A broken line that is not where a mark says events are missing is still an error.
    log.write_text(log.read_text().replace("6 60 1 deallocate", "7 70 1 nonsense"))
    with pytest.raises(ValueError, match=r"full\.log:6: not an allocator log line"):
        memory.read_log(log)
