"""PNG files written with the standard library's zlib (cuplug.gl._png)."""

import zlib

import numpy as np
import pytest

png = pytest.importorskip("cuplug.gl._png")


def test_a_png_round_trips_and_is_valid(tmp_path):
    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, (5, 7, 4), dtype=np.uint8)
    path = tmp_path / "x.png"
    png.write(path, image)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    # Every chunk's CRC is right (readers reject the file otherwise).
    at = 8
    while at < len(data):
        length = int.from_bytes(data[at : at + 4], "big")
        body = data[at + 4 : at + 8 + length]
        assert int.from_bytes(data[at + 8 + length : at + 12 + length], "big") == zlib.crc32(body)
        at += 12 + length
    assert (png.read(path) == image).all()


def test_only_rgba8_images_are_written():
    with pytest.raises(ValueError, match=r"\(height, width, 4\) uint8.*shape \(2, 2, 3\)"):
        png.encode(np.zeros((2, 2, 3), np.uint8))
