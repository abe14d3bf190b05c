"""pytest setup for cuplug's Python tests: picks the CUDA driver before cuplug is imported.

Modes:
- REAL: CUPLUG_CUDA_DRIVER is unset (or names a real driver) and a CUDA driver with a device works.
- FAKE: otherwise, when the fake driver (tests/fake_driver, target cuplug_fake_cuda) is found
  ($CUPLUG_FAKE_DRIVER, $CUPLUG_BUILD_DIR/tests/fake_driver, or build*/tests/fake_driver): then
  CUPLUG_CUDA_DRIVER is set to it, so cuplug's core opens it instead of libcuda.
- NONE: no driver at all; GPU tests skip with the reason.

Markers: ``gpu`` (needs a device: runs in REAL and FAKE) and ``real_gpu`` (needs kernels that
run and real memory behaviour: REAL only).
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import fakecuda  # noqa: E402

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
    return NONE, (f"no real GPU ({why}) and the fake driver is not built "
                  f"(build target cuplug_fake_cuda, or set CUPLUG_FAKE_DRIVER)")


# Decided at import, before any test module imports cuplug (whose core opens the driver once).
DRIVER_MODE, DRIVER_DESCRIPTION = _choose_driver()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gpu: needs a CUDA device (the real one, or the fake driver when there is none)")
    config.addinivalue_line(
        "markers", "real_gpu: needs a real GPU (kernels that run, real memory behaviour); "
                   "skipped under the fake driver")


def pytest_report_header(config):
    return f"cuplug CUDA driver: {DRIVER_MODE.upper()} — {DRIVER_DESCRIPTION}"


def _skip_reason(item) -> str | None:
    if item.get_closest_marker("real_gpu") and DRIVER_MODE != REAL:
        if DRIVER_MODE == FAKE:
            return "needs a real GPU: running against the fake CUDA driver (kernels do not run)"
        return f"needs a real GPU: {DRIVER_DESCRIPTION}"
    if item.get_closest_marker("gpu") and DRIVER_MODE == NONE:
        return f"needs a CUDA device: {DRIVER_DESCRIPTION}"
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        reason = _skip_reason(item)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def driver_mode() -> str:
    """"real", "fake" or "none": which CUDA driver this session's cuplug uses."""
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
        pytest.skip(f"needs the fake CUDA driver; this session uses {DRIVER_MODE.upper()}: "
                    f"{DRIVER_DESCRIPTION}")
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
        pytest.fail("calls that crash a real GPU (the fake driver returned errors):\n  "
                    + "\n  ".join(reports), pytrace=False)


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
            f"expected {before!r}")
        if depth_before is not None:
            depth = _fake_control().context_stack_depth()
            assert depth == depth_before, (
                f"the driver's context stack is {depth} deep after the test, was {depth_before}")
