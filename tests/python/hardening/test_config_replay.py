"""Issue 26, an allocator log handed to cuplug.memory.replay(): an error names the file and line
of the event (or its index in a list), and comes after what was replayed so far was freed."""

from __future__ import annotations

import pytest

import cuplug.memory


class Recording(cuplug.memory.Allocator):
    """Hands out made-up addresses (nothing reaches a driver) and raises where told to."""

    kind = "device"

    def __init__(self, fail_allocate_at=None, fail_free_of=None):
        super().__init__()
        self.live = {}
        self.calls = 0
        self.next = 0x100000
        self.fail_allocate_at, self.fail_free_of = fail_allocate_at, fail_free_of

    def allocate(self, nbytes, stream):
        self.calls += 1
        if self.calls == self.fail_allocate_at:
            raise ValueError("no block for you")
        ptr, self.next = self.next, self.next + 0x10000
        self.live[ptr] = nbytes
        return ptr

    def deallocate(self, ptr, nbytes, stream):
        if self.live.get(ptr) == self.fail_free_of:
            raise KeyError("refused")
        del self.live[ptr]


LOG = """\
# cuplug allocator log v1
1 10 1 allocate 0x1000 256 0x0
2 20 1 allocate 0x2000 512 0x0
3 30 1 allocate 0x3000 1024 0x0
4 40 1 deallocate 0x2000 512 0x0
"""


def write_log(tmp_path, text=LOG):
    path = tmp_path / "alloc.log"
    path.write_text(text)
    return path


def test_a_failing_allocate_names_file_and_line_and_frees_what_was_replayed(tmp_path):
    path = write_log(tmp_path)
    a = Recording(fail_allocate_at=3)
    with pytest.raises(ValueError) as info:
        cuplug.memory.replay(str(path), a)
    assert str(info.value).startswith(
        f"{path}:4: replaying 'allocate' of 1024 bytes (seq 3) failed: no block for you"
    )
    assert a.live == {}, "the blocks replayed before the error were leaked"


def test_a_failing_deallocate_names_file_and_line_and_frees_the_rest(tmp_path):
    path = write_log(tmp_path)
    a = Recording(fail_free_of=512)
    with pytest.raises(KeyError) as info:
        cuplug.memory.replay(str(path), a)
    assert f"{path}:5: replaying 'deallocate' of 512 bytes (seq 4) failed" in str(info.value)
    # The block whose free failed is the allocator's to account for; the others are freed.
    assert list(a.live.values()) == [512]


def test_events_given_as_a_list_are_named_by_index():
    events = [
        cuplug.memory.LogEvent(1, 10, 1, "allocate", 0x1000, 256, 0),
        cuplug.memory.LogEvent(2, 20, 1, "allocate", 0x2000, 512, 0),
    ]
    a = Recording(fail_allocate_at=2)
    with pytest.raises(ValueError, match=r"^event 1 of the list: replaying 'allocate' of 512"):
        cuplug.memory.replay(events, a)
    assert a.live == {}


def test_a_clean_replay_is_unchanged(tmp_path):
    a = Recording()
    summary = cuplug.memory.replay(str(write_log(tmp_path)), a)
    assert (summary["allocations"], summary["deallocations"], summary["live_at_end"]) == (3, 3, 2)
    assert a.live == {}


@pytest.mark.parametrize(
    "line, what",
    [
        ("1 10 1 allocate 0x1000 -5 0x0", "the size -5"),
        ("1 10 1 allocate -0x1000 5 0x0", "the address -4096"),
        ("1 10 1 allocate 0x1000 18446744073709551616 0x0", "the size 18446744073709551616"),
    ],
)
def test_read_log_refuses_sizes_and_addresses_out_of_range(tmp_path, line, what):
    path = write_log(tmp_path, line + "\n")
    with pytest.raises(ValueError, match=f"^{path}:1: not an allocator log line \\({what} is not"):
        cuplug.memory.read_log(path)
