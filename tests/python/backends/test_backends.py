"""Backend selection from Python (cuplug.use, cuplug.using, cuplug.config) and plugin loading
(cuplug.plugins): precedence, sources, restoring, options and the errors for bad input."""

import os
import shutil

import pytest
from support.subprocesses import run_python as _run_python

import cuplug
import cuplug.memory
from cuplug import _core

SELECTION_VARS = (
    *_core.backends.ENV_VARS.values(),  # CUPLUG_<KIND> of every kind
    "CUPLUG_PLUGIN_PATH",
)


def run_python(code, tmp_path, **env):
    """Runs code in a fresh interpreter with no selection variables and no config file, unless
    given in env; returns its stdout, failing the test with stderr when it fails."""
    return _run_python(code, tmp_path, drop=SELECTION_VARS, **{"XDG_CONFIG_HOME": "", **env})


def fake_plugin(name):
    build = os.environ.get("CUPLUG_BUILD_DIR")
    path = os.path.join(build or "", "tests", "fake_plugins", f"libfake_{name}.so")
    if not build or not os.path.exists(path):
        pytest.skip(f"fake plugin {path} not built (set CUPLUG_BUILD_DIR to the build folder)")
    return path


@pytest.fixture
def clean_selection(monkeypatch):
    """Runs a test with no explicit choices or options and no CUPLUG_<KIND> variables, and puts
    the explicit layer back afterwards."""
    for var in SELECTION_VARS:
        monkeypatch.delenv(var, raising=False)
    state = cuplug.config.snapshot()
    cuplug.config.reset()
    _core.backends.reset_backends()
    yield
    cuplug.config.restore(state)


def test_every_kind_has_a_choice_with_a_source(clean_selection):
    choices = cuplug.config.selection()
    assert tuple(choices) == ("allocator", "compiler", "launcher", "rng", "interop")
    for kind, choice in choices.items():
        assert choice == cuplug.config[kind] == getattr(cuplug.config, kind)
        assert choice.source in ("built-in default", "config file")
    text = repr(cuplug.config)
    for kind in choices:
        assert kind in text
    assert "config file:" in text


def test_builtin_defaults_without_file_or_environment(tmp_path):
    out = run_python(
        """
        import cuplug
        for kind, c in cuplug.config.selection().items():
            print(kind, c.name, c.source, c.origin, sep="|")
        """,
        tmp_path,
    )
    rows = [line.split("|") for line in out.splitlines()]
    assert rows[0] == ["allocator", "device", "built-in default", "built-in default"]
    assert rows[1][:3] == ["compiler", "nvrtc", "built-in default"]
    assert rows[2][:3] == ["launcher", "driver", "built-in default"]
    assert all(r[2] == "built-in default" for r in rows)


def test_package_plugins_are_loaded_with_their_abi_tag():
    loaded = {(p.kind, p.name): p for p in cuplug.plugins.available()}
    for key in (("allocator", "device"), ("launcher", "driver")):
        assert key in loaded, f"{key} missing; diagnostics: {cuplug.plugins.diagnostics()}"
        plugin = loaded[key]
        assert plugin.abi_tag == _core.backends.ABI_TAG
        assert os.path.dirname(plugin.path) == cuplug.plugins.package_dir()
        assert plugin.source == "package"
    assert [p.kind for p in cuplug.plugins.available("launcher")] == ["launcher"] * len(
        cuplug.plugins.available("launcher")
    )
    assert "device" in cuplug.plugins.names("allocator")


def test_diagnostics_give_each_file_a_state():
    candidates = cuplug.plugins.diagnostics()
    assert candidates, "the package's plugin folder yielded no candidates"
    for c in candidates:
        assert c.state in ("loaded", "rejected", "duplicate")
        assert (c.reason == "") == (c.state == "loaded"), c
        if c.state == "loaded":
            assert c.has_manifest and c.abi_major == _core.backends.PLUGIN_ABI_MAJOR


def test_use_sets_explicit_choice_and_returns_previous(clean_selection):
    previous = cuplug.use(allocator="device")
    assert previous == {"allocator": "device"}
    choice = cuplug.config.allocator
    assert (choice.name, choice.source, choice.origin) == ("device", "explicit", "cuplug.use()")
    assert cuplug.use() == {}
    assert cuplug.use(**previous) == {"allocator": "device"}


