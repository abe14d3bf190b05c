"""The elementwise engine's Python side: a :class:`Kernel` is one operation over fixed argument
dtypes. Launching it (C++, ``_core._array.ElementwiseCore``) broadcasts the vector operands,
collapses dimensions, picks the access classes, vector width and index width, and looks the
kernel up by (layout, context); on a miss it calls back here to generate the source
(cuplug._codegen.elementwise), compile it through the selected compiler backend and the compile
cache (cuplug.compiler.SourceModule), and load it through the launcher backend.
"""

from __future__ import annotations

import numpy as np

from cuplug import _core
from cuplug._codegen import elementwise as _cg
from cuplug._compile.source_module import SourceModule
from cuplug._kernels import tuning as _tuning

__all__ = ["Arg", "Kernel", "Layout"]

Arg = _cg.Arg
Layout = _cg.Layout


#: NVRTC options for kernels that include <cuda/std/complex> (see pch_options). NVRTC keeps
#: one automatic precompiled header per process and says (warning 629) when a compile's options
#: differ from those it was made with; it then makes a new one, so that is not worth a warning.
PCH_OPTIONS = ["-pch", "--pch-messages=false", "-diag-suppress=629,630"]

# The first NVRTC release that takes each option cuplug adds to its own kernels' compiles
# (NVIDIA's cu12 NVRTC wheels 12.0, 12.3, 12.4, 12.6, 12.8 and 12.9 asked, 2026-11-28: -minimal
# from 12.4, -pch and --pch-messages from 12.8; there is no 12.7). NVRTC 12.0 refuses both, so
# on a CUDA 12 driver with the cu12 extra's NVRTC every built-in kernel failed to compile.
_MINIMAL_SINCE = (12, 4)
_PCH_SINCE = (12, 8)
_NVRTC_VERSIONS: dict[tuple, tuple[int, int] | None] = {}

# Code generation choices of the built-in operations (tuned on an H100/H200; CUPLUG_ARRAY_TUNE=
# "unroll=4,minimal=1" overrides them for experiments).
# A value it does not accept is named in a warning and ignored (cuplug._kernels.tuning).
TUNING = {"unroll": 1, "minimal": 1}
TUNING.update(
    _tuning.key_values(
        "CUPLUG_ARRAY_TUNE",
        {
            "unroll": _tuning.between(1, 64),
            "minimal": _tuning.between(0, 1),
            "blocks": _tuning.between(1, 1024),
        },
    )
)
if "blocks" in TUNING:
    _core._register_hooks(blocks_per_sm=TUNING["blocks"])


def _nvrtc_version() -> tuple[int, int] | None:
    """(major, minor) of the selected compiler when it is NVRTC, else None (asked once per
    selection: the backend or its options may change at run time)."""
    try:
        selected = _core.backends.selected("compiler")
    except Exception:  # pragma: no cover - no config: the compile will say why
        return None
    if selected[0] != "nvrtc":
        return None
    if selected not in _NVRTC_VERSIONS:
        try:
            version = _core._compiler.compiler_info()[1]  # "nvrtc 12.0 + cuplug std headers ..."
        except Exception:  # no NVRTC to load: the compile will say why
            return None
        # No regular expression: compiling one costs a fresh process's first x * 2 ~0.1 ms.
        name, _, rest = version.partition(" ")
        major, _, minor = rest.split(" ", 1)[0].partition(".")
        ok = name == "nvrtc" and major.isdigit() and minor.isdigit()
        _NVRTC_VERSIONS[selected] = (int(major), int(minor)) if ok else None
    return _NVRTC_VERSIONS[selected]


def pch_options() -> list[str]:
    """NVRTC's automatic precompiled header (PCH_OPTIONS) where the selected compiler has it:
    NVRTC 12.8 or newer; nothing for older NVRTC and other backends."""
    version = _nvrtc_version()
    return list(PCH_OPTIONS) if version is not None and version >= _PCH_SINCE else []


