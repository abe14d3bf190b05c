"""cuplug's loggers: `cuplug` and one per component (`cuplug.compile`, `.memory`, `.plugins`,
`.launch`); what backend selection and the compile cache decided, at debug level, only when asked
for; a compile's start and end lines (info) with its duration and cache outcome; and CUPLUG_LOG,
which turns them on to stderr, good values and bad (clean-up warnings:
driver/test_stream_event.py). Compiles use NVRTC and need no GPU."""

import io
import logging
import os
import re
import subprocess
import sys
import time
import uuid
import warnings

import pytest

import cuplug
import cuplug.driver as drv
from cuplug import _log
from cuplug._core import _compiler as _cc

LOGGERS = ("cuplug", *(f"cuplug.{c}" for c in _log.COMPONENTS))


def cuplug_messages(caplog, name=None):
    return [
        r.getMessage()
        for r in caplog.records
        if (r.name == name if name else r.name.split(".")[0] == "cuplug")
    ]


def new_kernel() -> str:
    return f"__global__ void k_{uuid.uuid4().hex}(float *x) {{ x[threadIdx.x] *= 2.0f; }}\n"


@pytest.fixture
def loggers():
    """Leaves cuplug's loggers' levels and handlers as the test found them."""
    saved = {n: (logging.getLogger(n).level, list(logging.getLogger(n).handlers)) for n in LOGGERS}
    handler = _log._handler
    yield
    for n, (level, handlers) in saved.items():
        logger = logging.getLogger(n)
        logger.setLevel(level)
        logger.handlers[:] = handlers
    _log._handler = handler


# ---- the loggers --------------------------------------------------------------------------------


@pytest.mark.gpu
def test_backend_selection_and_compiles_log_at_debug_level(ctx, caplog, tmp_path, monkeypatch):
    from cuplug.compiler import SourceModule

    monkeypatch.setenv("CUPLUG_CACHE_DIR", str(tmp_path))
    with caplog.at_level(logging.DEBUG, logger="cuplug"):
        with cuplug.using(allocator="pool"):
            drv.mem_alloc(256).free()
        SourceModule(new_kernel())
    plugins = cuplug_messages(caplog, "cuplug.plugins")
    assert any("allocator backend 'pool' (selected by " in m for m in plugins), plugins
    compiles = cuplug_messages(caplog, "cuplug.compile")
    assert any(m.startswith("compiled ") and "(cache: compiled" in m for m in compiles), compiles


@pytest.mark.gpu
def test_nothing_is_logged_below_the_level_asked_for(ctx, caplog):
    from cuplug.compiler import SourceModule

    with caplog.at_level(logging.WARNING, logger="cuplug"):
        with cuplug.using(allocator="pool"):
            drv.mem_alloc(256).free()
        SourceModule(new_kernel())
    assert cuplug_messages(caplog) == []


# Lines of the compile logger: "compiling NAME [KEY12] with BACKEND for ARCH, TARGET" and
# "compiled NAME [KEY12] in 12.3 ms (cache: compiled, ...)"; hits "... in 0.0 ms (cache: ... hit)".
START = re.compile(r"^compiling (\S+) \[([0-9a-f]{12})\] with nvrtc for sm_90, cubin$")
END = re.compile(r"^compiled (\S+) \[([0-9a-f]{12})\] in (\d+\.\d) ms \(cache: compiled, (.*)\)$")
HIT = re.compile(r"^(\S+) \[([0-9a-f]{12})\] (?:found|loaded) in \d+\.\d ms \(cache: (\w+) hit\)$")


def test_a_compile_logs_its_start_and_its_end_with_duration_and_outcome(caplog, tmp_path):
    r = _cc.CompileRequest(new_kernel(), arch="sm_90", source_name="scale.cu")
    with caplog.at_level(logging.INFO, logger="cuplug.compile"):
        assert _cc.compile(r, cache_dir=str(tmp_path)).hit is None
        assert _cc.compile(r, cache_dir=str(tmp_path)).hit == "memory"
    lines = cuplug_messages(caplog, "cuplug.compile")
    # The hit is a debug line: at info, a compile is exactly its two lines.
    assert len(lines) == 2, lines
    start, end = START.match(lines[0]), END.match(lines[1])
    assert start and end, lines
    assert start[1] == end[1] == "scale.cu" and start[2] == end[2] == r.key()[:12]
    assert float(end[3]) > 0
    assert end[4] == "stored on disk and in memory"


