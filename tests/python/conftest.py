"""pytest setup for cuplug's Python tests: picks the CUDA driver before cuplug is imported.

Modes:
- REAL: CUPLUG_CUDA_DRIVER is unset (or names a real driver) and a CUDA driver with a device works.
- FAKE: otherwise, when the fake driver (tests/fake_driver, target cuplug_fake_cuda) is found
  ($CUPLUG_FAKE_DRIVER, $CUPLUG_BUILD_DIR/tests/fake_driver, or build*/tests/fake_driver): then
  CUPLUG_CUDA_DRIVER is set to it, so cuplug's core opens it instead of libcuda.
- NONE: no driver at all; GPU tests skip with the reason.

Markers: ``gpu`` (needs a device: runs in REAL and FAKE) and ``real_gpu`` (needs kernels that
run and real memory behaviour: REAL only).

One spelling for real-GPU tests: they live in files named ``*_gpu.py``, each marked for the whole
module (``pytestmark = pytest.mark.real_gpu``, or a list holding it), and no other file holds a
test marked ``real_gpu`` or using the real-GPU fixtures ``gpu`` / ``gpu_ctx``. Collection fails,
naming the file, when that is not so (pytest_collection_modifyitems), so that which tests run
where can be read from the file names (tests/README.md).

Results against the fake are never to be read as results on a GPU: the report header names the
driver ("cuplug CUDA driver: FAKE (tests/fake_driver) ..." or "cuplug CUDA driver: REAL — CUDA
driver 13.0, NVIDIA H200 ..."), every test that used a driver is marked ``on_fake_driver`` or
``on_real_driver`` (``pytest -m on_real_driver`` selects the GPU ones), and the terminal summary
counts outcomes per driver. The tests of tests/python/fake_driver name their driver themselves
(the ``drv`` fixture runs each behaviour on the fake and on the real driver): each counts as the
one it used, whatever this session's mode.
"""

from __future__ import annotations

import atexit
import collections
import ctypes
import faulthandler
import os
import pathlib
import signal
import sys
import threading

import pytest

# support/ holds helpers that assert (support/examples.py, support/doc_blocks.py, ...): rewritten
# like test modules so that a failing assert there shows its values too.
pytest.register_assert_rewrite("support")
from support import fakecuda, sanitizer  # noqa: E402

REAL, FAKE, NONE = "real", "fake", "none"


def _is_fake(path: str) -> bool:
    return pathlib.Path(path).name == fakecuda.LIBRARY_NAME


def _choose_driver() -> tuple[str, str]:
    """(mode, description) — sets CUPLUG_CUDA_DRIVER for FAKE mode."""
    configured = os.environ.get("CUPLUG_CUDA_DRIVER")
    if configured:
        if _is_fake(configured):
            if pathlib.Path(configured).is_file():
                return FAKE, f"{configured} (from CUPLUG_CUDA_DRIVER)"
            return NONE, f"CUPLUG_CUDA_DRIVER={configured} does not exist"
        usable, why = fakecuda.real_driver_usable(configured)
        if usable:
            return REAL, f"{configured} (from CUPLUG_CUDA_DRIVER), {why}"
        return NONE, f"CUPLUG_CUDA_DRIVER={configured} is not usable: {why}"
    usable, why = fakecuda.real_driver_usable()
    if usable:
        return REAL, f"libcuda.so.1, {why}"
    fake = fakecuda.find_fake_driver()
    if fake is not None:
        os.environ["CUPLUG_CUDA_DRIVER"] = str(fake)
        return FAKE, f"{fake} (no real GPU: {why})"
    return NONE, (
        f"no real GPU ({why}) and the fake driver is not built "
        f"(build target cuplug_fake_cuda, or set CUPLUG_FAKE_DRIVER)"
    )


