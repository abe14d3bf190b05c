"""cuplug.memory.summary() and reset_peak(): the readable table of the allocators' statistics and
the peak that restarts from the bytes in use (torch.cuda.memory_summary /
reset_peak_memory_stats). Host allocators need no device; the per-device lines use the fake
driver (or a real one)."""

from __future__ import annotations

import numpy as np
import pytest

import cuplug
import cuplug.memory as memory
from cuplug._driver import memory_table
from cuplug.config import ConfigError


def _lines(table: str) -> list[list[str]]:
    """The table's data lines, split into cells (cells hold no double spaces)."""
    return [[c.strip() for c in line.split("  ") if c.strip()] for line in table.splitlines()[3:]]


def test_reset_peak_restarts_from_the_bytes_in_use():
    a = memory.create("host")
    big, small = a.allocate(3000), a.allocate(1000)
    a.deallocate(big, 3000)
    assert memory.stats(a)["peak_bytes"] == 4000
    assert memory.reset_peak(a) is None
    s = memory.stats(a)
    assert (s["bytes_in_use"], s["peak_bytes"]) == (1000, 1000)
    assert (s["allocations"], s["deallocations"], s["failures"]) == (2, 1, 0)  # still counting
    mid = a.allocate(500)
    assert memory.stats(a)["peak_bytes"] == 1500
    a.deallocate(mid, 500)
    a.deallocate(small, 1000)
    assert memory.stats(a)["peak_bytes"] == 1500
    assert a.reset_peak() == 1500  # the method returns the peak it replaced
    assert memory.stats(a)["peak_bytes"] == 0
    assert memory.stats(a)["allocations"] == 3


def test_reset_peak_of_a_backend_by_name():
    shared = memory.backend("host")
    p = shared.allocate(2048)
    try:
        memory.reset_peak("host")
        assert memory.stats("host")["peak_bytes"] == memory.stats("host")["bytes_in_use"]
    finally:
        shared.deallocate(p, 2048)


def test_reset_peak_of_every_allocator_in_use():
    memory.reset_peak()
    lines = _lines(memory.summary())
    assert lines and all(line[4] == line[3] for line in lines)  # peak == in use, each line


def test_summary_of_an_unpooled_allocator():
    a = memory.create("host")
    p = a.allocate(1536)
    q = a.allocate(100)
    a.deallocate(q, 100)
    assert memory.summary(a) == (
        "cuplug memory summary\n"
        "device  allocator  role     in use      peak  cached  reserved  blocks a/h  allocs  frees"
        "  failures\n"
        "------  ---------  -----  --------  --------  ------  --------  ----------  ------  -----"
        "  --------\n"
        "     -  host       given  1.50 KiB  1.60 KiB     0 B  1.50 KiB           -       2      1"
        "         0"
    )
    a.deallocate(p, 1536)


def test_summary_of_a_pool():
    pool = memory.create("pool", upstream="host")
    p = pool.allocate(1 << 20)
    q = pool.allocate(1 << 20)
    pool.deallocate(q, 1 << 20)  # cached, not given back
    assert pool.pool_stats() == {
        "held_blocks": 1,
        "active_blocks": 1,
        "held_bytes": 1 << 20,
        "managed_bytes": 2 << 20,
        "active_bytes": 1 << 20,
    }
    (line,) = _lines(memory.summary(pool))
    assert line == [
        "-",
        "pool",
        "given",
        "1.00 MiB",  # in use
        "2.00 MiB",  # peak
        "1.00 MiB",  # cached
        "2.00 MiB",  # reserved: the blocks the upstream gave
        "1/1",  # blocks active / held
        "2",
        "1",
        "0",
    ]
    memory.reset_peak(pool)
    assert _lines(memory.summary(pool))[0][4] == "1.00 MiB"
    pool.deallocate(p, 1 << 20)
    pool.free_held()
    assert _lines(memory.summary(pool))[0][3:8] == ["0 B", "1.00 MiB", "0 B", "0 B", "0/0"]


def test_pool_stats_of_an_allocator_that_is_no_pool():
    assert memory.create("host").pool_stats() is None