def test_use_unknown_name_lists_what_exists_and_changes_nothing(clean_selection):
    before = cuplug.config.selection()
    with pytest.raises(
        cuplug.config.ConfigError, match=r"unknown allocator 'nope'.*available:.*device"
    ):
        cuplug.use(launcher="driver", allocator="nope")
    assert cuplug.config.selection() == before
    with pytest.raises(ValueError):  # ConfigError is also a ValueError
        cuplug.use(compiler="no_such_compiler")


def test_use_rejects_bad_arguments(clean_selection):
    with pytest.raises(TypeError, match="unexpected keyword argument 'allocater'"):
        cuplug.use(allocater="device")
    with pytest.raises(TypeError, match="must be a backend name"):
        cuplug.use(allocator=3)
    with pytest.raises(TypeError, match="allocator_options must be a mapping"):
        cuplug.use(allocator_options=["capacity"])
    with pytest.raises(cuplug.config.ConfigError, match="empty allocator name"):
        _core.backends.set_explicit("allocator", " ")
    with pytest.raises(cuplug.config.ConfigError, match="unknown backend kind 'gpu'"):
        cuplug.config.selected("gpu")


def test_using_restores_exactly_even_after_an_error(tmp_path):
    out = run_python(
        """
        import cuplug
        c = cuplug.config
        print(c.launcher.source)
        with cuplug.using(launcher="driver"):
            print(c.launcher.source)
        print(c.launcher.source, c.launcher.origin)
        cuplug.use(allocator="device")
        try:
            with cuplug.using(allocator="device", launcher="driver"):
                raise KeyError("inside")
        except KeyError:
            pass
        print(c.allocator.source, c.launcher.source)
        """,
        tmp_path,
        CUPLUG_LAUNCHER="driver",
    )
    assert out.splitlines() == [
        "environment",
        "explicit",
        "environment CUPLUG_LAUNCHER",
        "explicit environment",
    ]


def test_precedence_explicit_environment_file_default(tmp_path):
    config = tmp_path / "cuplug.toml"
    config.write_text('[backends]\nallocator = "from_file"\nlauncher = "from_file"\n')
    out = run_python(
        """
        import cuplug
        c = cuplug.config
        print(c.allocator.name, c.allocator.source)
        print(c.launcher.name, c.launcher.source)
        print(c.compiler.name, c.compiler.source)
        cuplug.use(launcher="driver")
        print(c.launcher.name, c.launcher.source)
        """,
        tmp_path,
        CUPLUG_CONFIG=str(config),
        CUPLUG_LAUNCHER="driver",
    )
    assert out.splitlines() == [
        "from_file config file",
        "driver environment",
        "nvrtc built-in default",
        "driver explicit",
    ]


def test_plugin_options_are_checked_by_creating_the_backend(tmp_path):
    out = run_python(
        f"""
        import cuplug
        cuplug.plugins.load({fake_plugin("good_allocator")!r})
        c = cuplug.config
        for bad in ({{"bogus": 1}}, {{"capacity": "lots"}}, {{"capacity": [1]}}):
            try:
                cuplug.use(allocator="fake_alloc", allocator_options=bad)
            except cuplug.config.ConfigError as e:
                print("error:", e)
            print(c.allocator.name, c.allocator.source, c.options("allocator", "fake_alloc"))
        with cuplug.using(allocator="fake_alloc", allocator_options={{"capacity": "2MiB",
                                                                      "label": True}}):
            print(c.allocator.name, c.options("allocator"))
        print(c.allocator.name, c.options("allocator", "fake_alloc"))
        """,
        tmp_path,
    )
    lines = out.splitlines()
    assert "unknown option 'bogus'" in lines[0] and "capacity" in lines[0] and "label" in lines[0]
    assert lines[1] == "device built-in default {}"
    assert lines[2].startswith("error:") and "capacity" in lines[2] and "lots" in lines[2]
    assert lines[3] == "device built-in default {}"
    assert lines[4].startswith("error:") and "list values are not supported" in lines[4]
    assert lines[6] == "fake_alloc {'capacity': '2MiB', 'label': 'true'}"
    assert lines[7] == "device {}"


