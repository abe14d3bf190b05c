"""The TOML config file: where it is looked for (never the current directory), what it may hold,
and errors that name the file and the key."""

import os
import subprocess
import sys
import textwrap

import pytest

import cuplug
from cuplug import _core

SELECTION_VARS = (
    *_core.backends.ENV_VARS.values(),  # CUPLUG_<KIND> of every kind
    "CUPLUG_PLUGIN_PATH",
    "CUPLUG_CONFIG",
    "XDG_CONFIG_HOME",
)

SHOW = """
import cuplug
c = cuplug.config
print(c.file(), c.compiler.name, c.compiler.source, c.compiler.origin, sep="|")
print(c.options("compiler", "nvcc"))
"""


def run_python(code, cwd, home, **env):
    """Fresh interpreter, HOME=home, no selection variables and no CUPLUG_CONFIG unless given."""
    full = {k: v for k, v in os.environ.items() if k not in SELECTION_VARS}
    full["HOME"] = str(home)
    full.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def shown(proc):
    assert proc.returncode == 0, proc.stderr
    first, options = proc.stdout.splitlines()
    return first.split("|"), options


GOOD = """
[backends]
compiler = "nvcc"

[compiler.nvcc]
nvcc = "/usr/local/cuda/bin/nvcc"
keep = true
jobs = 4
ratio = 0.5
"""


def test_cuplug_config_names_the_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(GOOD)
    choice, options = shown(run_python(SHOW, tmp_path, tmp_path, CUPLUG_CONFIG=str(path)))
    assert choice == [str(path), "nvcc", "config file", str(path)]
    assert options == str(
        {"jobs": "4", "keep": "true", "nvcc": "/usr/local/cuda/bin/nvcc", "ratio": "0.5"}
    )


def test_user_config_dir_and_xdg_config_home(tmp_path):
    home = tmp_path / "home"
    (home / ".config" / "cuplug").mkdir(parents=True)
    user_file = home / ".config" / "cuplug" / "cuplug.toml"
    user_file.write_text(GOOD)
    choice, _ = shown(run_python(SHOW, tmp_path, home))
    assert choice[0] == str(user_file) and choice[2] == "config file"

    xdg = tmp_path / "xdg"
    (xdg / "cuplug").mkdir(parents=True)
    (xdg / "cuplug" / "cuplug.toml").write_text('[backends]\ncompiler = "from_xdg"\n')
    choice, _ = shown(run_python(SHOW, tmp_path, home, XDG_CONFIG_HOME=str(xdg)))
    assert choice[1] == "from_xdg"


def test_current_directory_is_never_read(tmp_path):
    project = tmp_path / "project"
    (project / ".config" / "cuplug").mkdir(parents=True)
    for where in (
        project / "cuplug.toml",
        project / ".config" / "cuplug" / "cuplug.toml",
        project / ".cuplug.toml",
    ):
        where.write_text('[backends]\ncompiler = "from_cwd"\n')
    home = tmp_path / "home"
    home.mkdir()
    choice, _ = shown(run_python(SHOW, project, home))
    assert choice == ["None", "nvrtc", "built-in default", "built-in default"]
    proc = run_python(SHOW, project, home, CUPLUG_CONFIG="cuplug.toml")
    assert proc.returncode != 0
    assert "CUPLUG_CONFIG='cuplug.toml' is not an absolute path" in proc.stderr


def test_empty_cuplug_config_reads_no_file(tmp_path):
    home = tmp_path / "home"
    (home / ".config" / "cuplug").mkdir(parents=True)
    (home / ".config" / "cuplug" / "cuplug.toml").write_text("this is not toml")
    choice, _ = shown(run_python(SHOW, tmp_path, home, CUPLUG_CONFIG=""))
    assert choice[:3] == ["None", "nvrtc", "built-in default"]


