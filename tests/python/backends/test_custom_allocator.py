"""The out-of-tree example plugin (examples/custom_allocator): built with CMake against an
installed cuplug SDK (find_package(cuplug) + cuplug_add_plugin()), loaded by path and by name
through CUPLUG_PLUGIN_PATH, and run through the allocator contract.

The SDK comes from $CUPLUG_SDK_PREFIX, else the installed package's own (a wheel carries
cuplug/cmake), else `cmake --install` of the build tree cuplug was imported from."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from test_allocator_contract import CONTRACT, Case

import cuplug
import cuplug.memory as memory
import cuplug.plugins

REPO = pathlib.Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "custom_allocator"
PACKAGE = pathlib.Path(cuplug.__file__).resolve().parent


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def _sdk_config_dir(tmp: pathlib.Path) -> pathlib.Path:
    """The folder holding cuplugConfig.cmake of an installed SDK."""
    if os.environ.get("CUPLUG_SDK_PREFIX"):
        prefix = pathlib.Path(os.environ["CUPLUG_SDK_PREFIX"])
        found = sorted(prefix.glob("**/cuplugConfig.cmake"))
        if not found:
            pytest.fail(f"CUPLUG_SDK_PREFIX={prefix} holds no cuplugConfig.cmake")
        return found[0].parent
    if (PACKAGE / "cmake" / "cuplugConfig.cmake").is_file():  # installed from a wheel
        return PACKAGE / "cmake"
    build = PACKAGE.parents[1]
    if not (build / "CMakeCache.txt").is_file():
        pytest.skip(
            f"cuplug at {PACKAGE} is neither a build tree nor an installed SDK; set "
            "CUPLUG_SDK_PREFIX to an install prefix"
        )
    prefix = tmp / "prefix"
    proc = _run(["cmake", "--install", str(build), "--prefix", str(prefix)])
    if proc.returncode != 0:
        if "cannot find" in proc.stderr:  # a partial build: some installed target not built
            pytest.skip(
                "the build tree is not fully built, so it cannot be installed: "
                + proc.stderr.strip().splitlines()[-1]
            )
        pytest.fail(f"cmake --install {build} failed:\n{proc.stdout}\n{proc.stderr}")
    return prefix / "lib" / "cmake" / "cuplug"


@pytest.fixture(scope="module")
def arena_plugin(tmp_path_factory) -> pathlib.Path:
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    tmp = tmp_path_factory.mktemp("custom_allocator")
    config_dir = _sdk_config_dir(tmp)
    build = tmp / "build"
    configure = [
        "cmake",
        "-S",
        str(EXAMPLE),
        "-B",
        str(build),
        f"-Dcuplug_DIR={config_dir}",
        "-DCMAKE_BUILD_TYPE=Release",
    ]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    for cmd in (configure, ["cmake", "--build", str(build)]):
        proc = _run(cmd)
        assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"
    plugin = build / "libarena_allocator.so"
    assert plugin.is_file(), f"the example built no {plugin.name}: {sorted(os.listdir(build))}"
    return plugin


@pytest.fixture(scope="module")
def arena(arena_plugin) -> str:
    info = cuplug.plugins.load(arena_plugin)
    assert (info.name, info.kind) == ("arena", "allocator")
    assert os.path.samefile(info.path, arena_plugin)
    return info.name


def test_loads_by_path_with_its_manifest(arena, arena_plugin):
    info = next(p for p in cuplug.plugins.available("allocator") if p.name == arena)
    assert info.version == "1.0" and "slab" in info.description
    candidate = next(
        c for c in cuplug.plugins.diagnostics() if c.path and os.path.samefile(c.path, arena_plugin)
    )
    assert candidate.state == "loaded"


def test_loads_by_name_from_cuplug_plugin_path(arena_plugin):
    env = dict(os.environ, CUPLUG_PLUGIN_PATH=str(arena_plugin.parent))
    script = (
        "import cuplug, cuplug.memory as m\n"
        "a = m.create('arena', upstream='host', slab_size='1MiB', report=True)\n"
        "p = a.allocate(1000); a.deallocate(p, 1000)\n"
        "print(next(i.source for i in cuplug.plugins.available('allocator')"
        " if i.name == 'arena'), a.kind, m.stats(a)['allocations'])\n"
        "del a\n"
    )
    proc = _run([sys.executable, "-c", script], env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["CUPLUG_PLUGIN_PATH", "host", "1"]
    # Its own statistics, reported when it is destroyed.
    assert "arena: slab 1048576 bytes, high water 1024 bytes, 1 resets" in proc.stderr


def test_options_are_checked(arena):
    with pytest.raises(cuplug._core.ConfigError, match="unknown option 'slab'"):
        memory.create(arena, upstream="host", slab="1MiB")
    with pytest.raises(cuplug._core.ConfigError, match="slab_size"):
        memory.create(arena, upstream="host", slab_size="0")


def test_the_slab_is_reused_once_empty(arena):
    a = memory.create(arena, upstream="host", slab_size="4KiB")
    first = [a.allocate(1000) for _ in range(4)]
    with pytest.raises(cuplug._core.MemoryError, match="the slab is full"):
        a.allocate(1000)
    for p in first:
        a.deallocate(p, 1000)
    assert a.allocate(1000) == first[0]  # everything was freed: back to the front
    assert memory.stats(a)["bytes_held"] == 4096 - 1024


@pytest.mark.parametrize("check", CONTRACT, ids=lambda f: f.__name__[len("check_") :])
def test_contract_over_host_memory(arena, check):
    check(Case(lambda: memory.create(arena, upstream="host", slab_size="64MiB"), "host"))


@pytest.mark.gpu
@pytest.mark.parametrize("check", CONTRACT, ids=lambda f: f.__name__[len("check_") :])
def test_contract_over_device_memory(arena, check, ctx):
    check(Case(lambda: memory.create(arena, slab_size="64MiB"), "device", gpu=True))
