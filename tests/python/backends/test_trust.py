"""The shared trust rule seen from Python: plugin files and folders, the compile cache folder
and the home folder (issue 13 items 1, 3, 8 and 16); the config file's cases are in
test_config_file.py."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import cuplug
from cuplug._core import _compiler as _cc

root_only = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root can give a file to another user (nobody)"
)
NOBODY = 65534


def package_plugin(name="allocator_device"):
    return os.path.join(cuplug.plugins.package_dir(), f"libcuplug_{name}.so")


def run_python(code, cwd, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CUPLUG_", "XDG_"))}
    for k in ("CUPLUG_CUDA_DRIVER", "CUPLUG_BUILD_DIR"):
        if k in os.environ:
            full[k] = os.environ[k]
    full.update({"CUPLUG_CONFIG": ""}, **env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_plugin_below_a_folder_others_can_write_is_refused(tmp_path):
    safe = tmp_path / "open" / "safe"
    safe.mkdir(parents=True)
    copy = safe / "libcopy_device.so"
    shutil.copy(package_plugin(), copy)
    (tmp_path / "open").chmod(0o777)
    with pytest.raises(cuplug.plugins.PluginError) as refused:
        cuplug.plugins.load(copy)
    message = str(refused.value)
    assert (
        f"refused: the folder {tmp_path / 'open'} (on the way to the plugin file {copy})" in message
    )
    assert "writable by everyone (mode 0777) and not sticky" in message


def test_a_fifo_in_a_plugin_folder_does_not_hang_discovery(tmp_path):
    os.mkfifo(tmp_path / "libfifo.so")
    shutil.copy(package_plugin(), tmp_path / "libcopy_device.so")
    code = """
        import cuplug
        for c in cuplug.plugins.load_dir("."):
            print(c.path, c.state, c.reason, sep="|")
        """
    proc = run_python(code, tmp_path)  # the timeout fails the test if it hangs
    assert proc.returncode == 0, proc.stderr
    rows = {line.split("|")[0]: line.split("|")[1:] for line in proc.stdout.splitlines()}
    state, reason = rows[str(tmp_path / "libfifo.so")]
    assert state == "rejected" and "is not a regular file (it is a FIFO)" in reason
    assert rows[str(tmp_path / "libcopy_device.so")][0] != "rejected"


def test_a_plugin_linked_to_a_device_is_not_a_regular_file(tmp_path):
    link = tmp_path / "libnull.so"
    link.symlink_to("/dev/null")
    with pytest.raises(cuplug.plugins.PluginError) as refused:
        cuplug.plugins.load(link)
    assert "is not a regular file (it is a character device)" in str(refused.value)
    assert "chmod" not in str(refused.value)


def test_a_short_file_with_the_elf_magic_is_truncated(tmp_path):
    short = tmp_path / "libshort.so"
    short.write_bytes(b"\x7fELF\x02\x01\x01")
    with pytest.raises(cuplug.plugins.PluginError, match="truncated.*holds only 7 bytes"):
        cuplug.plugins.load(short)


def test_a_relative_cache_directory_is_refused():
    state, _, reason = _cc.cache_status("relative/cache")
    assert state == "unusable"
    assert "'relative/cache' is a relative path" in reason


def test_a_relative_home_gives_an_absolute_cache_directory(tmp_path):
    code = "from cuplug import _core; print(_core.backends.cache_directory())"
    proc = run_python(code, tmp_path, HOME=".")
    assert proc.returncode == 0, proc.stderr
    where = proc.stdout.strip()
    assert where == "" or os.path.isabs(where), where
    assert not where.startswith(str(tmp_path))


def test_a_cache_directory_below_a_folder_others_can_write_is_unsafe(tmp_path):
    (tmp_path / "open" / "cache").mkdir(parents=True)
    (tmp_path / "open" / "cache").chmod(0o700)
    (tmp_path / "open").chmod(0o777)
    state, _, reason = _cc.cache_status(str(tmp_path / "open" / "cache"))
    assert state == "unsafe" and "writable by everyone" in reason


@root_only
def test_a_cache_directory_link_another_user_owns_is_not_followed(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "cache_link"
    link.symlink_to(target)
    os.lchown(link, NOBODY, -1)
    code = """
        from cuplug import _core
        from cuplug._core import _compiler as cc
        print(*cc.cache_status(_core.backends.cache_directory()), sep="|")
        """
    proc = run_python(code, tmp_path, CUPLUG_CACHE_DIR=str(link))
    assert proc.returncode == 0, proc.stderr
    state, root, reason = proc.stdout.strip().split("|")
    assert state == "unsafe" and root == str(link)
    assert f"the symbolic link {link}" in reason and "owned by nobody" in reason
    assert not (target / "compiler-v1").exists()
