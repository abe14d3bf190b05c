"""PNG files of RGBA8 images with the standard library's zlib (no imaging dependency)."""

from __future__ import annotations

import struct
import zlib

import numpy as np


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def encode(pixels) -> bytes:
    """The PNG of an (height, width, 4) uint8 array, top row first."""
    image = np.ascontiguousarray(pixels)
    if image.ndim != 3 or image.shape[2] != 4 or image.dtype != np.uint8:
        raise ValueError(
            f"a PNG is written from a (height, width, 4) uint8 RGBA array, not shape "
            f"{image.shape} of {image.dtype}"
        )
    height, width = image.shape[:2]
    # Filter type 0 (none) before each row.
    rows = np.zeros((height, width * 4 + 1), np.uint8)
    rows[:, 1:] = image.reshape(height, width * 4)
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
        + _chunk(b"IEND", b"")
    )


def write(path, pixels) -> None:
    with open(path, "wb") as f:
        f.write(encode(pixels))


def read(path) -> np.ndarray:
    """Reads back what write() writes (8-bit RGBA, rows without filters), for tests."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG file")
    at, idat, width, height = 8, b"", 0, 0
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            if (depth, colour) != (8, 6):
                raise ValueError(f"{path}: only 8-bit RGBA PNG files are read here")
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, width * 4 + 1)
    if raw[:, 0].any():
        raise ValueError(f"{path}: rows with PNG filters are not read here")
    return raw[:, 1:].reshape(height, width, 4).copy()