@pytest.mark.parametrize(
    ("memory", "disk", "disable", "where"),
    [
        (True, True, False, "stored on disk and in memory"),
        (True, False, False, "kept in memory only"),
        (False, True, False, "stored on disk"),
        (True, True, True, "not stored: the cache is off"),
    ],
)
def test_the_end_line_says_what_was_stored(
    caplog, tmp_path, monkeypatch, memory, disk, disable, where
):
    if disable:
        monkeypatch.setenv("CUPLUG_DISABLE_CACHE", "1")
    r = _cc.CompileRequest(new_kernel(), arch="sm_90")
    with caplog.at_level(logging.INFO, logger="cuplug.compile"):
        _cc.compile(r, memory=memory, disk=disk, cache_dir=str(tmp_path))
    end = END.match(cuplug_messages(caplog, "cuplug.compile")[-1])
    assert end and end[4] == where, cuplug_messages(caplog)


def test_cache_hits_say_so_at_debug_level(caplog, tmp_path):
    r = _cc.CompileRequest(new_kernel(), arch="sm_90", source_name="hit.cu")
    _cc.compile(r, cache_dir=str(tmp_path))
    with caplog.at_level(logging.DEBUG, logger="cuplug.compile"):
        assert _cc.compile(r, cache_dir=str(tmp_path)).hit == "memory"
        _cc.clear_memory_cache()
        assert _cc.compile(r, cache_dir=str(tmp_path)).hit == "disk"
    hits = [HIT.match(m) for m in cuplug_messages(caplog, "cuplug.compile")]
    assert all(hits), cuplug_messages(caplog)
    assert [(h[1], h[2], h[3]) for h in hits] == [
        ("hit.cu", r.key()[:12], "memory"),
        ("hit.cu", r.key()[:12], "disk"),
    ]


def test_a_failed_compile_says_how_long_it_took(caplog, tmp_path):
    r = _cc.CompileRequest("__global__ void k() { nonsense; }\n", arch="sm_90")
    with caplog.at_level(logging.INFO, logger="cuplug.compile"):
        with pytest.raises(drv.CompileError):
            _cc.compile(r, cache_dir=str(tmp_path))
    lines = cuplug_messages(caplog, "cuplug.compile")
    assert len(lines) == 2 and START.match(lines[0]), lines
    assert re.match(r"^compiling kernel\.cu \[[0-9a-f]{12}\] failed after \d+\.\d ms", lines[1])


def test_the_start_line_is_passed_on_while_the_compile_runs(tmp_path, loggers):
    """The compile runs without the GIL; its start line must reach Python's logging when the
    compile starts, not wait in a queue until it returns (a long first compile would be silent):
    the two lines reach the handler about the compile's duration apart."""
    seen = []

    class Probe(logging.Handler):
        def emit(self, record):
            seen.append((time.monotonic(), record.getMessage()))

    logger = logging.getLogger("cuplug.compile")
    logger.setLevel(logging.INFO)
    probe = Probe()
    logger.addHandler(probe)
    try:
        _cc.compile(_cc.CompileRequest(new_kernel(), arch="sm_90"), cache_dir=str(tmp_path))
    finally:
        logger.removeHandler(probe)
    assert len(seen) == 2 and START.match(seen[0][1]), seen
    end = END.match(seen[1][1])
    assert end, seen
    apart_ms = (seen[1][0] - seen[0][0]) * 1e3
    assert apart_ms >= 0.5 * float(end[3]), (apart_ms, seen)


# ---- CUPLUG_LOG ---------------------------------------------------------------------------------

INFO, DEBUG, WARNING, ERROR = logging.INFO, logging.DEBUG, logging.WARNING, logging.ERROR


@pytest.mark.parametrize(
    ("value", "levels"),
    [
        ("", {}),
        ("info", {"cuplug": INFO}),
        ("debug", {"cuplug": DEBUG}),
        ("warning", {"cuplug": WARNING}),
        (" INFO ", {"cuplug": INFO}),
        ("compile=debug,memory=info", {"cuplug.compile": DEBUG, "cuplug.memory": INFO}),
        ("warning, compile = debug", {"cuplug": WARNING, "cuplug.compile": DEBUG}),
        (
            "plugins=error,launch=off",
            {"cuplug.plugins": ERROR, "cuplug.launch": logging.CRITICAL + 10},
        ),
        ("compile=info,compile=debug", {"cuplug.compile": DEBUG}),
        (",info,", {"cuplug": INFO}),
    ],
)
def test_cuplug_log_values_accepted(value, levels):
    assert _log.parse(value) == (levels, [])