def _real_driver_identity(library: str) -> str:
    """ "CUDA driver 13.0 (13000), NVIDIA H200" of a real driver, or what could not be read."""
    try:
        drv = fakecuda.Driver(library)
        drv.check("cuInit", 0)
        version = ctypes.c_int()
        drv.check("cuDriverGetVersion", ctypes.byref(version))
        device = ctypes.c_int()
        drv.check("cuDeviceGet", ctypes.byref(device), 0)
        name = ctypes.create_string_buffer(256)
        drv.check("cuDeviceGetName", name, len(name), device)
    except (OSError, AttributeError, fakecuda.CudaError) as e:
        return f"CUDA driver (version and device unreadable: {e})"
    v = version.value
    return f"CUDA driver {v // 1000}.{v % 1000 // 10} ({v}), {name.value.decode(errors='replace')}"


# Decided at import, before any test module imports cuplug (whose core opens the driver once).
DRIVER_MODE, DRIVER_DESCRIPTION = _choose_driver()
if DRIVER_MODE == REAL:
    DRIVER_DESCRIPTION = (
        _real_driver_identity(os.environ.get("CUPLUG_CUDA_DRIVER") or "libcuda.so.1")
        + f" ({DRIVER_DESCRIPTION})"
    )


# Under compute-sanitizer's memcheck a test that starts a child process skips
# (support/sanitizer.py).
UNDER_SANITIZER = DRIVER_MODE == REAL and sanitizer.under_compute_sanitizer()
if UNDER_SANITIZER and sanitizer.children_refused():
    sanitizer.refuse_children()
else:
    # A child interpreter that dies of a signal prints its Python stack (a bare "-11" from a
    # child that imported cuplug said nothing of where, H200, 2026-11-28).
    os.environ.setdefault("PYTHONFAULTHANDLER", "1")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gpu: needs a CUDA device (the real one, or the fake driver when there is none)"
    )
    config.addinivalue_line(
        "markers",
        "real_gpu: needs a real GPU (kernels that run, real memory behaviour); "
        "skipped under the fake driver",
    )
    config.addinivalue_line(
        "markers",
        "sweep: repeats another test's kernels over every dtype (pair): NumPy's semantics, not new "
        "memory accesses; tools/gpu_check.sh leaves these out of its compute-sanitizer run",
    )
    config.addinivalue_line(
        "markers",
        "alone: reads what the whole device reports (free memory), so no other process may use "
        "the GPU meanwhile; skipped on the real GPU under pytest-xdist",
    )
    config.addinivalue_line(
        "markers",
        "on_fake_driver: set by conftest.py: the test runs against the fake CUDA "
        "driver (tests/fake_driver), not a GPU",
    )
    config.addinivalue_line(
        "markers",
        "on_real_driver: set by conftest.py: the test runs against the real CUDA driver and a GPU",
    )


# SIGUSR1 prints every thread's Python stack to stderr (tools/gpu_check.sh sends it to a run that
# outlived its time, before it kills it: the GPU machine has no py-spy).
if hasattr(signal, "SIGUSR1"):
    faulthandler.register(signal.SIGUSR1, file=sys.__stderr__, all_threads=True)


def pytest_unconfigure(config):
    # A process that does not end after its tests (a thread left running, an exit handler that
    # blocks) prints where every thread stands and exits, instead of hanging the run (or, as an
    # xdist worker, the run that waits for it). Armed when the interpreter starts to shut down
    # (before it waits for threads; an xdist worker idles a while before that), so only the exit
    # itself is timed. CUPLUG_TEST_EXIT_TIMEOUT=0 turns this off.
    seconds = float(os.environ.get("CUPLUG_TEST_EXIT_TIMEOUT", "120"))
    if seconds > 0:
        # threading._register_atexit runs before non-daemon threads are joined; atexit after.
        at_exit = getattr(threading, "_register_atexit", atexit.register)
        at_exit(faulthandler.dump_traceback_later, seconds, exit=True, file=sys.__stderr__)


_HEADLINES = {
    FAKE: "FAKE (tests/fake_driver) — not a GPU: kernels do not run, nothing is timed",
    REAL: "REAL",
    NONE: "NONE — no CUDA driver: tests that need one skip",
}


def pytest_report_header(config):
    # tools/gpu_check.sh reads the word after "cuplug CUDA driver:" to make sure it is REAL.
    return f"cuplug CUDA driver: {_HEADLINES[DRIVER_MODE]} — {DRIVER_DESCRIPTION}"