def _compile_options(args, options, minimal):
    opts = list(options or ())
    version = _nvrtc_version()
    if version is None:
        return opts
    if any(np.dtype(a.dtype).kind == "c" for a in args):
        # <cuda/std/complex> costs most of a complex kernel's compile; NVRTC's automatic
        # precompiled header makes every later complex kernel of the process cheap.
        opts += pch_options()
    if minimal and TUNING.get("minimal") and version >= _MINIMAL_SINCE:
        # Leaves out texture, device-runtime and runtime-API declarations: half of a small
        # kernel's compile time (15 -> 8 ms on an H100 machine).
        opts.append("-minimal")
    return opts


class Kernel:
    """An elementwise operation: ``Kernel(args, "z[i] = a*x[i] + b*y[i]", "axpbyz")``.

    ``args``: :class:`Arg` (name, dtype, vector) in parameter order. ``raw``: names of vector
    arguments passed as bare pointers (indexed by the operation itself, ``a[idx[i]]``: not
    broadcast; they must be C-contiguous). ``options``: compiler options. ``builtin``: an
    operation of cuplug's own, whose callers never pass partially overlapping vectors (it gets
    ``__restrict__`` pointers, an unrolled loop and NVRTC's -minimal). ``minimal``: compile with
    NVRTC's -minimal (no texture / device-runtime / runtime-API declarations; about half the
    compile time of a small kernel); default: only for built-in operations. Calling it launches:
    ``kernel(*operands, stream=None, shape=None)``, GPUArrays for vectors (any strides and
    broadcastable shapes, written ones of the broadcast shape), numbers for scalars (cast to
    the declared dtype as NumPy casts Python scalars: out-of-range ints raise OverflowError).
    """

    def __init__(
        self,
        args,
        operation,
        name="kernel",
        preamble="",
        loop_prep="",
        after_loop="",
        options=None,
        raw=(),
        builtin=False,
        minimal=None,
    ):
        self.args = [a if isinstance(a, Arg) else Arg(*a) for a in args]
        self.operation = operation
        self.name = name
        self.preamble = preamble
        self.loop_prep = loop_prep
        self.after_loop = after_loop
        self.raw = frozenset(raw)
        self.builtin = builtin
        self.options = _compile_options(self.args, options, builtin if minimal is None else minimal)
        names = [a.name for a in self.args if a.vector and a.name not in self.raw]
        info = _cg.analyze(operation, names)
        raw_written = _cg.analyze(operation, sorted(self.raw)).written if self.raw else ()
        self.info = info
        specs = [
            (
                a.name,
                a.dtype,
                a.vector,
                a.vector and (a.name in info.written or a.name in raw_written),
                a.name in self.raw,
            )
            for a in self.args
        ]
        self.core = _core._array.ElementwiseCore(
            specs,
            self._generate,
            name,
            keep_order=info.uses_index or bool(info.other_subscripts),
            vectorizable=info.vectorizable,
            any_layout=info.any_layout,
        )

    def __call__(self, *operands, stream=None, shape=None):
        self.core(*operands, stream=stream, shape=shape)

    def plan(self, *operands, shape=None):
        """The layout a launch over these operands would use (a dict; no device needed)."""
        return self.core.plan(*operands, shape=shape)

    def source(self, layout):
        """(source, entry name) for a :class:`Layout` (or its classes string)."""
        if isinstance(layout, str):
            layout = Layout(layout)
        return _cg.generate(
            self.args,
            self.operation,
            f"{self.name}_{layout.key}",
            layout,
            self.preamble,
            self.loop_prep,
            self.after_loop,
            restrict=self.builtin,
            unroll=TUNING.get("unroll", 1) if self.builtin else 1,
        )

    def _generate(self, classes, ndim, vec, index64):
        source, entry = self.source(Layout(classes, ndim=ndim, vec=vec, index64=index64))
        module = SourceModule(source, no_extern_c=True, options=self.options)
        return module.get_function(entry)
