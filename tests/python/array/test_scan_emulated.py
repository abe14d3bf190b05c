"""The generated scan kernels compute the right thing, checked without a GPU: each runs on a CPU
emulation of CUDA's threads (scan_emulation.py; blocks concurrent, so the look-back across tiles
and groups really waits for and reads other blocks' values), with small tiles so that a few
thousand elements span several groups. Includes the look-back's slow path (group prefixes
published late, folded by later tiles) and bit-for-bit determinism under random timing."""

from __future__ import annotations

import numpy as np
import pytest
from support.scan_emulation import CXX, run_array_scan, run_generic_scan

from cuplug._codegen import scan as sg

pytestmark = pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++/c++) found")


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """Where the emulated kernels' programs are built: once per kernel for the module."""
    return tmp_path_factory.mktemp("scan_emulation")


# 64 threads x 4 items: 256-element tiles, 8192-element groups; vec 2 takes the vector path.
SMALL = sg.Tuning(block=64, items=4, vec=2, single_tiles=2)


def _groups_of_tiles(n, tuning=SMALL):
    tiles = -(-n // tuning.tile)
    return tiles, -(-tiles // sg.GROUP)


def _fewest_releases(n, tuning=SMALL):
    """Release stores when every group prefix is published once, by the chain: a tile
    aggregate per tile but each full group's last, T and GP per full group (not GP(0))."""
    tiles, _ = _groups_of_tiles(n, tuning)
    full = tiles // sg.GROUP
    return tiles - full + full + max(full - 1, 0)


@pytest.mark.parametrize("n", [1, 255, 256, 257, 513, 8191, 8193, 3 * 8192 + 100])
def test_int_scan_across_tiles_and_groups(n, builds):
    gen = sg.generate_array_scan("k", np.int32, np.int32, np.int32, "a+b", tuning=SMALL)
    x = (np.arange(n, dtype=np.int64) * 7919 % 13).astype(np.int32)
    y, releases = run_array_scan(gen, x, np.int32, resident=8, workdir=builds)
    np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.int32))
    if n > SMALL.tile * SMALL.single_tiles:
        assert releases >= _fewest_releases(n)


def test_one_block_walks_the_tiles_with_a_carry(builds):
    gen = sg.generate_array_scan("k", np.int32, np.int32, np.int32, "a+b", tuning=SMALL)
    x = np.arange(2000, dtype=np.int32) % 5
    y, releases = run_array_scan(gen, x, np.int32, multi=False, workdir=builds)
    np.testing.assert_array_equal(y, np.cumsum(x))
    assert releases == 0  # no look-back


def test_late_group_prefixes_are_folded_from_totals_to_the_same_bits(builds):
    """GP(g) published 30 ms late: tiles of later groups fold T(j+1..g) onto an earlier GP(j)
    themselves (and publish it); the floats are the same bits as when nothing waits."""
    n = 5 * 8192 + 77
    gen = sg.generate_array_scan("k", np.float32, np.float32, np.float32, "a+b", tuning=SMALL)
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
    fast, fast_releases = run_array_scan(gen, x, np.float32, resident=4, workdir=builds)
    slow, slow_releases = run_array_scan(
        gen, x, np.float32, resident=48, slow_us=30_000, jitter=300, workdir=builds
    )
    assert slow_releases > _fewest_releases(n)  # prefixes computed by folding and published
    assert slow.tobytes() == fast.tobytes()
    exact = np.cumsum(x.astype(np.float64))
    bound = np.cumsum(np.abs(x.astype(np.float64))) * 2e-6
    assert np.all(np.abs(slow - exact) <= bound)


def test_float_results_are_the_same_bits_under_random_timing(builds):
    n = 3 * 8192 + 5
    gen = sg.generate_array_scan("k", np.float32, np.float32, np.float32, "a+b", tuning=SMALL)
    x = np.random.default_rng(9).standard_normal(n).astype(np.float32)
    runs = [
        run_array_scan(gen, x, np.float32, resident=r, jitter=j, workdir=builds)[0].tobytes()
        for r, j in ((3, 0), (40, 2000), (20, 500))
    ]
    assert runs[0] == runs[1] == runs[2]


def test_exclusive_scan_starts_at_the_neutral_element(builds):
    gen = sg.generate_array_scan(
        "k", np.float64, np.float64, np.float64, "a+b", neutral="0", exclusive=True, tuning=SMALL
    )
    x = np.arange(1, 3000, dtype=np.float64)
    y, _ = run_array_scan(gen, x, np.float64, workdir=builds)
    np.testing.assert_array_equal(y, np.concatenate([[0.0], np.cumsum(x)[:-1]]))


