#!/usr/bin/env python3
"""Builds ``pycuda-<PyCUDA version>+cuplug.<cuplug version>-py3-none-any.whl``: a tiny ``pycuda``
distribution that satisfies a library's ``pycuda`` dependency without building PyCUDA. Its
``pycuda`` package steps aside for cuplug's alias (cuplug.compat.pycuda), so ``import
pycuda.gpuarray`` gives cuplug's, with no ``import cuplug.compat.pycuda`` line and also for
``python -m pycuda.debug``. The version is PyCUDA's that cuplug implements, with the local label
``+cuplug.<version>`` saying what it is; it requires cuplug.

    python tools/build_pycuda_shim.py [--out DIR] [--pycuda-version 2026.1]
    pip install DIR/pycuda-2026.1+cuplug.0.1.0-py3-none-any.whl

Standard library only: a wheel is a zip file with its metadata (PEP 427); no build backend or
network is needed.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import pathlib
import re
import sys
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
PYCUDA_VERSION = "2026.1"  # the PyCUDA API cuplug implements (docs/compat.md)

INIT = '''"""Stand-in for PyCUDA, installed by cuplug's pycuda shim ({version}): ``pycuda`` and
``pycuda.<name>`` are cuplug's modules (cuplug.compat.pycuda). Uninstall this distribution to
use a real PyCUDA again."""

import sys

# Step aside: the alias refuses to install while a `pycuda` that is not cuplug's is imported,
# and then answers every pycuda import (this one's result included) with cuplug's modules.
del sys.modules[__name__]
import cuplug.compat.pycuda  # noqa: E402,F401
import pycuda  # noqa: E402  (now cuplug, through the alias)

sys.modules[__name__] = pycuda
'''


def cuplug_version() -> str:
    text = (ROOT / "python" / "cuplug" / "__init__.py").read_text()
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build(out_dir: pathlib.Path, pycuda_version: str = PYCUDA_VERSION) -> pathlib.Path:
    """Writes the wheel into out_dir and returns its path."""
    cuplug = cuplug_version()
    local = re.sub(r"[^a-z0-9]+", ".", cuplug.lower()).strip(".")
    version = f"{pycuda_version}+cuplug.{local}"
    dist_info = f"pycuda-{version}.dist-info"
    files = {
        "pycuda/__init__.py": INIT.format(version=version).encode(),
        f"{dist_info}/METADATA": (
            "Metadata-Version: 2.1\n"
            "Name: pycuda\n"
            f"Version: {version}\n"
            f"Summary: Stand-in for PyCUDA {pycuda_version}: pycuda is cuplug {cuplug} "
            "(cuplug.compat.pycuda)\n"
            "License: MIT\n"
            f"Requires-Dist: cuplug>={cuplug}\n"
            "Requires-Python: >=3.9\n"
        ).encode(),
        f"{dist_info}/WHEEL": (
            b"Wheel-Version: 1.0\n"
            b"Generator: cuplug tools/build_pycuda_shim.py\n"
            b"Root-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
        f"{dist_info}/top_level.txt": b"pycuda\n",
    }
    record = [_record_line(name, data) for name, data in files.items()]
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"pycuda-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return wheel


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "dist"), help="folder for the wheel")
    parser.add_argument(
        "--pycuda-version", default=PYCUDA_VERSION, help="the PyCUDA version it stands for"
    )
    args = parser.parse_args(argv)
    print(build(pathlib.Path(args.out), args.pycuda_version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
