"""cuplug's one CUDA toolkit search order, from Python (docs/install.md, "Where cuplug looks for the
CUDA toolkit"). The order itself lives in the core (cuplug/toolkit.hpp), so the plugins and the
Python package look in the same places; this module adds NVIDIA's pip wheels of the running Python
(``pip install cuplug[cu13]``) to it, through ``CUPLUG_TOOLKIT_WHEELS``, before the core first
looks (``import cuplug`` calls :func:`export_wheel_roots` before it loads the extension)."""

from __future__ import annotations

import os
import sys

#: Where NVIDIA's CUDA 13 wheels (nvidia-cuda-nvrtc, nvidia-curand, nvidia-cuda-runtime, ...) put
#: their bin/, include/ and lib/, under a site-packages folder.
WHEEL_LAYOUT = os.path.join("nvidia", "cu13")

#: Where NVIDIA's CUDA 12 wheels (nvidia-cuda-nvrtc-cu12, ...; ``pip install cuplug[cu12]``) put
#: theirs: one folder per component, each with its own include/ and lib/.
WHEEL_LAYOUTS_CU12 = tuple(
    os.path.join("nvidia", component)
    for component in ("cuda_nvrtc", "cuda_runtime", "cuda_cccl", "curand", "nvjitlink", "cuda_nvcc")
)


def wheel_roots(paths: list[str] | None = None) -> list[str]:
    """The toolkit folders of NVIDIA's pip wheels on ``paths`` (default ``sys.path``), in order:
    each site folder's CUDA 13 folder, then its CUDA 12 component folders. Which of them the core
    uses is decided by the driver (cuplug/toolkit.hpp: wanted_toolkit). The current directory
    ("" on sys.path) is never looked in."""
    out: list[str] = []
    for entry in sys.path if paths is None else paths:
        if not entry or not os.path.isabs(entry):
            continue
        for layout in (WHEEL_LAYOUT, *WHEEL_LAYOUTS_CU12):
            root = os.path.join(entry, layout)
            if root not in out and os.path.isdir(root):
                out.append(root)
    return out


def export_wheel_roots() -> None:
    """Tells the core (and child processes) where this Python's toolkit wheels are."""
    roots = wheel_roots()
    if roots:
        os.environ["CUPLUG_TOOLKIT_WHEELS"] = os.pathsep.join(roots)


def roots() -> list[tuple[str, str]]:
    """``[(folder, origin)]``: the toolkit folders to look in, in the search order."""
    from cuplug import _core

    return [tuple(r) for r in _core.backends.toolkit_roots()]


def library_dirs() -> list[str]:
    """The library folders of every toolkit folder, in the search order."""
    from cuplug import _core

    return [d for root, _ in roots() for d in _core.backends.toolkit_library_dirs(root)]


def find_program(name: str) -> str | None:
    """``bin/<name>`` of the first toolkit folder that has it as an executable, or None."""
    for root, _ in roots():
        path = os.path.join(root, "bin", name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None
