"""The SDK of a pip-installed cuplug, as a user gets it (docs/plugins.md, "Building against a pip
installed cuplug"): a fresh venv, the wheel installed into it, then `pip install "<wheel>[sdk]"`,
then examples/custom_allocator configured and built with `-Dcuplug_DIR=<package>/cmake`, and the
plugin loaded from that venv's Python.

Nothing of the build's own environment may help: the venv is made from the base interpreter
without system site-packages, the build venv's bin/ is taken off PATH, PYTHONPATH and the user
site are cleared, and CMake is told to ignore /usr/include and /usr/local/include (a system Boost).
The Boost headers found must be the ones the `sdk` extra put into the venv, and without the extra
the configure must stop with cuplug's message naming it.

Needs a built wheel: $CUPLUG_WHEEL (the .whl, or a folder holding one cuplug-*.whl; .ci/run sets
it to the wheel tools/build_wheel.sh made), and PyPI (numpy, boost-headers). Skipped without
CUPLUG_WHEEL: building a wheel takes 5 to 7 minutes on 2 cores."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "custom_allocator"
CMAKE = shutil.which("cmake")
NINJA = shutil.which("ninja")
# What a system Boost would be found in by find_path; the configure must not look there.
SYSTEM_INCLUDES = ("/usr/include", "/usr/local/include")
SDK_MESSAGE = (
    "need the `sdk` extra. Install it into that environment with "
    '`python -m pip install "cuplug[sdk]"`'
)

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("CUPLUG_WHEEL"),
        reason="set CUPLUG_WHEEL to a built wheel (tools/build_wheel.sh; .ci/run does)",
    ),
    pytest.mark.skipif(CMAKE is None, reason="needs cmake"),
]


def _wheel() -> pathlib.Path:
    given = pathlib.Path(os.environ["CUPLUG_WHEEL"])
    wheels = sorted(given.glob("cuplug-*.whl")) if given.is_dir() else [given]
    if len(wheels) != 1 or not wheels[0].is_file():
        pytest.fail(f"CUPLUG_WHEEL={given} is not one cuplug wheel (found {wheels})")
    return wheels[0]


def _user_env(venv: pathlib.Path) -> dict[str, str]:
    """The environment of a user with `venv` activated: its bin/ first on PATH, and none of the
    test run's Python (whose venv has boost-headers) or PYTHONPATH (the build tree)."""
    own_bins = set()
    if sys.prefix != sys.base_prefix:  # a venv's bin/ (never /usr/bin, which has the compiler)
        own_bins = {os.path.dirname(sys.executable), os.path.join(sys.prefix, "bin")}
    path = [str(venv / "bin")] + [
        d for d in os.environ.get("PATH", "").split(os.pathsep) if d and d not in own_bins
    ]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "CMAKE_PREFIX_PATH", "CPATH", "CPLUS_INCLUDE_PATH")
        and not k.startswith("CUPLUG_")
    }
    env.update(PATH=os.pathsep.join(path), VIRTUAL_ENV=str(venv), PYTHONNOUSERSITE="1")
    return env