def test_use_refuses_a_backend_that_cannot_be_created(clean_selection):
    class Unmakeable(cuplug.memory.Allocator):
        kind = "device"

        def __init__(self, **options):
            raise RuntimeError("no arena today")

    cuplug.memory.register_allocator("unmakeable", Unmakeable)
    before = cuplug.config.selection()
    for options in ({}, {"allocator_options": {"size": "1GiB"}}):
        with pytest.raises(
            cuplug.plugins.PluginError,
            match=r"allocator 'unmakeable'.*RuntimeError: no arena today",
        ):
            cuplug.use(allocator="unmakeable", **options)
        assert cuplug.config.selection() == before
        assert cuplug.config.options("allocator", "unmakeable") == {}
    with pytest.raises(cuplug.plugins.PluginError, match="no arena today"):
        with cuplug.using(allocator="unmakeable"):
            pass
    assert cuplug.config.selection() == before


def test_use_refuses_a_plugin_whose_factory_fails(tmp_path):
    out = run_python(
        f"""
        import cuplug
        cuplug.plugins.load({fake_plugin("throwing_factory")!r})
        c = cuplug.config
        try:
            cuplug.use(allocator="fake_throwing")
        except cuplug.plugins.PluginError as e:
            print("error:", e)
        print(c.allocator.name, c.allocator.source)
        """,
        tmp_path,
    )
    lines = out.splitlines()
    assert lines[0].startswith("error:") and "fake_throwing" in lines[0], out
    assert "failed to create its allocator" in lines[0]
    assert lines[1] == "device built-in default"


def test_load_refused_plugin_says_why(tmp_path):
    with pytest.raises(cuplug.plugins.PluginError, match="no such file"):
        cuplug.plugins.load(tmp_path / "libnothing.so")
    with pytest.raises(cuplug.plugins.PluginError, match="load_dir"):
        cuplug.plugins.load(tmp_path)
    with pytest.raises(cuplug.plugins.PluginError, match="not a folder"):
        cuplug.plugins.load_dir(fake_plugin("bad_abi_major"))
    abi = _core.backends.PLUGIN_ABI_MAJOR
    with pytest.raises(
        cuplug.plugins.PluginError,
        match=f"built for plugin ABI {abi + 1}, this cuplug provides {abi}",
    ):
        cuplug.plugins.load(fake_plugin("bad_abi_major"))
    refused = [
        c for c in cuplug.plugins.diagnostics() if c.path.endswith("libfake_bad_abi_major.so")
    ]
    assert refused and refused[0].state == "rejected" and refused[0].name == "fake_abi2"


def test_load_dir_reports_each_file_and_load_is_idempotent(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    for name in ("good_allocator", "bad_abi_major"):
        shutil.copy(fake_plugin(name), folder)
    good = str(folder / "libfake_good_allocator.so")
    out = run_python(
        f"""
        import cuplug
        outcomes = cuplug.plugins.load_dir({str(folder)!r})
        print(sorted((o.path.rsplit("/", 1)[1], o.state) for o in outcomes))
        first = cuplug.plugins.load({good!r})
        again = cuplug.plugins.load({good!r})
        print(first.name, first.kind, first.source, again.path == first.path)
        print(sorted(cuplug.plugins.names("allocator")))
        cuplug.use(allocator="fake_alloc")
        print(cuplug.config.allocator.name)
        """,
        tmp_path,
    )
    lines = out.splitlines()
    assert lines[0] == str(
        [("libfake_bad_abi_major.so", "rejected"), ("libfake_good_allocator.so", "loaded")]
    )
    assert lines[1] == "fake_alloc allocator explicit True"
    assert "fake_alloc" in lines[2] and "device" in lines[2]
    assert lines[3] == "fake_alloc"


def test_same_kind_and_name_twice_is_a_duplicate_unless_it_takes_precedence(tmp_path):
    out = run_python(
        f"""
        import cuplug
        def fake_alloc():
            [p] = [p for p in cuplug.plugins.available("allocator") if p.name == "fake_alloc"]
            return p.version, p.source
        print(*fake_alloc())
        cuplug.plugins.load({fake_plugin("good_allocator")!r})
        print(*fake_alloc())
        try:
            cuplug.plugins.load({fake_plugin("duplicate_allocator")!r})
        except cuplug.plugins.PluginError as e:
            print("error:", e)
        """,
        tmp_path,
        CUPLUG_PLUGIN_PATH=fake_plugin("duplicate_allocator"),
    )
    lines = out.splitlines()
    # CUPLUG_PLUGIN_PATH provided it first; an explicit load takes precedence over that.
    assert lines[0] == "2.0 CUPLUG_PLUGIN_PATH"
    assert lines[1] == "1.0 explicit"
    assert lines[2].startswith("error:") and "which takes precedence" in lines[2]
