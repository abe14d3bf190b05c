"""PyCUDA's driver names cuplug lacked (issue 24, part B): start_profiler / stop_profiler
(cuProfilerStart / Stop through the driver table), initialize_profiler (removed in CUDA 12),
have_gl_ext, and the cuRAND names PyCUDA's _driver exports."""

from __future__ import annotations

import pytest

import cuplug.driver as drv

# ---- driver --------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_profiler_start_and_stop(ctx, fake):
    drv.start_profiler()
    drv.stop_profiler()
    fake.fail_next("cuProfilerStart", 5)  # CUDA_ERROR_PROFILER_DISABLED
    with pytest.raises(drv.Error, match="cuProfilerStart failed"):
        drv.start_profiler()


def test_initialize_profiler_says_cuda_12_removed_it():
    with pytest.raises(drv.NotSupportedError, match="removed in CUDA 12.*start_profiler"):
        drv.initialize_profiler("cfg", "out.csv", drv.profiler_output_mode.CSV)


def test_have_gl_ext_tells_whether_pycuda_gl_imports():
    from cuplug import plugins

    assert drv.have_gl_ext() is (plugins.unavailable_reason("interop") is None)
    if drv.have_gl_ext():
        import cuplug.gl  # noqa: F401
    else:
        with pytest.raises(ImportError):
            import cuplug.gl  # noqa: F401


def test_curand_names_in_driver_as_pycudas_driver_exports_them():
    from cuplug import curandom

    assert drv.get_curand_version() == curandom.get_curand_version()
    assert drv.direction_vector_set is curandom.direction_vector_set
    assert {"start_profiler", "have_gl_ext", "get_curand_version"} <= set(dir(drv))
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        drv.no_such_name  # noqa: B018
