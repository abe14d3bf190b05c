"""What interrupted nvcc compiles leave behind (issue 26): Ctrl-C, SIGTERM and SIGKILL left nvcc's
tmpxft_* files (megabytes) and cuplug-nvcc-* folders in TMPDIR, and a cicc running on after its
Python died. nvcc now gets a TMPDIR inside the compile's own folder, which is locked while the
compile runs and swept by the next compile once its process is gone (with what still works in
it). No GPU needed."""

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(
    not any(os.access(os.path.join(d, "nvcc"), os.X_OK) for d in os.get_exec_path())
    and not os.path.exists("/usr/local/cuda/bin/nvcc"),
    reason="needs nvcc",
)

# Long enough for nvcc (host preprocessor, cudafe, cicc) to be mid-way when the signal comes.
LOOP = """
import sys
N = 3000
SOURCE = "".join(
    f"template <typename T> struct S{i} {{ T v; __host__ __device__ T get() const "
    f"{{ return v + T({i}); }} }};\\n"
    f"template <typename T> __host__ __device__ T f{i}(T x) {{ return S{i}<T>{{x}}.get(); }}\\n"
    for i in range(N)
) + "__global__ void k(float *a) { a[0] = f0(a[0]); }\\n"
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)
from cuplug import compiler
loops = int(sys.argv[1])
try:
    for i in range(loops):
        if i == 0:
            print("compiling", flush=True)
        compiler.compile(f"// {i}\\n" + SOURCE, arch="sm_90", target="ptx", backend="nvcc",
                         no_extern_c=True, cache_dir=False)
    print("done", flush=True)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
"""


def start(tmpdir, loops=1000):
    env = dict(os.environ, TMPDIR=str(tmpdir), CUPLUG_DISABLE_CACHE="1")
    return subprocess.Popen(
        [sys.executable, "-c", LOOP, str(loops)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_until_compiling(proc, tmpdir, seconds=60):
    assert proc.stdout.readline().strip() == "compiling", proc.stderr.read()[-2000:]
    deadline = time.monotonic() + seconds
    # Wait until nvcc has temporary files (tmpxft_*) somewhere under TMPDIR.
    while time.monotonic() < deadline:
        if any(n.startswith("tmpxft") for _, _, names in os.walk(tmpdir) for n in names):
            time.sleep(0.3)
            return
        time.sleep(0.05)
    pytest.fail("nvcc wrote no temporary files in time")


def working_in(tmpdir):
    """Pids of processes whose TMPDIR lies in tmpdir (nvcc and what it started)."""
    marker = b"TMPDIR=" + os.fsencode(tmpdir)
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if any(e.startswith(marker) for e in f.read().split(b"\0")):
                    pids.append(int(name))
        except OSError:
            pass
    return pids


def left_in(tmpdir):
    return sorted(os.listdir(tmpdir))


def settle(tmpdir, seconds=15):
    deadline = time.monotonic() + seconds
    while working_in(tmpdir) and time.monotonic() < deadline:
        time.sleep(0.1)


def test_ctrl_c_during_an_nvcc_compile_leaves_no_files(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = start(tmpdir)
    try:
        wait_until_compiling(proc, tmpdir)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert out.split() == ["KeyboardInterrupt"], err[-2000:]
    settle(tmpdir)
    assert working_in(tmpdir) == []
    assert left_in(tmpdir) == []


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_compile_is_swept_by_the_next_one(tmp_path, sig):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = start(tmpdir)
    try:
        wait_until_compiling(proc, tmpdir)
        proc.send_signal(sig)  # nothing in Python runs (SIGTERM's default action, too)
        proc.wait(timeout=60)
    finally:
        proc.kill()
    assert left_in(tmpdir), "the killed compile left nothing: the test did not hit one"
    nxt = start(tmpdir, loops=1)
    out, err = nxt.communicate(timeout=300)
    assert out.split() == ["compiling", "done"], err[-2000:]
    settle(tmpdir, seconds=5)
    assert working_in(tmpdir) == [], "a process of the killed compile still runs"
    assert left_in(tmpdir) == []


def test_a_folder_of_a_living_compile_is_not_swept(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = start(tmpdir)
    try:
        wait_until_compiling(proc, tmpdir)
        running = [n for n in left_in(tmpdir) if n.startswith("cuplug-nvcc-run-")]
        assert len(running) == 1, left_in(tmpdir)
        nxt = start(tmpdir, loops=1)
        out, err = nxt.communicate(timeout=300)
        assert out.split() == ["compiling", "done"], err[-2000:]
        # Had the sweep taken its folder, its compile would have failed and ended the process.
        assert proc.poll() is None, "the first compile's process died: " + proc.stderr.read()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert out.split() == ["KeyboardInterrupt"], err[-2000:]
    finally:
        proc.kill()


@pytest.fixture
def full_tmpdir(tmp_path):
    """A TMPDIR on a 64 KiB tmpfs (needs the right to mount: root in a container that allows it)."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount_point)],
        capture_output=True,
    )
    if r.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here: " + r.stderr.decode(errors="replace"))
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], capture_output=True)


def test_a_full_tmpdir_is_named_in_the_error(full_tmpdir, monkeypatch):
    import cuplug.driver as drv
    from cuplug import compiler

    monkeypatch.setenv("TMPDIR", str(full_tmpdir))
    source = "// " + "x" * 200_000 + "\n__global__ void k() {}\n"  # more than the file system holds
    with pytest.raises(drv.ConfigError) as e:
        compiler.compile(source, arch="sm_90", target="ptx", backend="nvcc", cache_dir=False)
    message = str(e.value)
    assert "No space left on device" in message
    assert f"no space is left on the file system of {full_tmpdir}/cuplug-nvcc-" in message
    assert f"TMPDIR={full_tmpdir}" in message
    assert os.listdir(full_tmpdir) == []