def _run(cmd, env, cwd, timeout=900):
    proc = subprocess.run(
        [str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    return proc.returncode, proc.stdout + proc.stderr


def _check(cmd, env, cwd, timeout=900) -> str:
    rc, out = _run(cmd, env, cwd, timeout)
    assert rc == 0, f"{' '.join(map(str, cmd))} failed ({rc}):\n{out}"
    return out


def _configure(venv, env, tmp, build) -> tuple[int, str]:
    """The configure docs/plugins.md shows, with the system's include folders ignored."""
    python = venv / "bin" / "python"
    package = _check(
        [python, "-c", "import cuplug, os; print(os.path.dirname(cuplug.__file__))"], env, tmp
    ).strip()
    cmd = [
        CMAKE,
        "-S",
        EXAMPLE,
        "-B",
        build,
        f"-Dcuplug_DIR={package}/cmake",
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_IGNORE_PATH={';'.join(SYSTEM_INCLUDES)}",
    ]
    if NINJA:
        cmd += ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={NINJA}"]
    rc, out = _run(cmd, env, tmp)
    return rc, " ".join(out.split())  # CMake breaks its messages across lines


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory):
    """(venv, env, tmp, the configure's (rc, output) before the `sdk` extra was installed)."""
    tmp = tmp_path_factory.mktemp("sdk_from_wheel")
    wheel = _wheel()
    base = os.path.join(sys.base_prefix, "bin", "python3")
    venv = tmp / "venv"
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    _check([base, "-m", "venv", venv], clean, tmp)
    env = _user_env(venv)
    python = venv / "bin" / "python"
    rc, _ = _run([python, "-c", "import boost_headers"], env, tmp)
    assert rc != 0, f"the fresh venv {venv} already sees a boost_headers package"
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _check([*pip, wheel], env, tmp)
    before = _configure(venv, env, tmp, tmp / "build-without-sdk")
    return venv, env, tmp, wheel, before


@pytest.fixture(scope="module")
def sdk_build(user_venv):
    """Installs the `sdk` extra as docs/plugins.md says, then configures and builds the example:
    (configure output, the built plugin)."""
    venv, env, tmp, wheel, _ = user_venv
    python = venv / "bin" / "python"
    _check(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{wheel}[sdk]"],
        env,
        tmp,
    )
    build = tmp / "build-arena"
    rc, out = _configure(venv, env, tmp, build)
    assert rc == 0, f"configuring {EXAMPLE} against the installed wheel failed:\n{out}"
    _check([CMAKE, "--build", build], env, tmp)
    plugin = build / "libarena_allocator.so"
    assert plugin.is_file(), f"the example built no {plugin.name}: {sorted(os.listdir(build))}"
    return out, plugin


def _site_packages(venv: pathlib.Path, env) -> pathlib.Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return pathlib.Path(_check([venv / "bin" / "python", "-c", code], env, venv).strip())


def test_without_the_sdk_extra_cmake_says_to_install_it(user_venv):
    venv, env, _, _, (rc, out) = user_venv
    assert rc != 0, f"configured without the sdk extra and without system Boost:\n{out}"
    assert "cuplug: no Boost headers (boost/dll.hpp) found" in out
    assert SDK_MESSAGE in out, out
    assert str(_site_packages(venv, env)) in out  # names the environment cuplug is in


def test_with_the_sdk_extra_the_example_builds_against_the_wheel(user_venv, sdk_build):
    venv, env, _, _, _ = user_venv
    out, plugin = sdk_build
    site = _site_packages(venv, env)
    # The headers of the extra, in the venv; asked of the venv's own Python (first on PATH).
    headers = site / "boost_headers" / "include"
    assert f"headers in {headers} (from the boost-headers Python package, asked {venv}" in out, out
    assert not any(f"headers in {d}" in out for d in SYSTEM_INCLUDES)
    # Linked to the wheel's core library, found through its runpath once installed beside it.
    needed = subprocess.run(["readelf", "-d", str(plugin)], capture_output=True, text=True).stdout
    assert "libcuplug_core.so" in needed


@pytest.mark.gpu
def test_the_built_plugin_runs_from_the_venv(user_venv, sdk_build):
    venv, env, tmp, _, _ = user_venv
    _, plugin = sdk_build
    env = dict(env, CUPLUG_PLUGIN_PATH=str(plugin.parent))
    if os.environ.get("CUPLUG_CUDA_DRIVER"):  # the fake driver, when conftest chose it
        env["CUPLUG_CUDA_DRIVER"] = os.environ["CUPLUG_CUDA_DRIVER"]
    script = (
        "import os, cuplug, cuplug.memory as m\n"
        "a = m.create('arena', upstream='host', slab_size='1MiB')\n"
        "p = a.allocate(1000); a.deallocate(p, 1000)\n"
        "info = next(i for i in cuplug.plugins.available('allocator') if i.name == 'arena')\n"
        "print(cuplug.__file__, info.source, os.path.realpath(info.path))\n"
        "print(m.stats(a)['allocations'])\n"
    )
    words = _check([venv / "bin" / "python", "-c", script], env, tmp).split()
    site = _site_packages(venv, env)
    assert words[0].startswith(str(site)), words  # the installed cuplug, not the build tree's
    assert words[1:] == ["CUPLUG_PLUGIN_PATH", os.path.realpath(plugin), "1"], words
