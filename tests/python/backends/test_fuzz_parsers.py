"""Property tests (Hypothesis) for the readers of untrusted bytes: the config file parser, the
plugin ELF manifest reader and the toolkit's version.json reader, fed random, truncated and
mutated inputs. Each must give its documented error (ConfigError, PluginError) or a result,
never crash, hang or raise anything else. The cache-entry decoder's are with the cache's tests."""

import os
import shutil
import tempfile

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="pip install hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import cuplug  # noqa: E402

# No example database in the source tree; no deadline (first calls load things).
SETTINGS = settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

GOOD = b"""[backends]
allocator = "pool"
compiler = "nvcc"

[allocator.pool]
initial = "64MiB"
release = true
ratio = 0.5

[compiler.nvcc]
nvcc = "/usr/local/cuda/bin/nvcc"
jobs = 4
"""

# Pieces TOML and our schema care about, so random documents reach past the first line.
FRAGMENTS = [
    "[backends]",
    "[allocator.pool]",
    "[compiler.nvcc]",
    "[gpu]",
    "[[backends]]",
    'allocator = "pool"',
    "compiler = 3",
    "x = [1, 2]",
    "x = {a = 1}",
    'x = """',
    "x = '",
    "x = 1979-05-27T07:32:00Z",
    "x = inf",
    "x = nan",
    "a.b.c = 1",
    "= 1",
    "[",
    "]",
    "{",
    "}",
    "#",
    "\\u0000",
    "\x00",
    "\ufeff",
    "\r",
]


class ScratchDir:
    """One private folder per test function (Hypothesis examples reuse it, as function-scoped
    fixtures would not be reset between them)."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="cuplug-fuzz-")

    def write(self, name, data, mode=0o644):
        path = os.path.join(self.path, name)
        if os.path.lexists(path):
            os.remove(path)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
        return path

    def close(self):
        shutil.rmtree(self.path, ignore_errors=True)


@pytest.fixture(scope="module")
def scratch():
    d = ScratchDir()
    yield d
    d.close()


def parse(scratch, data):
    """parse_file on `data`: its result, or the ConfigError it raised (anything else fails)."""
    path = scratch.write("fuzz.toml", data)
    try:
        backends, options = cuplug.config.parse_file(path)
    except cuplug.config.ConfigError as e:
        assert path in str(e), f"the error does not name the file: {e}"
        return e
    # What is returned is what the core takes.
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in backends.items())
    for table in options.values():
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in table.items())
    return backends, options


@SETTINGS
@given(data=st.binary(max_size=2048))
def test_config_parser_on_random_bytes(scratch, data):
    parse(scratch, data)


@SETTINGS
@given(text=st.text(max_size=1024))
def test_config_parser_on_random_text(scratch, text):
    parse(scratch, text.encode("utf-8", "surrogatepass"))


@SETTINGS
@given(lines=st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=20), max_size=40))
def test_config_parser_on_toml_like_documents(scratch, lines):
    parse(scratch, "\n".join(lines).encode("utf-8", "surrogatepass"))


@SETTINGS
@given(cut=st.integers(min_value=0, max_value=len(GOOD)))
def test_config_parser_on_truncated_files(scratch, cut):
    parse(scratch, GOOD[:cut])


@SETTINGS
@given(
    edits=st.lists(
        st.tuples(st.integers(min_value=0, max_value=len(GOOD) - 1), st.integers(0, 255)),
        min_size=1,
        max_size=8,
    )
)
def test_config_parser_on_mutated_files(scratch, edits):
    data = bytearray(GOOD)
    for at, byte in edits:
        data[at] = byte
    parse(scratch, bytes(data))


@SETTINGS
@given(depth=st.integers(min_value=1, max_value=50000), opening=st.sampled_from(["[", "{x="]))
def test_config_parser_on_nesting(scratch, depth, opening):
    parse(scratch, ("a = " + opening * depth).encode())


# --- the ELF manifest reader, through the loader (cuplug.plugins.load) ---------------------
#
# Only inputs that can never reach dlopen: random bytes and strict prefixes of a real plugin
# (its section table is at the end, so a prefix always lacks it). Mutations of whole plugins
# are fed to the reader alone in the C++ test (test_elf_manifest.cpp), never to dlopen.


def load(scratch, data):
    path = scratch.write("libfuzz.so", data, mode=0o755)
    with pytest.raises(cuplug.plugins.PluginError) as refused:
        cuplug.plugins.load(path)
    assert path in str(refused.value)


@pytest.fixture(scope="module")
def plugin_bytes():
    with open(
        os.path.join(cuplug.plugins.package_dir(), "libcuplug_allocator_device.so"), "rb"
    ) as f:
        return f.read()


@SETTINGS
@given(data=st.binary(max_size=4096))
def test_elf_reader_on_random_bytes(scratch, data):
    load(scratch, data)


@SETTINGS
@given(data=st.binary(min_size=0, max_size=4096))
def test_elf_reader_on_random_bytes_after_a_valid_identification(scratch, data):
    load(scratch, b"\x7fELF\x02\x01\x01" + data)


@SETTINGS
@given(fraction=st.floats(min_value=0.0, max_value=1.0, exclude_max=True))
def test_elf_reader_on_truncated_plugins(scratch, plugin_bytes, fraction):
    load(scratch, plugin_bytes[: int(len(plugin_bytes) * fraction)])


# The toolkit search reads a version.json in every toolkit folder it looks at (cuplug/toolkit.hpp),
# as the first plugin loads: whatever a folder holds, it answers a CUDA major version or 0.
VERSION_PIECES = st.sampled_from(
    ['"cuda"', '"version"', ":", "{", "}", '"', "13", "12.", ".", " ", "\n", '"name"', ","]
)


@SETTINGS
@given(
    st.one_of(
        st.binary(max_size=400),
        st.lists(VERSION_PIECES, max_size=40).map(lambda p: "".join(p).encode()),
    )
)
def test_version_json_of_any_content_gives_a_version_or_zero(data):
    from cuplug import _core

    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "version.json"), "wb") as f:
            f.write(data)
        major = _core.backends.toolkit_cuda_major(root)
    assert isinstance(major, int) and 0 <= major <= 999
    text = data.decode("latin-1")
    if major:  # a number only where "cuda" ... "version" ... "<digits>." stand in that order
        assert '"cuda"' in text and '"version"' in text and f"{major}." in text
