"""cuplug on every driver it supports, CUDA 12.0 (R525) and newer: the fake driver posing as CUDA
12.0, 12.4, 12.8 and 13.0 (FAKE_CUDA_DRIVER_VERSION), each in a fresh interpreter because the
driver is opened once per process. Import, contexts, streams, memory and launches work on each;
the calls whose CUDA 13 form the driver lacks go through the older form (the fake counts those
calls); PTX newer than the driver's PTX ISA is refused by the driver, not by cuplug.

tests/cpp/core/test_driver_versions.cpp checks the entry points one by one (shims, refusals,
the not_supported texts); ``python -m cuplug info``'s report is in package/test_info.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from support import fakecuda

VERSIONS = [12000, 12040, 12080, 13000]

SCRIPT = textwrap.dedent(
    """
    import ctypes, json, os, sys
    import numpy as np
    import cuplug, cuplug.driver as cuda  # nothing at import may depend on the driver's version

    fake = ctypes.CDLL(os.environ["CUPLUG_CUDA_DRIVER"])
    fake.fake_cuda_form_calls.restype = ctypes.c_ulonglong
    fake.fake_cuda_launch_count.restype = ctypes.c_ulonglong

    def older_calls(name, version):
        return fake.fake_cuda_form_calls(name.encode(), version)

    PTX = '''
    .version {ptx}
    .target sm_90
    .address_size 64
    .visible .entry fill(.param .u64 p, .param .u32 n) {{ ret; }}
    '''

    out = {"version": cuda.get_driver_version()}
    cuda.init()
    ctx = cuda.Device(0).make_context()
    try:
        out["device"] = cuda.Context.get_device().name()
        stream = cuda.Stream()
        a = np.arange(64, dtype=np.float32)
        d = cuda.mem_alloc(a.nbytes)
        cuda.memcpy_htod_async(d, a, stream)
        b = np.empty_like(a)
        cuda.memcpy_dtoh_async(b, d, stream)
        stream.synchronize()
        out["round_trip"] = bool((a == b).all())
        module = cuda.module_from_buffer(PTX.format(ptx="8.0").encode())
        fill = module.get_function("fill")
        before = fake.fake_cuda_launch_count()
        fill(d, np.uint32(64), block=(64, 1, 1), grid=(1, 1), stream=stream)
        cuda.Context.synchronize()
        out["launches"] = fake.fake_cuda_launch_count() - before
        try:
            cuda.module_from_buffer(PTX.format(ptx="9.0").encode())
            out["ptx_9_0"] = "loaded"
        except cuda.Error as e:
            out["ptx_9_0"] = f"{type(e).__name__}: {e}"
        out["older_forms"] = {
            "cuCtxCreate": older_calls("cuCtxCreate", 3020),
            "cuCtxSynchronize": older_calls("cuCtxSynchronize", 2000),
            "cuCtxGetDevice": older_calls("cuCtxGetDevice", 2000),
        }
    finally:
        ctx.pop()
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def fake_path() -> str:
    return fakecuda.fake_driver_or_skip()


def run_as(fake_path: str, version: int) -> dict:
    env = dict(os.environ)
    env.update(
        CUPLUG_CUDA_DRIVER=fake_path, FAKE_CUDA_DRIVER_VERSION=str(version), CUPLUG_CONFIG=""
    )
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"as CUDA {version}:\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("version", VERSIONS)
def test_cuplug_works_on_the_driver(fake_path, version):
    out = run_as(fake_path, version)
    assert out["version"] == version
    assert out["device"] == "cuplug fake device"
    assert out["round_trip"] is True
    assert out["launches"] == 1
    # Context creation without parameters, synchronize and get-device of the current context:
    # the CUDA 13 forms on a 13.0 driver, the older forms behind the shims before.
    older = out["older_forms"]
    assert (older["cuCtxCreate"] > 0) == (version < 12050), older
    assert (older["cuCtxSynchronize"] > 0) == (version < 13000), older
    assert (older["cuCtxGetDevice"] > 0) == (version < 13000), older
    # PTX ISA 9.0 is CUDA 13.0's: an older driver refuses it itself.
    if version < 13000:
        assert out["ptx_9_0"].startswith(
            "LogicError: cuModuleLoadDataEx failed: the provided PTX was compiled with an "
            "unsupported toolchain."
        ), out["ptx_9_0"]
        assert "Unsupported .version 9.0" in out["ptx_9_0"]
    else:
        assert out["ptx_9_0"] == "loaded"


def test_a_version_the_fake_cannot_pose_as_is_named(fake_path):
    env = dict(os.environ, CUPLUG_CUDA_DRIVER=fake_path, FAKE_CUDA_DRIVER_VERSION="11080")
    proc = subprocess.run(
        [sys.executable, "-c", "import cuplug.driver as c; c.get_driver_version()"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    assert "FAKE_CUDA_DRIVER_VERSION=11080 is not a CUDA version" in proc.stderr
