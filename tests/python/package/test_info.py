"""`python -m cuplug info [--json]`: works without a driver, lists devices when there is one, and
shows every plugin candidate, each backend's source, the config file and the cache folder."""

import json
import os
import re
import subprocess
import sys

import pytest
from support import fakecuda

import cuplug
from cuplug import _core

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SELECTION_VARS = (
    *_core.backends.ENV_VARS.values(),  # CUPLUG_<KIND> of every kind
    "CUPLUG_PLUGIN_PATH",
    "CUPLUG_CACHE_DIR",
    "CUPLUG_CONFIG",
    "CUPLUG_DISABLE_CACHE",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
)
NO_DRIVER = "/nonexistent/libcuda.so.1"


def info(tmp_path, *args, **env):
    full = {k: v for k, v in os.environ.items() if k not in SELECTION_VARS}
    full.update({"HOME": str(tmp_path), "CUPLUG_CUDA_DRIVER": NO_DRIVER})
    full.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "cuplug", "info", *args],
        env=full,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return proc.stdout


def fake_driver():
    return fakecuda.fake_driver_or_skip()


def test_text_report_without_a_driver(tmp_path):
    out = info(tmp_path)
    assert out.startswith(f"cuplug {cuplug.__version__} (")
    assert re.search(r"^python 3\.\d+\.\d+ ", out, re.M)
    assert re.search(r"^numpy  \d+\.\d+", out, re.M)
    assert f"driver unavailable: the CUDA driver library '{NO_DRIVER}' could not be loaded" in out
    assert "devices:\n  none (no driver)" in out
    for plugin in ("device", "driver"):
        assert re.search(rf"^  loaded +\w+ +{plugin} +/\S+\.so$", out, re.M), out
    assert f"plugin ABI {_core.backends.PLUGIN_ABI_MAJOR}, {_core.backends.ABI_TAG}" in out
    assert re.search(r"^  allocator +device +\(built-in default\)$", out, re.M), out
    assert re.search(r"^  launcher +driver +\(built-in default\)$", out, re.M), out
    assert f"config file: none (searched {tmp_path}/.config/cuplug/cuplug.toml)" in out
    assert out.rstrip().endswith(f"cache dir: {tmp_path}/.cache/cuplug")


def test_json_report_without_a_driver(tmp_path):
    data = json.loads(info(tmp_path, "--json"))
    assert data["cuplug"]["version"] == cuplug.__version__
    assert data["cuplug"]["package"] == os.path.dirname(cuplug.__file__)
    assert data["driver"]["available"] is False
    assert NO_DRIVER in data["driver"]["library"]
    assert data["driver"]["devices"] == [] and data["driver"]["version"] is None
    candidates = data["plugins"]["candidates"]
    assert {"path", "state", "reason", "kind", "name", "abi_tag", "source"} <= set(candidates[0])
    loaded = {(c["kind"], c["name"]): c for c in candidates if c["state"] == "loaded"}
    device = loaded[("allocator", "device")]
    assert device["abi_tag"] == data["plugins"]["abi_tag"] and device["source"] == "package"
    assert list(data["backends"]) == ["allocator", "compiler", "launcher", "rng", "interop"]
    assert data["backends"]["allocator"] == {
        "name": "device",
        "source": "built-in default",
        "origin": "built-in default",
        "available": True,
        "reason": None,
        "options": {},
        "options_error": None,
    }
    assert data["config_file"] == {
        "path": None,
        "searched": f"{tmp_path}/.config/cuplug/cuplug.toml",
    }
    assert data["cache_dir"] == f"{tmp_path}/.cache/cuplug" and data["cache_disabled"] is False
    build = data["build"]
    assert build["compiler"].split()[0] in ("gcc", "clang") and build["cplusplus"] >= 201703
    assert build["cuda_h"].split(".")[0] == "13"
    assert data["system"]["os"] and data["system"]["glibc"].startswith("glibc")
    # NVRTC's and nvcc's versions (or why not), from the toolkit search order
    assert data["toolkit"]["nvrtc"].startswith(("13.", "not found", "unknown"))
    assert data["toolkit"]["nvcc"].startswith(("13.", "not found", "unknown"))


