"""PyCUDA's exception classes and the translation of driver failures into them (spec §1.1)."""

import builtins

import pytest

import cuplug.driver as drv

# CUresult values (cuda.h).
INVALID_VALUE = 1
OUT_OF_MEMORY = 2
ECC_UNCORRECTABLE = 214
LAUNCH_FAILED = 719
UNKNOWN = 999


def test_class_hierarchy():
    for cls in (drv.LogicError, drv.LaunchError, drv.MemoryError, drv.RuntimeError):
        assert issubclass(cls, drv.Error)
    for cls in (drv.CompileError, drv.PluginError, drv.NotSupportedError, drv.ConfigError):
        assert issubclass(cls, drv.Error)
    assert issubclass(drv.Error, Exception)
    # Not the builtins of the same name, but subclasses of them (PyCUDA's are not: compat.md),
    # so that `except MemoryError` / `except RuntimeError` catch them, as with CuPy and PyTorch.
    assert drv.MemoryError is not builtins.MemoryError
    assert drv.RuntimeError is not builtins.RuntimeError
    assert issubclass(drv.MemoryError, builtins.MemoryError)
    assert issubclass(drv.RuntimeError, builtins.RuntimeError)
    assert issubclass(drv.LaunchError, builtins.RuntimeError)
    assert not issubclass(drv.LogicError, builtins.RuntimeError)  # no builtin fits
    # PyCUDA's classes stay apart: cuplug's RuntimeError does not catch a LaunchError.
    assert not issubclass(drv.LaunchError, drv.RuntimeError)
    assert issubclass(drv.ConfigError, ValueError)
    assert drv.LogicError.__module__ == "cuplug._core"


@pytest.mark.parametrize(
    "cls, builtin",
    [
        (drv.MemoryError, builtins.MemoryError),
        (drv.RuntimeError, builtins.RuntimeError),
        (drv.LaunchError, builtins.RuntimeError),
    ],
)
def test_except_builtin_catches_cuplugs_error(cls, builtin):
    try:
        raise cls("cuMemAlloc failed: out of memory")
    except builtin as e:
        caught = e
    assert type(caught) is cls and isinstance(caught, drv.Error)
    assert caught.code is None and str(caught) == "cuMemAlloc failed: out of memory"


def test_errors_not_from_the_driver_have_no_code():
    err = drv.LogicError("something")
    assert err.code is None and err.routine is None
    assert str(err) == "something"


def test_compile_error_attributes_and_str():
    err = drv.CompileError(
        "nvcc compilation of kernel.cu failed",
        ["nvcc", "-arch", "sm_90"],
        stdout="out text",
        stderr="error: oops",
    )
    assert err.msg == "nvcc compilation of kernel.cu failed"
    assert err.command_line == ["nvcc", "-arch", "sm_90"]
    assert (err.stdout, err.stderr) == ("out text", "error: oops")
    assert str(err) == (
        "nvcc compilation of kernel.cu failed\n[command: nvcc -arch sm_90]"
        "\n[stdout:\nout text]\n[stderr:\nerror: oops]"
    )
    # A command given as one string (NVRTC options) is not split into characters.
    assert str(drv.CompileError("failed", "nvrtc -arch=sm_90")) == (
        "failed\n[command: nvrtc -arch=sm_90]"
    )
    assert str(drv.CompileError("failed", None)) == "failed"
    with pytest.raises(drv.Error):
        raise drv.CompileError("x", [])


@pytest.mark.gpu
def test_launch_failure_is_launch_error_with_code_and_routine(ctx, fake):
    fake.fail_next("cuCtxSynchronize", LAUNCH_FAILED)
    with pytest.raises(drv.LaunchError) as info:
        drv.Context.synchronize()
    err = info.value
    assert err.code == LAUNCH_FAILED
    assert err.routine == "cuCtxSynchronize"
    assert str(err) == "cuCtxSynchronize failed: unspecified launch failure"
    drv.Context.synchronize()  # the process stays usable


@pytest.mark.gpu
@pytest.mark.parametrize(
    "code, cls",
    [
        (INVALID_VALUE, drv.LogicError),
        (OUT_OF_MEMORY, drv.MemoryError),
        (ECC_UNCORRECTABLE, drv.RuntimeError),
        (LAUNCH_FAILED, drv.LaunchError),
        (UNKNOWN, drv.Error),
    ],
)
def test_classification(ctx, fake, code, cls):
    fake.fail_next("cuStreamCreate", code)
    with pytest.raises(drv.Error) as info:
        drv.Stream()
    assert type(info.value) is cls
    assert info.value.code == code
    assert info.value.routine == "cuStreamCreate"
    assert str(info.value).startswith("cuStreamCreate failed: ")


@pytest.mark.gpu
@pytest.mark.parametrize(
    "code, builtin",
    [(OUT_OF_MEMORY, builtins.MemoryError), (LAUNCH_FAILED, builtins.RuntimeError)],
)
def test_driver_failures_reach_except_builtin(ctx, fake, code, builtin):
    fake.fail_next("cuStreamCreate", code)
    try:
        drv.Stream()
    except builtin as e:
        caught = e
    else:
        pytest.fail("cuStreamCreate's failure was not raised")
    assert isinstance(caught, drv.Error)
    assert (caught.code, caught.routine) == (code, "cuStreamCreate")


@pytest.mark.gpu
def test_no_context_message(driver_mode):
    drv.init()
    if drv.Context.get_current() is not None:
        pytest.skip("a context is current on this thread")
    with pytest.raises(drv.LogicError) as info:
        drv.Stream()
    assert str(info.value) == (
        "explicit_context_dependent failed: invalid device context - no currently active context?"
    )
    assert info.value.routine == "explicit_context_dependent"


@pytest.mark.gpu
def test_not_supported(ctx):
    with pytest.raises(drv.NotSupportedError, match="cuCtxAttach was removed"):
        drv.Context.attach()
