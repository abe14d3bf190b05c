"""Issue 26, the config file: a symbolic link loop is called one (not "does not exist"), and
`python -m cuplug info` reports a config file it cannot read instead of dying on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cuplug import _core

SELECTION_VARS = (
    *_core.backends.ENV_VARS.values(),  # CUPLUG_<KIND> of every kind
    "CUPLUG_PLUGIN_PATH",
    "CUPLUG_CONFIG",
    "XDG_CONFIG_HOME",
)


def run(args, tmp_path, **env):
    """A fresh interpreter with HOME=tmp_path, no driver, no selection variables but `env`."""
    full = {k: v for k, v in os.environ.items() if k not in SELECTION_VARS}
    full.update(HOME=str(tmp_path), CUPLUG_CUDA_DRIVER="/nonexistent/libcuda.so.1")
    full.update(env)
    return subprocess.run(
        [sys.executable, *args], env=full, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


def loop(tmp_path):
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.symlink_to(b)
    b.symlink_to(a)
    return a


def test_cuplug_config_naming_a_symlink_loop_says_so(tmp_path):
    a = loop(tmp_path)
    proc = run(["-c", "import cuplug"], tmp_path, CUPLUG_CONFIG=str(a))
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert f"CUPLUG_CONFIG names {a} is a symbolic link loop" in last, last
    assert "does not exist" not in last


def test_user_config_file_in_a_symlink_loop_says_so(tmp_path):
    folder = tmp_path / ".config" / "cuplug"
    folder.mkdir(parents=True)
    (folder / "cuplug.toml").symlink_to(folder / "cuplug.toml")  # links to itself
    proc = run(["-c", "import cuplug"], tmp_path)
    assert proc.returncode != 0
    assert f"the config file {folder / 'cuplug.toml'} is a symbolic link loop" in proc.stderr


def test_a_dangling_user_config_link_is_still_no_file(tmp_path):
    folder = tmp_path / ".config" / "cuplug"
    folder.mkdir(parents=True)
    (folder / "cuplug.toml").symlink_to(tmp_path / "gone.toml")
    proc = run(["-c", "import cuplug; print(cuplug.config.file())"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "None"


@pytest.mark.parametrize("problem", ["malformed", "loop", "missing"])
@pytest.mark.parametrize("as_json", [False, True])
def test_info_reports_a_config_file_it_cannot_read(tmp_path, problem, as_json):
    if problem == "malformed":
        path = tmp_path / "bad.toml"
        path.write_text("[backends\n")
        expected = f"config file {path}: not valid TOML"
    elif problem == "loop":
        path = loop(tmp_path)
        expected = f"CUPLUG_CONFIG names {path} is a symbolic link loop"
    else:
        path = tmp_path / "missing.toml"
        expected = f"CUPLUG_CONFIG names {path}, which does not exist"
    args = ["-m", "cuplug", "info"] + (["--json"] if as_json else [])
    proc = run(args, tmp_path, CUPLUG_CONFIG=str(path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    if as_json:
        cfg = json.loads(proc.stdout)["config_file"]
        assert cfg["path"] is None
        assert expected in cfg["error"]
    else:
        assert f"config file: none (searched CUPLUG_CONFIG={path})" in proc.stdout
        assert f"  NOT READ: {expected}" in proc.stdout
    # Anything else still refuses the file at import.
    assert run(["-c", "import cuplug"], tmp_path, CUPLUG_CONFIG=str(path)).returncode != 0


@pytest.mark.parametrize("module", ["cuplug", "cuplug.__main__"])
def test_info_as_either_module_reports_a_malformed_file(tmp_path, module):
    path = tmp_path / "bad.toml"
    path.write_text("[backends\n")
    proc = run(["-m", module, "info"], tmp_path, CUPLUG_CONFIG=str(path))
    assert proc.returncode == 0, proc.stderr
    assert f"  NOT READ: config file {path}: not valid TOML" in proc.stdout


@pytest.mark.parametrize("as_json", [False, True])
def test_info_reports_options_the_backend_refuses(tmp_path, as_json):
    """A file that parses but gives the chosen backend an option it does not take, or a value it
    cannot read: info says so beside the backend (exit 0, nothing on stderr), instead of showing
    the options as if they were in use and leaving the error to the first allocation."""
    path = tmp_path / "cuplug.toml"
    path.write_text(
        '[backends]\nallocator = "limiting"\n[allocator.limiting]\nlimit = "lots"\n'
        "[allocator.pool]\nno_such_option = 1\n"  # not chosen: not checked
    )
    path.chmod(0o600)
    args = ["-m", "cuplug", "info"] + (["--json"] if as_json else [])
    proc = run(args, tmp_path, CUPLUG_CONFIG=str(path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    expected = "option 'limit' has value 'lots', expected a byte size"
    if as_json:
        backends = json.loads(proc.stdout)["backends"]
        assert expected in backends["allocator"]["options_error"]
        assert all(b["options_error"] is None for k, b in backends.items() if k != "allocator")
    else:
        lines = proc.stdout.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("  allocator  limiting"))
        assert lines[at + 1].strip().startswith("OPTIONS REFUSED: "), lines[at : at + 2]
        assert expected in lines[at + 1]
        assert proc.stdout.count("OPTIONS REFUSED") == 1


def test_info_has_no_config_error_when_the_file_is_fine(tmp_path):
    proc = run(["-m", "cuplug", "info", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "error" not in json.loads(proc.stdout)["config_file"]