def test_sources_config_file_and_cache_settings_are_shown(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[backends]\nallocator = "missing_one"\n[compiler.nvcc]\nnvcc = "nvcc"\n')
    out = info(
        tmp_path,
        CUPLUG_CONFIG=str(config),
        CUPLUG_COMPILER="nvcc",
        CUPLUG_CACHE_DIR=str(tmp_path / "kc"),
        CUPLUG_DISABLE_CACHE="1",
    )
    assert re.search(
        rf"^  allocator +missing_one +\(config file: {config}\) +\[NOT AVAILABLE\]$", out, re.M
    ), out
    assert re.search(
        r"^  compiler +nvcc +\(environment: CUPLUG_COMPILER\).*options: nvcc=nvcc$", out, re.M
    ), out
    assert f"config file: {config} (searched CUPLUG_CONFIG={config})" in out
    assert f"cache dir: {tmp_path / 'kc'} (disabled by CUPLUG_DISABLE_CACHE)" in out
    assert "config file: none (searched nothing: CUPLUG_CONFIG is set empty)" in info(
        tmp_path, CUPLUG_CONFIG=""
    )


def test_refused_plugins_are_shown_with_their_reason(tmp_path):
    build = os.environ.get("CUPLUG_BUILD_DIR")
    bad = os.path.join(build or "", "tests", "fake_plugins", "libfake_bad_abi_major.so")
    if not build or not os.path.exists(bad):
        pytest.skip(f"fake plugin {bad} not built")
    out = info(tmp_path, CUPLUG_PLUGIN_PATH=f"{bad}:relative/plugins")
    assert re.search(rf"^  rejected +allocator +fake_abi2 +{re.escape(bad)}$", out, re.M), out
    abi = _core.backends.PLUGIN_ABI_MAJOR
    assert f"was built for plugin ABI {abi + 1}, this cuplug provides {abi}" in out
    assert "CUPLUG_PLUGIN_PATH entry 'relative/plugins' is a relative path" in out
    assert f"CUPLUG_PLUGIN_PATH={bad}:relative/plugins" in out


def test_devices_are_listed_when_a_driver_answers(tmp_path):
    data = json.loads(
        info(tmp_path, "--json", CUPLUG_CUDA_DRIVER=fake_driver(), FAKE_CUDA_DEVICE_COUNT="2")
    )
    driver = data["driver"]
    assert driver["available"] and driver["error"] is None
    assert driver["library"].endswith("libcuplug_fake_cuda.so")
    assert driver["version"] == "13.0"
    assert [d["index"] for d in driver["devices"]] == [0, 1]
    first = driver["devices"][0]
    assert first["name"] == "cuplug fake device"
    assert re.fullmatch(r"\d+\.\d+", first["compute_capability"])
    assert first["total_memory"] > 0
    text = info(tmp_path, CUPLUG_CUDA_DRIVER=fake_driver(), FAKE_CUDA_DEVICE_COUNT="1")
    assert re.search(r"^  0: cuplug fake device  cc \d+\.\d+  \d+\.\d GiB$", text, re.M), text


def test_a_cuda_12_driver_is_shown_with_its_branch_and_what_it_lacks(tmp_path):
    driver = fake_driver()
    data = json.loads(
        info(tmp_path, "--json", CUPLUG_CUDA_DRIVER=driver, FAKE_CUDA_DRIVER_VERSION="12020")
    )
    drv = data["driver"]
    assert drv["available"] and drv["error"] is None
    assert (drv["version"], drv["branch"]) == ("12.2", "R535")
    assert drv["limits"] == [
        "cuFuncGetName: unavailable before CUDA 12.3, R545",
        "cuStreamGetCaptureInfo: older form, some arguments refused before CUDA 12.3, R545",
        "cuGraphAddDependencies: older form, some arguments refused before CUDA 12.3, R545",
        "cuFuncGetParamInfo: unavailable before CUDA 12.4, R550",
        "cuCtxCreate: older form, some arguments refused before CUDA 12.5, R555",
        "cuCtxSynchronize: older form, some arguments refused before CUDA 13.0, R580",
        "cuCtxGetDevice: older form, some arguments refused before CUDA 13.0, R580",
    ]
    assert len(drv["devices"]) >= 1
    text = info(tmp_path, CUPLUG_CUDA_DRIVER=driver, FAKE_CUDA_DRIVER_VERSION="12020")
    assert re.search(r"^driver \S+libcuplug_fake_cuda\.so, CUDA 12\.2 \(R535\)$", text, re.M), text
    assert "\n  cuFuncGetParamInfo: unavailable before CUDA 12.4, R550\n" in text
    # A 13.0 driver lacks nothing cuplug uses.
    data = json.loads(
        info(tmp_path, "--json", CUPLUG_CUDA_DRIVER=driver, FAKE_CUDA_DRIVER_VERSION="13000")
    )
    assert (data["driver"]["branch"], data["driver"]["limits"]) == ("R580", [])


def test_command_line_errors(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "cuplug"], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert proc.returncode == 2 and "info" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "cuplug", "info", "--yaml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 2 and "unrecognized arguments: --yaml" in proc.stderr


def test_one_version_everywhere():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        cmake_version = re.search(r"project\(cuplug VERSION ([0-9.]+)", f.read()).group(1)
    assert cuplug.__version__ == cmake_version
    assert cuplug.VERSION == tuple(int(p) for p in cmake_version.split("."))
    assert cuplug.VERSION_TEXT == cuplug.__version__


@pytest.mark.parametrize(
    "text, release, status",
    [
        ("0.1.0", (0, 1, 0), ""),
        ("0.2.0rc1", (0, 2, 0), "rc1"),
        ("1.0.dev3", (1, 0), "dev3"),
        ("2024.1", (2024, 1), ""),
        ("3.1-beta", (3, 1), "beta"),
    ],
)
def test_pre_release_versions_split_into_numbers_and_status(text, release, status):
    assert cuplug._split_version(text) == (release, status)


def test_version_option_and_console_entry_point():
    proc = subprocess.run(
        [sys.executable, "-m", "cuplug", "--version"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout.strip() == f"cuplug {cuplug.__version__}"
    from cuplug.__main__ import console

    assert callable(console)
