"""Issue 26, the environment: no message echoes the control characters of an environment value
(backend names, CUPLUG_PLUGIN_PATH, CUPLUG_CONFIG) raw; they are escaped as repr() writes them."""

from __future__ import annotations

import json
import textwrap

from support.hardening import ESC, run


def test_backend_name_from_the_environment_is_shown_escaped(tmp_path):
    name = "pool" + ESC
    code = textwrap.dedent(
        """
        import cuplug, cuplug.memory
        print(cuplug.config.describe())
        print(cuplug.config.allocator.reason)
        try:
            cuplug.memory.current()
        except cuplug.config.ConfigError as e:
            print("error:", e)
        """
    )
    proc = run(["-c", code], tmp_path, CUPLUG_ALLOCATOR=name)
    out = proc.stdout + proc.stderr
    assert "\x1b" not in out and "\x07" not in out, out
    lines = proc.stdout.splitlines()
    assert any(line.startswith("allocator  pool\\x1b[2J\\x07 ") for line in lines), out
    assert "unknown allocator 'pool\\x1b[2J\\x07'; available:" in lines[-2], out
    assert lines[-1].startswith("error: unknown allocator 'pool\\x1b[2J\\x07'"), out


def test_plugin_path_and_config_path_are_shown_escaped(tmp_path):
    weird = "relative" + ESC
    proc = run(
        ["-m", "cuplug", "info"],
        tmp_path,
        CUPLUG_PLUGIN_PATH=weird,
        CUPLUG_ALLOCATOR="x" + ESC,
        CUPLUG_CONFIG="",
    )
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout, proc.stdout
    assert "CUPLUG_PLUGIN_PATH=relative\\x1b[2J\\x07;" in proc.stdout
    assert "CUPLUG_PLUGIN_PATH entry 'relative\\x1b[2J\\x07' is a relative path" in proc.stdout
    assert "unknown allocator 'x\\x1b[2J\\x07'" in proc.stdout
    # The JSON report keeps the values as they are (JSON escapes them itself).
    proc = run(["-m", "cuplug", "info", "--json"], tmp_path, CUPLUG_PLUGIN_PATH=weird)
    assert json.loads(proc.stdout)["plugins"]["plugin_path"] == weird


def test_missing_cuplug_config_is_shown_escaped(tmp_path):
    path = str(tmp_path / ("missing" + ESC + ".toml"))
    proc = run(["-c", "import cuplug"], tmp_path, CUPLUG_CONFIG=path)
    assert proc.returncode != 0
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
    assert "missing\\x1b[2J\\x07.toml, which does not exist" in proc.stderr


def test_plugin_path_entries_are_escaped_in_the_loaders_reasons(tmp_path):
    code = "import cuplug.plugins\nfor c in cuplug.plugins.diagnostics(): print(c.reason)"
    proc = run(["-c", code], tmp_path, CUPLUG_PLUGIN_PATH="rel" + ESC + ":/missing" + ESC)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout, proc.stdout
    assert "CUPLUG_PLUGIN_PATH entry 'rel\\x1b[2J\\x07' is a relative path" in proc.stdout
    assert "CUPLUG_PLUGIN_PATH entry '/missing\\x1b[2J\\x07' does not exist" in proc.stdout