def test_sizes_read_as_people_write_them():
    assert [
        memory_table.size_text(n) for n in (0, 1023, 1024, 1536, 5 << 30, 3 << 50, 1 << 62)
    ] == [
        "0 B",
        "1023 B",
        "1.00 KiB",
        "1.50 KiB",
        "5.00 GiB",
        "3.00 PiB",
        "4096.00 PiB",
    ]


def test_the_current_allocator_is_always_listed():
    table = memory.summary()
    assert table.startswith("cuplug memory summary\ndevice  allocator  role")
    current = [line for line in _lines(table) if line[1].endswith("*")]
    assert current and all(line[1] == memory.current().name + "*" for line in current)


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (lambda: memory.summary(42), TypeError, "memory.summary: allocator must be an Allocator"),
        (lambda: memory.reset_peak(4.5), TypeError, "memory.reset_peak: allocator must be"),
        (lambda: memory.stats(object()), TypeError, "memory.stats: allocator must be"),
        (lambda: memory.free_held([]), TypeError, "memory.free_held: allocator must be"),
        (lambda: memory.summary(device="0"), TypeError, "device must be an int or None, not str"),
        (lambda: memory.summary(device=True), TypeError, "not bool"),
        (lambda: memory.summary(device=-1), ValueError, "device must be >= 0, not -1"),
        (
            lambda: memory.summary("host", device=0),
            ValueError,
            "an allocator or a device, not both",
        ),
    ],
)
def test_bad_arguments_say_what_was_expected(call, error, text):
    with pytest.raises(error, match=text):
        call()


def test_an_unknown_backend_name_is_named():
    with pytest.raises(ConfigError, match="unknown allocator .no_such_allocator."):
        memory.summary("no_such_allocator")
    with pytest.raises(ConfigError, match="unknown allocator .no_such_allocator."):
        memory.reset_peak("no_such_allocator")


# Options no other test gives: a pool object of its own (backend objects are shared per name and
# options), so its numbers are exact; its home is the test's own fresh context.
_OWN_POOL = {"upstream": "device", "trace": False}


@pytest.mark.gpu
def test_summary_per_device_of_a_selected_pool(ctx):
    import cuplug.driver as drv

    with cuplug.using(allocator="pool", allocator_options=_OWN_POOL):
        a = drv.mem_alloc(1 << 20)
        b = drv.mem_alloc(1 << 20)
        b.free()
        mine = [line for line in _lines(memory.summary()) if line[1] == "pool*"]
        assert mine == [
            ["0", "pool*", "selected", "1.00 MiB", "2.00 MiB", "1.00 MiB", "2.00 MiB", "1/1"]
            + ["2", "1", "0"]
        ]
        memory.reset_peak()
        s = memory.stats()
        assert (s["bytes_in_use"], s["peak_bytes"], s["bytes_held"]) == (1 << 20, 1 << 20, 1 << 20)
        assert (s["allocations"], s["deallocations"], s["failures"]) == (2, 1, 0)
        assert memory.summary(device=0).startswith("cuplug memory summary, device 0\n")
        assert memory.summary(device=7) == (
            "cuplug memory summary, device 7\n(no allocator has served device 7)"
        )
        a.free()
        s = memory.stats()
        assert (s["bytes_in_use"], s["peak_bytes"], s["bytes_held"]) == (0, 1 << 20, 2 << 20)
        memory.free_held()


@pytest.mark.gpu
def test_summary_lists_the_array_pool_of_a_device(ctx):
    import cuplug.gpuarray as gpuarray

    if cuplug.config.selected("allocator").source != "built-in default":
        pytest.skip("an allocator is selected: GPUArrays use it, not the default pool")

    def pools():
        return [line for line in _lines(memory.summary(device=0)) if line[2] == "array pool"]

    before = pools()
    x = gpuarray.empty(1000, np.float32)  # the first array of this fresh context: a new pool
    (new,) = [line for line in pools() if line not in before]
    assert new == ["0", "pool", "array pool", "3.91 KiB", "3.91 KiB", "0 B", "4.00 KiB", "1/0"] + [
        "1",
        "0",
        "0",
    ]
    del x
    assert ["0", "pool", "array pool", "0 B", "3.91 KiB", "4.00 KiB", "4.00 KiB", "0/1"] + [
        "1",
        "1",
        "0",
    ] in pools()