# ---- which driver each test ran against ----------------------------------------------------------

_FAKE_ONLY_FIXTURES = {"fake", "fake_drv", "fake_instance", "fake_library"}
_SESSION_DRIVER_FIXTURES = {"ctx", "driver_mode"}


def _driver_of(item) -> str | None:
    """FAKE, REAL, or None for a test that uses no driver (as far as its marks and fixtures say)."""
    callspec = getattr(item, "callspec", None)
    param = callspec.params.get("drv") if callspec is not None else None
    if param in ("fake", "real"):  # tests/python/fake_driver: the test picked its driver
        return FAKE if param == "fake" else REAL
    fixtures = set(getattr(item, "fixturenames", ()))
    in_fake_driver_tests = "fake_driver" in pathlib.Path(str(item.fspath)).parts
    if in_fake_driver_tests:
        if fixtures & _FAKE_ONLY_FIXTURES:
            return FAKE
        return REAL if "real_instance" in fixtures else None
    uses_driver = (
        item.get_closest_marker("gpu") is not None
        or item.get_closest_marker("real_gpu") is not None
        or bool(fixtures & (_FAKE_ONLY_FIXTURES | _SESSION_DRIVER_FIXTURES))
    )
    if not uses_driver or DRIVER_MODE == NONE:
        return None
    return DRIVER_MODE


def _fake_only_reason() -> str:
    return (
        f"needs the fake CUDA driver; this session uses {DRIVER_MODE.upper()}: {DRIVER_DESCRIPTION}"
    )


def _skip_reason(item) -> str | None:
    if item.get_closest_marker("real_gpu") and DRIVER_MODE != REAL:
        if DRIVER_MODE == FAKE:
            return "needs a real GPU: running against the fake CUDA driver (kernels do not run)"
        return f"needs a real GPU: {DRIVER_DESCRIPTION}"
    if item.get_closest_marker("gpu") and DRIVER_MODE == NONE:
        return f"needs a CUDA device: {DRIVER_DESCRIPTION}"
    if "fake" in item.fixturenames and DRIVER_MODE != FAKE:
        # At collection, before fixtures: a fake-driver test on a real GPU made and destroyed a
        # context (its ctx fixture) only to skip in `fake`; hundreds of those in a row preceded
        # both memcheck crashes inside cuCtxDestroy (H200, 2026-11-28).
        return _fake_only_reason()
    if (
        item.get_closest_marker("alone")
        and DRIVER_MODE == REAL
        and os.environ.get("PYTEST_XDIST_WORKER")
    ):
        return (
            "needs the GPU to itself (reads device-wide free memory) and pytest-xdist runs other "
            "tests beside it: run it without -n (tools/gpu_check.sh does, after the parallel run)"
        )
    return None


# Fixtures for kernels that run (gpu_ctx skips without a real GPU; gpu is the primary context the
# _gpu modules share): a test using one, directly or through another fixture, is a real-GPU test.
_REAL_GPU_FIXTURES = {"gpu", "gpu_ctx"}


def _module_marks(module) -> list:
    marks = getattr(module.obj, "pytestmark", [])
    return marks if isinstance(marks, list) else [marks]


def _real_gpu_spelling_problems(items) -> list[str]:
    """What breaks the one real-GPU spelling, one line per file: a ``*_gpu.py`` file without the
    module mark ``real_gpu``, or another file holding a real-GPU test (marked ``real_gpu`` or
    using a fixture of _REAL_GPU_FIXTURES)."""
    problems: dict[str, str] = {}
    for item in items:
        module = item.getparent(pytest.Module)
        if module is None:
            continue
        path = module.nodeid
        if path in problems:
            continue
        if pathlib.Path(path).name.endswith("_gpu.py"):
            if not any(mark.name == "real_gpu" for mark in _module_marks(module)):
                problems[path] = (
                    f"{path}: named *_gpu.py but not marked as a whole: add "
                    f"'pytestmark = pytest.mark.real_gpu' (or a list holding it)"
                )
            continue
        fixtures = sorted(_REAL_GPU_FIXTURES & set(getattr(item, "fixturenames", ())))
        if item.get_closest_marker("real_gpu") is not None or fixtures:
            why = f"uses the fixture {fixtures[0]!r}" if fixtures else "is marked real_gpu"
            stem = pathlib.Path(path).stem
            problems[path] = (
                f"{path}: holds a real-GPU test ({item.name} {why}); real-GPU tests go in a "
                f"file named *_gpu.py marked real_gpu (e.g. {stem}_gpu.py beside it), so that no "
                f"file mixes fake-driver and real-GPU tests"
            )
    return list(problems.values())


