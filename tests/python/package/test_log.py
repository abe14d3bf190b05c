"""The `cuplug` logger: what the core's backend selection and compile cache decided, at debug
level, only when asked for (clean-up warnings: driver/test_stream_event.py)."""

import logging
import uuid

import pytest

import cuplug
import cuplug.driver as drv

pytestmark = pytest.mark.gpu


def cuplug_messages(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "cuplug"]


def test_backend_selection_and_compiles_log_at_debug_level(ctx, caplog, tmp_path, monkeypatch):
    from cuplug.compiler import SourceModule

    monkeypatch.setenv("CUPLUG_CACHE_DIR", str(tmp_path))
    source = f"__global__ void k_{uuid.uuid4().hex}(float *x) {{ }}"
    with caplog.at_level(logging.DEBUG, logger="cuplug"):
        with cuplug.using(allocator="pool"):
            drv.mem_alloc(256).free()
        SourceModule(source)
    messages = cuplug_messages(caplog)
    assert any("allocator backend 'pool' (selected by " in m for m in messages), messages
    assert any(m.startswith("compile cache: compiled ") for m in messages), messages


def test_nothing_is_logged_below_the_level_asked_for(ctx, caplog):
    from cuplug.compiler import SourceModule

    with caplog.at_level(logging.WARNING, logger="cuplug"):
        with cuplug.using(allocator="pool"):
            drv.mem_alloc(256).free()
        SourceModule(f"__global__ void k_{uuid.uuid4().hex}(float *x) {{ }}")
    assert cuplug_messages(caplog) == []