@pytest.mark.parametrize(
    ("value", "levels", "named"),
    [
        ("verbose", {}, ["unknown level 'verbose'"]),
        ("kernels=debug", {}, ["unknown component 'kernels'"]),
        ("compile=loud", {}, ["unknown level 'loud'"]),
        ("compile=", {}, ["unknown level ''"]),
        ("=debug", {}, ["unknown component ''"]),
        (
            "memory=info,kernels=debug,loud",
            {"cuplug.memory": INFO},
            ["unknown component 'kernels'", "unknown level 'loud'"],
        ),
    ],
)
def test_cuplug_log_values_refused(value, levels, named):
    got, problems = _log.parse(value)
    assert got == levels
    assert len(problems) == len(named)
    assert all(p.startswith(n) for p, n in zip(problems, named)), problems


def test_a_bad_value_is_one_warning_and_the_rest_applies(loggers):
    stream = io.StringIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        applied = _log.configure("compile=info,kernels=debug,memory=loud", stream=stream)
    assert applied == {"cuplug.compile": INFO}
    assert len(caught) == 1 and caught[0].category is RuntimeWarning
    text = str(caught[0].message)
    assert "CUPLUG_LOG=" in text and "'kernels'" in text and "'loud'" in text
    assert "compile, memory, plugins, launch" in text  # what it accepts
    assert logging.getLogger("cuplug.compile").level == INFO
    # One handler however often it is configured.
    _log.configure("info", stream=stream)
    assert sum(h is _log._handler for h in logging.getLogger("cuplug").handlers) == 1


def _python(code: str, env_changes: dict, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, **env_changes}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


COMPILE_TWICE = """
from cuplug._core import _compiler as cc
r = cc.CompileRequest(%r, arch="sm_90", source_name="env.cu")
print(cc.compile(r).hit)
"""


def test_cuplug_log_turns_compile_lines_on_to_stderr(tmp_path):
    """No logging configuration in the program: CUPLUG_LOG alone puts the lines on stderr; a
    second process finds the kernel on disk and says so at debug."""
    code = COMPILE_TWICE % new_kernel()
    env = {"CUPLUG_CACHE_DIR": str(tmp_path), "CUPLUG_LOG": "compile=info"}
    first = _python(code, env, tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["None"]
    lines = [line for line in first.stderr.splitlines() if " cuplug.compile " in line]
    assert len(lines) == 2, first.stderr
    assert " cuplug.compile INFO: compiling env.cu [" in lines[0]
    assert re.search(
        r" cuplug\.compile INFO: compiled env\.cu \[\w+\] in \d+\.\d ms "
        r"\(cache: compiled, stored on disk and in memory\)$",
        lines[1],
    )
    second = _python(code, {**env, "CUPLUG_LOG": "info,compile=debug"}, tmp_path)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["disk"]
    assert re.search(
        r"cuplug\.compile DEBUG: env\.cu \[\w+\] loaded in \d+\.\d ms "
        r"\(cache: disk hit\)",
        second.stderr,
    ), second.stderr
    assert "INFO: compiling" not in second.stderr


def test_a_bad_cuplug_log_never_breaks_import(tmp_path):
    p = _python(
        "import cuplug; print('imported')", {"CUPLUG_LOG": "compile=loud,gpu=info"}, tmp_path
    )
    assert p.returncode == 0 and p.stdout.strip() == "imported", p.stderr
    warned = [line for line in p.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warned) == 1, p.stderr
    assert "unknown level 'loud'" in warned[0] and "unknown component 'gpu'" in warned[0]


def test_unset_cuplug_log_leaves_logging_alone(tmp_path):
    code = (
        "import logging, cuplug; "
        "print(logging.getLogger('cuplug').handlers, logging.getLogger('cuplug.compile').level)"
    )
    env = {k: v for k, v in os.environ.items() if k != "CUPLUG_LOG"}
    p = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["[]", "0"]