_OUTCOMES: dict[str | None, collections.Counter] = collections.defaultdict(collections.Counter)


def _deselect_listed(config, items):
    """Leaves out the tests named in the file CUPLUG_DESELECT_FILE (node ids, one a line):
    tools/gpu_check.sh resumes a memcheck group after a crash with the tests that ran before."""
    path = os.environ.get("CUPLUG_DESELECT_FILE")
    if not path:
        return
    with open(path, encoding="utf-8") as f:
        listed = {line.rstrip("\n") for line in f if line.strip()}
    gone = [item for item in items if item.nodeid in listed]
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = [item for item in items if item.nodeid not in listed]


def pytest_collection_modifyitems(config, items):
    problems = _real_gpu_spelling_problems(items)
    if problems:
        raise pytest.UsageError(
            "real-GPU tests spelled otherwise than tests/README.md says:\n  "
            + "\n  ".join(problems)
        )
    _deselect_listed(config, items)
    for item in items:
        reason = _skip_reason(item)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
        driver = _driver_of(item)
        if driver is not None:
            item.add_marker(
                pytest.mark.on_fake_driver if driver == FAKE else pytest.mark.on_real_driver
            )
            item.user_properties.append(("cuplug_driver", driver))  # into junit XML too


def pytest_runtest_logreport(report):
    # The driver comes from the report's user properties: under pytest-xdist this runs in the
    # controller, which collected nothing, and the workers send those along.
    driver = dict(report.user_properties).get("cuplug_driver")
    outcome = None
    if hasattr(report, "wasxfail"):
        if report.when == "call" or report.skipped:
            outcome = "xfailed" if report.skipped else "xpassed"
    elif report.when == "call":
        outcome = report.outcome
    elif report.failed:
        outcome = "error"
    elif report.skipped:
        outcome = "skipped"
    if outcome is not None:
        _OUTCOMES[driver][outcome] += 1
    if UNDER_SANITIZER and report.failed:
        # Printed at once: a memcheck run cut at its time limit, or ended by a crash, never
        # reaches pytest's summary, and a failure seen only under the tool lost its message so
        # (2026-11-28).
        sys.__stderr__.write(
            f"\n--- {report.nodeid} {report.when} FAILED:\n{report.longreprtext}\n"
        )
        sys.__stderr__.flush()


def _counts(counter: collections.Counter) -> str:
    order = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
    parts = [f"{counter[k]} {k}" for k in order if counter[k]]
    return ", ".join(parts) if parts else "none"


def _ran(counter: collections.Counter) -> int:
    return sum(n for k, n in counter.items() if k != "skipped")


def pytest_terminal_summary(terminalreporter):
    if not _OUTCOMES:
        return
    fake, real, none = _OUTCOMES[FAKE], _OUTCOMES[REAL], _OUTCOMES[None]
    tr = terminalreporter
    tr.section("cuplug: results by CUDA driver")
    tr.write_line(f"against the FAKE driver (tests/fake_driver, not a GPU): {_counts(fake)}")
    real_name = DRIVER_DESCRIPTION if DRIVER_MODE == REAL else "none in this session"
    tr.write_line(f"against the REAL driver ({real_name}): {_counts(real)}")
    tr.write_line(f"needing no driver: {_counts(none)}")
    if DRIVER_MODE == REAL:
        line = f"driver: REAL {DRIVER_DESCRIPTION} — {_ran(real)} tests ran on the GPU"
        if _ran(fake):
            line += f", {_ran(fake)} against the fake driver (its own tests)"
    elif DRIVER_MODE == FAKE:
        line = (
            f"driver: FAKE (tests/fake_driver) — {_ran(fake)} tests ran against the fake "
            f"driver, none on a GPU"
        )
    else:
        line = f"driver: NONE — {DRIVER_DESCRIPTION}"
    tr.write_line(line, bold=True)