def test_scan_without_a_neutral_element(builds):
    """PyCUDA's InclusiveScanKernel needs no neutral: nothing is combined with a made-up one
    (here a running maximum of negative values, where 0 would be wrong)."""
    gen = sg.generate_array_scan("k", np.int64, np.int64, np.int64, "a > b ? a : b", tuning=SMALL)
    x = -np.abs(np.random.default_rng(2).integers(1, 10**9, 9000))
    y, _ = run_array_scan(gen, x, np.int64, workdir=builds)
    np.testing.assert_array_equal(y, np.maximum.accumulate(x))


@pytest.mark.parametrize("row", [1, 7, 256, 300, 9000])
def test_rows_restart_the_scan(row, builds):
    expr = "across_seg_boundary ? b : (scan_type)((unsigned long long)a + (unsigned long long)b)"
    gen = sg.generate_array_scan(
        "k", np.int8, np.int64, np.int64, expr, segmented=True, tuning=SMALL
    )
    rows = max(1, 9000 // row)
    x = (np.arange(rows * row) % 11 - 5).astype(np.int8)
    y, _ = run_array_scan(gen, x, np.int64, row=row, resident=8, workdir=builds)
    np.testing.assert_array_equal(y, np.cumsum(x.reshape(rows, row), axis=1).ravel())


@pytest.mark.parametrize("in_step,out_step", [(-1, 1), (3, 1), (1, -2), (-2, 3)])
def test_strided_and_reversed_steps(in_step, out_step, builds):
    gen = sg.generate_array_scan("k", np.int32, np.int32, np.float32, "a+b", tuning=SMALL)
    x = np.arange(3 * 2000, dtype=np.int32) % 9
    y, _ = run_array_scan(gen, x, np.float32, in_step=in_step, out_step=out_step, workdir=builds)
    np.testing.assert_array_equal(y, np.cumsum(x[::in_step]).astype(np.float32))


def test_generic_segmented_scan_with_prev_and_last_items(builds):
    n = 9000
    rng = np.random.default_rng(1)
    x = rng.integers(0, 10, n).astype(np.int32)
    seg = (rng.random(n) < 0.002).astype(np.int8)
    out, prev, last = np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(1, np.int32)
    args = [
        sg.Arg("x", np.int32, True),
        sg.Arg("seg", np.int8, True),
        sg.Arg("out", np.int32, True),
        sg.Arg("prev", np.int32, True),
        sg.Arg("last", np.int32, True),
        sg.Arg("k", np.int32, False),
    ]
    gen = sg.generate_generic_scan(
        "g",
        args,
        np.int32,
        "x[i] * k",
        "across_seg_boundary ? b : a + b",
        "0",
        "out[i] = item; prev[i] = prev_item; if (i == N - 1) last[0] = last_item;",
        is_segment_start_expr="seg[i] != 0 || (i > 0 && before == 7 && x[i] == 7)",
        input_fetch_exprs=[("before", "x", -1)],
        tuning=sg.Tuning(block=64, items=2, vec=1, single_tiles=2),
    )
    assert gen.flags
    _, _, got, got_prev, got_last = run_generic_scan(
        gen, [x, seg, out, prev, last, 3], n, resident=8, workdir=builds
    )
    want, want_prev, acc = np.zeros(n, np.int64), np.zeros(n, np.int64), 0
    for i in range(n):
        start = seg[i] or (i > 0 and x[i - 1] == 7 and x[i] == 7)
        prev_value = 0 if (start or i == 0) else acc
        acc = 3 * int(x[i]) if start else acc + 3 * int(x[i])
        want[i], want_prev[i] = acc, prev_value
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_prev, want_prev)
    assert got_last[0] == want[-1]


def test_generic_scan_reads_every_input_before_writing(builds):
    """PyOpenCL's example: ``ary[i+1] = item`` in place shifts the inclusive scan by one."""
    n = 5000
    x = (np.arange(n) % 4).astype(np.int32)
    gen = sg.generate_generic_scan(
        "g",
        [sg.Arg("ary", np.int32, True)],
        np.int32,
        "ary[i]",
        "a + b",
        "0",
        "if (i + 1 < N) ary[i + 1] = item;",
        tuning=sg.Tuning(block=64, items=2, vec=1, single_tiles=2),
    )
    (got,) = run_generic_scan(gen, [x], n, resident=8, workdir=builds)
    np.testing.assert_array_equal(got[1:], np.cumsum(x)[:-1])
    assert got[0] == x[0]
