"""cuRAND 10.3.1 (CUDA 12.0, the oldest the `cu12` extra allows) leaves the last count % 4 values
of a Philox call unwritten at offsets that are nonzero multiples of 4, and says success
(plugins/rng_curand/curand_generators.hpp); the curand plugin goes around it. Here on that very
library: NVIDIA's nvidia-curand-cu12 10.3.1 wheel, looked for in the site folder
$CUPLUG_CURAND_OLD_SITE (``pip install --target``), which .ci/run fills (with
CUPLUG_REQUIRE_CU12=1 its absence fails). Host generators: no GPU needed. A fresh interpreter,
since cuRAND is opened once per process: the fake driver posing as CUDA 12.4 makes cuplug take the
CUDA 12 cuRAND from that site."""

from __future__ import annotations

import json
import os
import sys

import pytest
from support import fakecuda
from support.subprocesses import run_python

CODE = """
    import json
    import numpy as np
    from cuplug import _core

    def host(name, **options):
        return _core.rng.create(name, {"memory": "host", **options})

    def draw(g, offset, distribution, dtype, count):
        g.offset = offset
        return draw_on(g, distribution, dtype, count)

    def draw_on(g, distribution, dtype, count):  # at the offset g has reached
        out = np.full(count, 7, dtype)
        params = {"mean": 0.0, "stddev": 1.0} if "normal" in distribution else {}
        g.generate(distribution, np.dtype(dtype).name, out.ctypes.data, count, **params)
        return out.tobytes().hex(), g.offset

    ref = host("philox")
    auto = host("curand", generator="philox")
    legacy = host("curand", generator="philox", ordering="legacy")  # the same values, same fault
    never = host("curand", generator="philox", split_tails="never")
    cases = [(offset, distribution, dtype, count)
             for offset in (4, 8, 1016, 65540)
             for distribution, dtype, counts in (("uniform", "float32", (1, 3, 5)),
                                                 ("raw_bits", "uint32", (2, 7)),
                                                 ("normal", "float64", (2, 6)),
                                                 ("lognormal", "float32", (2, 10)))
             for count in counts]
    out = {"version": auto.library_version, "auto_wrong": [], "never_wrong": 0}
    for case in cases:
        want = draw(ref, *case)
        for g in (auto, legacy):
            if draw(g, *case) != want:
                out["auto_wrong"].append(repr(case))
        out["never_wrong"] += draw(never, *case) != want
    out["cases"] = len(cases)
    # A sequence of calls as in test_rng_gpu.py's bit-for-bit test, starting afresh after each
    # float64 call (what the plugin promises there), against the philox plugin's host path.
    out["sequence_wrong"] = []
    # (counts past 65536 groups of 4: a float64 call's mark on cuRAND's 65536 streams shows)
    calls = [("raw_bits", "uint32", (1 << 22) + 3), ("uniform", "float32", 1000001),
             ("uniform", "float64", 262147), ("normal", "float32", (1 << 21) + 2),
             ("normal", "float64", 300002), ("lognormal", "float32", 65538),
             ("lognormal", "float64", 6), ("uniform", "float32", 5)]
    for seed in (0, 2**64 - 1):
        for g in (ref, auto):
            g.seed(seed)
        for distribution, dtype, count in calls:
            if draw_on(ref, distribution, dtype, count) != draw_on(auto, distribution, dtype,
                                                                    count):
                out["sequence_wrong"].append(repr((seed, distribution, dtype, count)))
            if dtype == "float64":
                for g in (ref, auto):
                    g.offset = g.offset
    print(json.dumps(out))
"""


def test_curands_philox_of_cuda_12_0_gives_every_value(tmp_path):
    site = os.environ.get("CUPLUG_CURAND_OLD_SITE", "")
    if not (
        site and os.path.isfile(os.path.join(site, "nvidia", "curand", "lib", "libcurand.so.10"))
    ):
        why = (
            "cuRAND 10.3.1 is not installed: pip install --target DIR "
            "'nvidia-curand-cu12==10.3.1.*', then CUPLUG_CURAND_OLD_SITE=DIR"
        )
        if os.environ.get("CUPLUG_REQUIRE_CU12") == "1":
            pytest.fail(why)
        pytest.skip(why)
    out = run_python(
        CODE,
        tmp_path,
        drop=("CUDAToolkit_ROOT", "CUDA_PATH", "CUDA_HOME", "CUDA_ROOT", "CUPLUG_TOOLKIT_WHEELS"),
        PYTHONPATH=os.pathsep.join(p for p in [*sys.path, site] if p),
        CUPLUG_CUDA_DRIVER=fakecuda.fake_driver_or_skip(),
        FAKE_CUDA_DRIVER_VERSION="12040",
    )
    out = json.loads(out.strip().splitlines()[-1])
    assert out["version"] == 10301, out  # the library with the fault, not another one
    assert out["never_wrong"] > out["cases"] // 2, (
        out
    )  # the fault is there without the plugin's way
    assert out["auto_wrong"] == [], out  # and with it, every value is one call's
    assert out["sequence_wrong"] == [], out  # and calls in a row give the plugin's values