@pytest.fixture(scope="session")
def driver_mode() -> str:
    """ "real", "fake" or "none": which CUDA driver this session's cuplug uses."""
    return DRIVER_MODE


_FAKE_CONTROL: fakecuda.FakeCuda | None = None


def _fake_control() -> fakecuda.FakeCuda:
    # The same library file cuplug's core opened: dlopen hands back the same instance, so the
    # control API sees cuplug's state.
    global _FAKE_CONTROL
    if _FAKE_CONTROL is None:
        _FAKE_CONTROL = fakecuda.FakeCuda(os.environ["CUPLUG_CUDA_DRIVER"])
    return _FAKE_CONTROL


@pytest.fixture
def fake() -> fakecuda.FakeCuda:
    """The fake driver's control API (fault injection, recorded launches); FAKE mode only.

    Faults, recorded launches and the in-process IPC switch are cleared before and after the
    test; nothing else is reset, so cuplug's contexts and allocations stay valid.
    """
    if DRIVER_MODE != FAKE:
        pytest.skip(_fake_only_reason())
    control = _fake_control()

    def clear():
        control.clear_faults()
        control.clear_launches()
        control.set_ipc_in_process(False)

    clear()
    yield control
    clear()


@pytest.fixture(autouse=True)
def _no_undefined_behaviour():
    """Under the fake, fails a test that made a call the real driver does not survive (a
    destroyed or made-up handle, a device address used as host memory): the fake answers those
    with an error, a GPU crashes. A test doing it on purpose takes the reports itself
    (fake.take_undefined_behaviour())."""
    if DRIVER_MODE != FAKE:
        yield
        return
    control = _fake_control()
    control.take_undefined_behaviour()
    yield
    reports = control.take_undefined_behaviour()
    if reports:
        pytest.fail(
            "calls that crash a real GPU (the fake driver returned errors):\n  "
            + "\n  ".join(reports),
            pytrace=False,
        )


@pytest.fixture(scope="module")
def gpu_ctx(driver_mode):
    """A context for the whole module on a real GPU (kernels load once)."""
    if driver_mode != "real":
        pytest.skip("needs a real GPU (kernels that run)")
    import cuplug.driver as drv

    drv.init()
    ctx = drv.Device(0).make_context()
    try:
        yield ctx
    finally:
        drv.Context.pop()
        ctx.detach()


@pytest.fixture
def ctx(driver_mode):
    """A fresh context (Device(0).make_context()), popped and detached afterwards.

    Teardown checks the calling thread's context stack is back to where it was before the test.
    """
    if driver_mode == NONE:
        pytest.skip(f"needs a CUDA device: {DRIVER_DESCRIPTION}")
    import cuplug.driver as cuda

    cuda.init()
    before = cuda.Context.get_current()
    depth_before = _fake_control().context_stack_depth() if driver_mode == FAKE else None
    context = cuda.Device(0).make_context()
    try:
        yield context
    finally:
        cuda.Context.pop()
        context.detach()
        after = cuda.Context.get_current()
        assert after == before, (
            f"the test left the context stack changed: current context {after!r}, "
            f"expected {before!r}"
        )
        if depth_before is not None:
            depth = _fake_control().context_stack_depth()
            assert depth == depth_before, (
                f"the driver's context stack is {depth} deep after the test, was {depth_before}"
            )


@pytest.fixture(scope="module")
def gpu():
    """The primary context of device 0, pushed for the whole module: the context CuPy, PyTorch and
    other libraries use, so pointers are shared and kernels load once. For real-GPU modules only
    (``*_gpu.py``, marked ``real_gpu``: collection refuses it elsewhere, see
    pytest_collection_modifyitems)."""
    import cuplug.driver as drv

    drv.init()
    context = drv.Device(0).retain_primary_context()
    context.push()
    yield
    drv.Context.pop()