def test_environment_beats_the_file(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(GOOD)
    choice, _ = shown(
        run_python(SHOW, tmp_path, tmp_path, CUPLUG_CONFIG=str(path), CUPLUG_COMPILER="nvrtc")
    )
    assert choice[1:] == ["nvrtc", "environment", "CUPLUG_COMPILER"]


@pytest.mark.parametrize(
    "content, expected",
    [
        ("[backends\n", "not valid TOML: .*line 1"),
        ('[backends]\nalocator = "device"\n', r"\[backends\] alocator: unknown backend kind"),
        ("[backends]\ncompiler = 3\n", r"\[backends\] compiler: expected a backend name"),
        ('[backends]\ncompiler = "  "\n', r"\[backends\] compiler: expected a backend name"),
        ('allocator = "pool"\n', r"allocator: 'allocator = \.\.\.' at the top level"),
        ('[allocator]\npool = "x"\n', r"allocator\.pool: must be a table of options"),
        ("[allocator.pool]\nsizes = [1, 2]\n", r"\[allocator\.pool\]: option 'sizes': list"),
        ("[allocator.pool.inner]\nx = 1\n", r"\[allocator\.pool\]: option 'inner': dict"),
        ("[gpu]\nx = 1\n", r"gpu: unknown table; expected \[backends\]"),
        ('backends = "nvcc"\n', r"backends: must be a table"),
    ],
)
def test_bad_file_is_an_error_naming_file_and_key(tmp_path, content, expected):
    path = tmp_path / "bad.toml"
    path.write_text(content)
    proc = run_python("import cuplug", tmp_path, tmp_path, CUPLUG_CONFIG=str(path))
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("cuplug._core.ConfigError: config file " + str(path)), last
    assert __import__("re").search(expected, last), last


def test_missing_unreadable_and_world_writable_files(tmp_path):
    missing = tmp_path / "missing.toml"
    proc = run_python("import cuplug", tmp_path, tmp_path, CUPLUG_CONFIG=str(missing))
    assert f"CUPLUG_CONFIG names {missing}, which does not exist" in proc.stderr

    folder = tmp_path / "folder.toml"
    folder.mkdir()
    proc = run_python("import cuplug", tmp_path, tmp_path, CUPLUG_CONFIG=str(folder))
    assert "not a regular file" in proc.stderr

    open_to_all = tmp_path / "open.toml"
    open_to_all.write_text(GOOD)
    open_to_all.chmod(0o666)
    proc = run_python("import cuplug", tmp_path, tmp_path, CUPLUG_CONFIG=str(open_to_all))
    assert proc.returncode != 0 and "writable by everyone" in proc.stderr


def test_backend_names_in_the_file_are_checked_at_use(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[backends]\nallocator = "no_such_allocator"\n')
    proc = run_python(
        """
        import cuplug
        from cuplug import _core
        print(cuplug.config.allocator.name)
        try:
            cuplug.use(allocator="no_such_allocator")
        except cuplug.config.ConfigError as e:
            print(e)
        """,
        tmp_path,
        tmp_path,
        CUPLUG_CONFIG=str(path),
    )
    assert proc.returncode == 0, proc.stderr
    name, error = proc.stdout.splitlines()
    assert name == "no_such_allocator"
    assert "unknown allocator 'no_such_allocator'; available:" in error


def test_load_reads_again_and_replaces_the_file_layer(tmp_path, monkeypatch):
    first = tmp_path / "first.toml"
    first.write_text('[backends]\nrng = "first"\n[rng.first]\nseed = 1\n')
    second = tmp_path / "second.toml"
    second.write_text('[backends]\ninterop = "second"\n')
    monkeypatch.delenv("CUPLUG_RNG", raising=False)
    monkeypatch.delenv("CUPLUG_INTEROP", raising=False)
    original = cuplug.config.file()
    try:
        assert cuplug.config.load(str(first)) == str(first)
        assert cuplug.config.rng == ("first", "config file", str(first))
        assert cuplug.config.options("rng", "first") == {"seed": "1"}
        cuplug.config.load(str(second))
        assert cuplug.config.rng.source == "built-in default"
        assert cuplug.config.options("rng", "first") == {}
        assert cuplug.config.interop.name == "second"
        with pytest.raises(cuplug.config.ConfigError, match="does not exist"):
            monkeypatch.setenv("CUPLUG_CONFIG", str(tmp_path / "gone.toml"))
            cuplug.config.load()
        assert cuplug.config.file() == str(second)  # a failed load leaves the layer as it was
    finally:
        monkeypatch.delenv("CUPLUG_CONFIG", raising=False)
        cuplug.config.load(original)


# --- trust: issue 13 items 2, 3 and 16 -----------------------------------------------------

root_only = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root can give a file to another user (nobody)"
)
NOBODY = 65534


def refusal(tmp_path, path):
    """The last line of the error `import cuplug` gives with CUPLUG_CONFIG=path."""
    proc = run_python("import cuplug", tmp_path, tmp_path, CUPLUG_CONFIG=str(path))
    assert proc.returncode != 0, proc.stdout
    return proc.stderr.strip().splitlines()[-1]


@root_only
def test_a_config_file_another_user_owns_or_their_group_can_write_is_refused(tmp_path):
    path = tmp_path / "theirs.toml"
    path.write_text(GOOD)
    os.chown(path, NOBODY, -1)
    last = refusal(tmp_path, path)
    assert last.startswith("cuplug._core.ConfigError: the config file " + str(path)), last
    assert "is owned by nobody, not by root or by you (root)" in last
    os.chown(path, 0, NOBODY)  # a shared group that may write it
    path.chmod(0o664)
    assert "is writable by its group" in refusal(tmp_path, path)
    path.chmod(0o644)
    choice, _ = shown(run_python(SHOW, tmp_path, tmp_path, CUPLUG_CONFIG=str(path)))
    assert choice[0] == str(path)


def test_a_config_file_in_or_below_a_folder_others_can_write_is_refused(tmp_path):
    (tmp_path / "open" / "inner").mkdir(parents=True)
    path = tmp_path / "open" / "inner" / "c.toml"
    path.write_text(GOOD)
    (tmp_path / "open").chmod(0o777)
    last = refusal(tmp_path, path)
    assert f"the folder {tmp_path / 'open'} (on the way to the config file {path})" in last
    assert "writable by everyone (mode 0777) and not sticky" in last


def test_a_fifo_config_file_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    last = refusal(tmp_path, fifo)  # run_python's timeout fails the test if it hangs
    assert "is not a regular file (it is a FIFO)" in last


def test_a_relative_home_does_not_make_the_current_directory_home(tmp_path):
    project = tmp_path / "project"
    (project / ".config" / "cuplug").mkdir(parents=True)
    (project / ".config" / "cuplug" / "cuplug.toml").write_text(
        '[backends]\ncompiler = "from_cwd"\n'
    )
    code = SHOW + "print(cuplug.config.user_config_path())\n"
    proc = run_python(code, project, ".")
    assert proc.returncode == 0, proc.stderr
    first, _, where = proc.stdout.splitlines()
    assert first.split("|")[1] != "from_cwd"
    assert where == "None" or os.path.isabs(where), where
    assert not where.startswith(str(project))


def test_a_non_utf8_file_is_a_config_error_naming_it(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'[backends]\ncompiler = "caf\xe9"\n')
    last = refusal(tmp_path, path)
    assert last == (
        f"cuplug._core.ConfigError: config file {path}: not UTF-8 text (byte 0xe9 at offset "
        "26); TOML files are UTF-8"
    )


@pytest.mark.parametrize("opening", ["[", "{x = "])
def test_a_deeply_nested_file_is_a_config_error_naming_it(tmp_path, opening):
    path = tmp_path / "deep.toml"
    path.write_text("a = " + opening * 100000)
    last = refusal(tmp_path, path)
    assert last.startswith(
        f"cuplug._core.ConfigError: config file {path}: values nested too deeply"
    )


def test_a_huge_file_is_refused_unread(tmp_path):
    path = tmp_path / "huge.toml"
    with open(path, "wb") as f:
        f.truncate(8 << 30)  # sparse: 8 GiB that would take minutes and memory to read
    assert "larger than 1048576 bytes" in refusal(tmp_path, path)


@pytest.fixture
def file_layer_restored():
    original = cuplug.config.file()
    yield
    if original:
        cuplug.config.load(original)
    else:
        cuplug._core.backends.clear_file_layer()
    cuplug._core.backends.reset_backends()


def test_options_naming_files_to_write_come_only_from_trusted_files(tmp_path, file_layer_restored):
    """The core checks the file layer's path itself: a layer installed from a file others can
    change (here through the private hook, as a C++ embedder might) cannot pick a log file to
    truncate or a program to run."""
    backends = cuplug._core.backends
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    untrusted = tmp_path / "untrusted.toml"
    untrusted.write_text("")
    untrusted.chmod(0o666)
    table = {"allocator.logging": {"path": str(victim)}, "compiler.nvcc": {"nvcc": "/bin/true"}}
    backends.set_file_layer(str(untrusted), {}, table)
    with pytest.raises(cuplug.config.ConfigError, match="option 'path' names a file to write"):
        backends.create_backend("allocator", "logging")
    assert victim.read_text() == "precious\n"
    with pytest.raises(cuplug.config.ConfigError, match="option 'nvcc' names a program to run"):
        backends.create_backend("compiler", "nvcc")

    # From a trusted file the same option is used.
    trusted = tmp_path / "trusted.toml"
    log = tmp_path / "alloc.log"
    trusted.write_text(f'[allocator.logging]\npath = "{log}"\n')
    cuplug.config.load(str(trusted))
    backends.create_backend("allocator", "logging")
    assert log.read_text().startswith("# cuplug allocator log")
