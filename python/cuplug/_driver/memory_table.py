"""The text table of cuplug.memory.summary(): a line per device and allocator, sizes for people."""

from __future__ import annotations

__all__ = ["COLUMNS", "render", "row", "size_text"]

UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def size_text(n: int) -> str:
    """``n`` bytes for people: "512 B", "1.50 KiB", "3.00 GiB"."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in UNITS:
        value /= 1024
        if value < 1024 or unit == UNITS[-1]:
            return f"{value:.2f} {unit}"
    raise AssertionError("unreachable")


COLUMNS = (
    "device",
    "allocator",
    "role",
    "in use",
    "peak",
    "cached",
    "reserved",
    "blocks a/h",
    "allocs",
    "frees",
    "failures",
)


def row(device, role: str, a, is_now: bool) -> list[str]:
    """The cells of one allocator's line: `a` (an Allocator) serving `device` (None: none yet)
    in `role`; is_now: it is the current allocator or its instance for that device."""
    s = a.stats()
    pool = a.pool_stats()
    reserved = pool["managed_bytes"] if pool is not None else s["bytes_in_use"] + s["bytes_held"]
    blocks = f"{pool['active_blocks']}/{pool['held_blocks']}" if pool is not None else "-"
    return [
        "-" if device is None else str(device),
        a.name + ("*" if is_now else ""),
        role,
        size_text(s["bytes_in_use"]),
        size_text(s["peak_bytes"]),
        size_text(s["bytes_held"]),
        size_text(reserved),
        blocks,
        str(s["allocations"]),
        str(s["deallocations"]),
        str(s["failures"]),
    ]


def render(title: str, rows: list[list[str]]) -> str:
    """The title, the column heads, a rule and the rows, text columns to the left and numbers
    to the right, without a newline at the end."""
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(COLUMNS)]

    def line(cells) -> str:
        return "  ".join(
            cell.ljust(w) if i in (1, 2) else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(cells, widths))
        ).rstrip()

    out = [title, line(COLUMNS), line("-" * w for w in widths)]
    out.extend(line(r) for r in rows)
    return "\n".join(out)
