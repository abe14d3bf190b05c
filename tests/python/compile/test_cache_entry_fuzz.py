"""Property tests of the compile cache's entry decoder (core/src/cache_entry.cpp): whatever bytes
lie on disk under an entry's name (random, truncated, flipped, or a valid checksum over lengths and
counts that lie), decoding is a miss or the entry that was written, quickly and without a large
allocation. No GPU needed."""

import hashlib
import struct
import time

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cuplug._core import _compiler as _cc  # noqa: E402

KEY = "ab" * 32
HEADER = 8 + 4 + 4 + 64 + 8  # magic, version, format, request key, payload size
FORMATS = ["cubin", "ptx", "fatbin", "ltoir"]

images = st.fixed_dictionaries(
    {
        "data": st.binary(min_size=1, max_size=2000),
        "format": st.sampled_from(FORMATS),
        "log": st.text(max_size=200),
        "command": st.text(max_size=200),
        "lowered_names": st.dictionaries(st.text(max_size=20), st.text(max_size=20), max_size=5),
    }
)


def encode(image, key=KEY):
    return _cc._encode_cache_entry(key, **image)


def reseal(entry):
    """The entry with its trailing SHA-256 made right again for whatever came before."""
    body = entry[:-32]
    return body + hashlib.sha256(body).digest()


def decode(data, key=KEY):
    start = time.perf_counter()
    out = _cc._decode_cache_entry(data, key)
    assert time.perf_counter() - start < 1.0, "decoding took too long"
    assert out is None or isinstance(out, dict)
    return out


@settings(max_examples=300, deadline=None)
@given(images)
def test_what_was_written_reads_back(image):
    out = decode(encode(image))
    assert out is not None
    assert out["data"] == image["data"] and out["format"] == image["format"]
    assert out["log"] == image["log"] and out["command"] == image["command"]
    assert out["lowered_names"] == image["lowered_names"]
    assert decode(encode(image), key="cd" * 32) is None  # another key's entry is not believed


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=4096))
def test_random_bytes_are_a_miss(data):
    assert decode(data) is None


@settings(max_examples=300, deadline=None)
@given(images, st.data())
def test_a_truncated_entry_is_a_miss(image, data):
    entry = encode(image)
    cut = data.draw(st.integers(min_value=0, max_value=len(entry) - 1))
    assert decode(entry[:cut]) is None


@settings(max_examples=300, deadline=None)
@given(images, st.data())
def test_a_changed_byte_is_a_miss(image, data):
    entry = bytearray(encode(image))
    at = data.draw(st.integers(min_value=0, max_value=len(entry) - 1))
    entry[at] ^= data.draw(st.integers(min_value=1, max_value=255))
    assert decode(bytes(entry)) is None


@settings(max_examples=300, deadline=None)
@given(images, st.data())
def test_lying_lengths_behind_a_valid_checksum_are_a_miss(image, data):
    """Overwrite 4 or 8 bytes anywhere in the payload with a huge or random number and fix the
    checksum: a length or count that lies must neither be believed nor allocated."""
    entry = bytearray(encode(image))
    width = data.draw(st.sampled_from([4, 8]))
    at = data.draw(st.integers(min_value=HEADER, max_value=len(entry) - 32 - width))
    value = data.draw(
        st.one_of(
            st.just(2 ** (8 * width) - 1),
            st.just(2 ** (8 * width - 2)),
            st.integers(min_value=0, max_value=2 ** (8 * width) - 1),
        )
    )
    entry[at : at + width] = value.to_bytes(width, "little")
    out = decode(reseal(bytes(entry)))
    if out is not None:  # a change the format cannot tell (inside a string's bytes)
        assert len(out["data"]) <= len(entry)


def test_an_announced_size_that_is_not_the_files_is_a_miss():
    entry = bytearray(encode({"data": b"x" * 100}))
    struct.pack_into("<Q", entry, HEADER - 8, 1 << 60)
    assert decode(reseal(bytes(entry))) is None
