"""The hooks the package hands the extension (cuplug._core._register_hooks, python/src/hooks.hpp):
one registration function with a fixed set of names, each registered by its provider module at
import, instead of the extension importing package modules by name (issue 25).

What is checked: every hook is registered by the module that owns it, and ``import cuplug`` alone
registers none (the wings stay lazy); unknown names and values of the wrong kind are refused
before anything is stored; a registration reaches the C++ code that uses it; and C++ code that
needs a hook nobody registered raises a RuntimeError naming the module to import. The last needs
a device: the fake driver in CI."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import cuplug.driver  # noqa: F401  (registers the _driver hooks and the DLPack pointer hook)
import cuplug.gpuarray  # noqa: F401  (registers the _array hooks)
from cuplug import _core

HOOKS = {
    "argument_handler",
    "describe_memory",
    "context_destroyed",
    "kernel_argument_pointer",
    "result_type",
    "dispatch_resolver",
    "dispatch_fallback",
    "legacy_promotion",
    "blocks_per_sm",
}


def test_each_hook_is_registered_by_its_provider():
    from cuplug._array import core, interop, math
    from cuplug._driver import arguments, context_cache, textures
    from cuplug._kernels import engine

    hooks = _core._registered_hooks()
    assert set(hooks) == HOOKS
    assert hooks["argument_handler"] is arguments.ArgumentHandler
    assert hooks["describe_memory"] is textures.describe_memory
    assert hooks["context_destroyed"] is context_cache.drop
    assert hooks["kernel_argument_pointer"] is interop.kernel_argument_pointer
    assert hooks["result_type"] is core.GPUArray
    assert hooks["dispatch_resolver"] is math._resolve
    assert hooks["dispatch_fallback"] is math._fallback
    assert isinstance(hooks["legacy_promotion"], bool)
    # Registered when CUPLUG_ARRAY_TUNE sets blocks=; the launch geometry uses it, else 2**24.
    assert _core._array.get_blocks_per_sm() == engine.TUNING.get("blocks", 1 << 24)


def test_the_docstring_lists_every_hook_and_its_provider():
    doc = _core._register_hooks.__doc__
    for name in HOOKS:
        assert f"  {name} (" in doc, name
    assert "from cuplug._driver.arguments)" in doc


def test_unknown_names_are_refused_with_the_list_of_hooks():
    with pytest.raises(TypeError, match=r"unknown hook 'argument_handlers'; the hooks are: "):
        _core._register_hooks(argument_handlers=object)
    with pytest.raises(TypeError, match=r"the hooks are: argument_handler, describe_memory, "):
        _core._register_hooks(no_such_hook=1)


@pytest.mark.parametrize(
    ("name", "value", "error", "message"),
    [
        ("argument_handler", object(), TypeError, r"argument_handler must be a class"),
        ("describe_memory", 3, TypeError, r"describe_memory must be a callable .*got int"),
        ("result_type", np.ndarray, TypeError, r"result_type must be a subclass of .*ArrayBase"),
        ("legacy_promotion", 1, TypeError, r"legacy_promotion must be a bool"),
        ("blocks_per_sm", True, TypeError, r"blocks_per_sm must be an int of at least 1"),
        ("blocks_per_sm", 2.0, TypeError, r"blocks_per_sm must be an int"),
        ("blocks_per_sm", 0, ValueError, r"blocks_per_sm must be at least 1, got 0"),
    ],
)
def test_values_of_the_wrong_kind_are_refused(name, value, error, message):
    before = _core._registered_hooks()[name]
    with pytest.raises(error, match=message):
        _core._register_hooks(**{name: value})
    assert _core._registered_hooks()[name] is before


def test_a_refused_call_registers_nothing():
    before = _core._registered_hooks()
    with pytest.raises(TypeError, match="unknown hook"):
        _core._register_hooks(blocks_per_sm=5, no_such_hook=1)
    with pytest.raises(TypeError, match="dispatch_fallback must be a callable"):
        _core._register_hooks(blocks_per_sm=5, dispatch_fallback=None)
    assert _core._registered_hooks() == before


def test_a_registration_reaches_the_code_that_uses_it():
    """blocks_per_sm is copied into the launch geometry; registering dispatch hooks again
    forgets what the previous ones resolved."""
    before = _core._array.get_blocks_per_sm()
    try:
        _core._register_hooks(blocks_per_sm=5)
        assert _core._array.get_blocks_per_sm() == 5
    finally:
        _core._register_hooks(blocks_per_sm=before)
    assert _core._array.get_blocks_per_sm() == before

    hooks = _core._registered_hooks()
    _core._register_hooks(dispatch_resolver=hooks["dispatch_resolver"])
    assert _core._array.dispatch_cache_size() == 0


# ---- a process that imports the extension alone ----------------------------------------------

ALONE = """
import json, numpy as np
import cuplug._core as core
report = {"registered": sorted(k for k, v in core._registered_hooks().items() if v is not None)}
report["modules"] = sorted(m for m in __import__("sys").modules
                           if m.startswith(("cuplug._driver", "cuplug._array", "cuplug.driver")))
core.init()
ctx = core.Device(0).make_context()
memory = core.mem_alloc(256)
def error(call):
    try:
        call()
    except RuntimeError as e:
        return str(e)
    return "no error"
report["texture"] = error(lambda: core.TextureObject(
    memory, format=core.array_format.FLOAT, num_channels=1, size_in_bytes=256))
a = core._array.ArrayBase((4,), np.float32, gpudata=int(memory))
report["add"] = error(lambda: a + a)
ctx.pop()
print(json.dumps(report))
"""


@pytest.mark.gpu
def test_a_hook_nobody_registered_names_the_module_to_import():
    run = subprocess.run(
        [sys.executable, "-c", ALONE],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout.splitlines()[-1])
    # `import cuplug` (which importing the extension runs) imports no wing that registers one.
    assert report["registered"] == [] and report["modules"] == [], report
    assert "needs the 'describe_memory' hook" in report["texture"], report
    assert "import cuplug._driver.textures" in report["texture"], report
    assert "elementwise operation on arrays needs the 'dispatch_resolver' hook" in report["add"]
    assert "import cuplug._array.math" in report["add"], report
