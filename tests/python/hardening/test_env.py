"""Issue 26, the tuning variables (CUPLUG_ARRAY_TUNE, CUPLUG_SCAN_TUNE, CUPLUG_REDUCE_THREADS):
a value they do not accept never breaks an import; a RuntimeWarning names the variable, its
value and what it accepts, and the defaults are used."""

from __future__ import annotations

import textwrap

import pytest
from support.hardening import ESC, run

from cuplug._kernels import tuning as _tuning

SHOW_TUNING = textwrap.dedent(
    """
    import warnings
    warnings.simplefilter("always")
    import cuplug.gpuarray
    from cuplug._kernels import axis_reduction_plan, engine, scan
    print(engine.TUNING, scan.TUNE_OVERRIDES, axis_reduction_plan.THREADS_PER_SM, sep="|")
    """
)


@pytest.mark.parametrize(
    "variable, value, problem",
    [
        ("CUPLUG_REDUCE_THREADS", "abc", "not an integer"),
        ("CUPLUG_REDUCE_THREADS", "0", "0 is out of range"),
        ("CUPLUG_REDUCE_THREADS", "1" + ESC, "not an integer"),
        ("CUPLUG_ARRAY_TUNE", "unroll=abc", "unroll must be an integer from 1 to 64"),
        ("CUPLUG_ARRAY_TUNE", "unroll=4,blocks=0", "blocks must be an integer from 1 to 1024"),
        ("CUPLUG_ARRAY_TUNE", "unrol=4", "unknown key 'unrol'"),
        ("CUPLUG_ARRAY_TUNE", "unroll4", "'unroll4' is not key=integer"),
        ("CUPLUG_SCAN_TUNE", "block=100", "block must be a multiple of 32 up to 1024"),
        ("CUPLUG_SCAN_TUNE", "items=16,vec=3", "vec must be 1, 2, 4, 8 or 16"),
        ("CUPLUG_SCAN_TUNE", "block=2.5", "block must be a multiple of 32"),
        ("CUPLUG_SCAN_TUNE", "block=" + ESC, "block must be a multiple of 32"),
    ],
)
def test_a_bad_tuning_variable_warns_and_keeps_the_defaults(tmp_path, variable, value, problem):
    proc = run(["-c", SHOW_TUNING], tmp_path, **{variable: value})
    assert proc.returncode == 0, proc.stderr
    assert "RuntimeWarning" in proc.stderr
    assert f"{variable}={value!r} is ignored: {problem}" in proc.stderr, proc.stderr
    assert f"{variable} accepts " in proc.stderr
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
    tuning, overrides, threads = proc.stdout.strip().split("|")
    assert tuning == "{'unroll': 1, 'minimal': 1}"
    assert overrides == "{}"
    assert threads == "2048"


def test_good_tuning_values_still_apply(tmp_path):
    proc = run(
        ["-W", "error", "-c", SHOW_TUNING],
        tmp_path,
        CUPLUG_ARRAY_TUNE="unroll=4, minimal=0",
        CUPLUG_SCAN_TUNE="block=256,items=16,vec=4,",
        CUPLUG_REDUCE_THREADS=" 1024 ",
    )
    assert proc.returncode == 0, proc.stderr
    tuning, overrides, threads = proc.stdout.strip().split("|")
    assert tuning == "{'unroll': 4, 'minimal': 0}"
    assert overrides == "{'block': 256, 'items': 16, 'vec': 4}"
    assert threads == "1024"


def test_tuning_readers_accept_only_plain_integers(monkeypatch):
    rule = _tuning.between(1, 10)
    for text in ("1_0", "+5", "٣", "5.0", "0x5", ""):
        monkeypatch.setenv("CUPLUG_TEST_TUNE", text)
        if text:
            with pytest.warns(RuntimeWarning, match="CUPLUG_TEST_TUNE="):
                assert _tuning.integer("CUPLUG_TEST_TUNE", 7, rule) == 7
        else:
            assert _tuning.integer("CUPLUG_TEST_TUNE", 7, rule) == 7
