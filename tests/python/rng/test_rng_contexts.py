"""What the rng wing keeps per context goes with the context (issue 24: a cuRAND generator that
outlived its context made every later cuRAND call of the process fail). The stream's generators
are followed through a hundred contexts by compat/test_context_cycles.py; here the Sobol
generators' default tables, one copy per context. Runs on the fake driver (the cuRAND tables are
host data, the kernels compile with NVRTC and load into the fake) and on a real GPU."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from support import sanitizer

import cuplug.driver as drv
from cuplug import curandom
from cuplug._driver import context_cache

pytestmark = pytest.mark.gpu


def _sobol_tables(ctx):
    return {k: v for k, v in context_cache.entries(ctx).items() if k[0] == "sobol table"}


def test_sobol_default_tables_are_one_copy_per_context_and_go_with_it():
    sanitizer.skip_if_frames_held()
    if curandom.get_curand_version() is None:
        pytest.skip("the curand rng backend is not loaded here")
    drv.init()
    copies = []
    for _ in range(3):
        ctx = drv.Device(0).make_context()
        try:
            first = curandom.Sobol32RandomNumberGenerator()
            second = curandom.Sobol32RandomNumberGenerator()
            scrambled = curandom.ScrambledSobol64RandomNumberGenerator()
            # The two Sobol32 generators read the same copy of cuRAND's vectors.
            assert first._tables[0] is second._tables[0]
            vectors = first._tables[0]
            assert vectors.dtype == np.uint32 and vectors.shape[1] == 32
            assert vectors.shape[0] == min(first.generator_count, 20000)
            tables = _sobol_tables(ctx)
            # Sobol32's vectors; scrambled Sobol64's vectors and constants.
            assert len(tables) == 3, sorted(tables)
            assert any(t is vectors for t in tables.values())
            copies.append(weakref.ref(vectors))
            del first, second, scrambled, vectors, tables
        finally:
            drv.Context.pop()
            ctx.detach()
        gc.collect()
        assert copies[-1]() is None, "a Sobol table outlived its context"
