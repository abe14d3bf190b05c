"""PyCUDA's ``pycuda.scan`` (cuplug.scan re-exports it): InclusiveScanKernel and
ExclusiveScanKernel, and ArrayScan (cumsum/cumprod); PyOpenCL's GenericScanKernel, which PyCUDA
lacks, is in generic_scan.py on the same modules, tuning and look-back state.

``InclusiveScanKernel(np.int32, "a+b")(x)`` scans ``x`` in place; ``output_ary=`` another array,
or ``"new"`` for a new one. The kernels come from cuplug._codegen.scan: one pass over the data
(a deterministic decoupled look-back across tiles), or one block for short inputs; float results
are the same bits on every run. Modules are compiled when a kernel is made (errors show there, as
in PyCUDA) and loaded once per context.
"""

from __future__ import annotations

import numpy as np

from cuplug import _core, _dtypes
from cuplug._codegen import scan as _sg
from cuplug._codegen.names import is_c_identifier
from cuplug._compile.source_module import SourceModule
from cuplug._driver import context_cache
from cuplug._kernels import tuning as _tuning
from cuplug._kernels.engine import _compile_options, pch_options
from cuplug._kernels.results import empty as _empty

__all__ = ["ExclusiveScanKernel", "InclusiveScanKernel"]


def _tune_overrides():
    """CUPLUG_SCAN_TUNE="block=256,items=16,vec=4,single_tiles=4": experiments on a GPU. A value
    it does not accept is named in a warning and ignored (cuplug._kernels.tuning)."""
    return _tuning.key_values(
        "CUPLUG_SCAN_TUNE",
        {
            "block": (lambda v: 32 <= v <= 1024 and v % 32 == 0, "a multiple of 32 up to 1024"),
            "items": _tuning.between(1, 256),
            "vec": (lambda v: v in (1, 2, 4, 8, 16), "1, 2, 4, 8 or 16"),
            "single_tiles": _tuning.between(1, 1 << 20),
            "min_sleep": _tuning.between(0, 1 << 20),
            "max_sleep": _tuning.between(0, 1 << 20),
            "blockidx": _tuning.between(0, 1),
        },
    )


TUNE_OVERRIDES = _tune_overrides()


def _is_array(x):
    return hasattr(x, "gpudata") and hasattr(x, "dtype") and hasattr(x, "shape")


def _options(user_options, source, builtin):
    """Compiler options of a scan module: the user's, then --fmad=false (see
    cuplug._codegen.scan) unless they chose contraction themselves."""
    opts = list(user_options or ())
    if not any("fmad" in o or "fast_math" in o or "fast-math" in o for o in opts):
        opts += _sg.OPTIONS
    if "cuda/std/complex" in source:
        opts += pch_options()
    if builtin:
        opts = _compile_options([], opts, True)  # NVRTC's -minimal for cuplug's own kernels
    return opts


class _Module:
    """A generated module's functions (prepared), compiled once per source and loaded once per
    live context (cuplug._driver.context_cache: they go with the context)."""

    def __init__(self, source, entries, options, keep=False):
        self.source = source
        self.entries = entries  # [(name, prepared format)]
        self.options = options
        self.keep = keep

    def functions(self):
        ctx = _core.Context.get_current(adopt=True)
        mine = context_cache.per_object(ctx, "scan")
        entry = mine.get(self)
        if entry is None:
            mod = SourceModule(self.source, no_extern_c=True, options=self.options, keep=self.keep)
            funcs = []
            for name, fmt in self.entries:
                f = mod.get_function(name)
                f.prepare(fmt)
                funcs.append(f)
            sms = ctx.get_device().get_attribute(_core.device_attribute.MULTIPROCESSOR_COUNT)
            entry = mine[self] = (funcs, sms)
        return entry


def _scratch(tiles, words, stream, allocator):
    """Zeroed look-back state for a multi-block launch (a uint8 GPUArray), or None for one."""
    buf = _empty((_sg.scratch_bytes(tiles, words),), np.uint8, allocator=allocator)
    _core.memset_d32_async(buf.ptr, 0, _sg.scratch_zero_bytes(tiles) // 4, stream)
    return buf


def _grid(tiles, tuning):
    if tiles >= 2**32:
        raise ValueError(f"scan: {tiles} tiles of {tuning.tile} elements is too many (< 2**32)")
    return 1 if tiles <= tuning.single_tiles else tiles


class ArrayScan:
    """One generated array scan (cuplug._codegen.scan.generate_array_scan), callable on
    device addresses: ``scan(in_ptr, in_step, out_ptr, out_step, n, row=0, stream, allocator)``
    with steps in elements (negative ones too); ``row`` > 0 restarts the scan every ``row``
    elements (a kernel generated ``segmented``)."""

    def __init__(
        self,
        name,
        in_dtype,
        scan_dtype,
        out_dtype,
        scan_expr,
        neutral=None,
        exclusive=False,
        segmented=False,
        preamble="",
        options=None,
        builtin=False,
        keep=False,
    ):
        self.in_dtype, self.scan_dtype, self.out_dtype = map(
            np.dtype, (in_dtype, scan_dtype, out_dtype)
        )
        self.segmented = segmented
        words = _sg.value_words(self.scan_dtype.itemsize, segmented)
        io = max(self.in_dtype.itemsize, self.out_dtype.itemsize)
        tuning = _sg.tuning_for(4 * words, io, TUNE_OVERRIDES)
        self.gen = _sg.generate_array_scan(
            name,
            self.in_dtype,
            self.scan_dtype,
            self.out_dtype,
            scan_expr,
            neutral,
            exclusive,
            segmented,
            preamble,
            tuning,
        )
        opts = _options(options, self.gen.source, builtin)
        self.module = _Module(self.gen.source, [(name, self.gen.arg_format())], opts, keep)

    @property
    def source(self):
        return self.gen.source

    def compile(self):
        self.module.functions()

    def __call__(self, in_ptr, in_step, out_ptr, out_step, n, row=0, stream=None, allocator=None):
        (func,), _ = self.module.functions()
        t, gen = self.gen.tuning, self.gen
        vec_ok = int(
            gen.vector
            and in_step == 1
            and out_step == 1
            and in_ptr % (t.vec * self.in_dtype.itemsize) == 0
            and out_ptr % (gen.piece * self.out_dtype.itemsize) == 0
        )
        tiles = -(-n // t.tile)
        grid = _grid(tiles, t)
        state = _scratch(tiles, gen.words, stream, allocator) if grid > 1 else None
        args = [in_ptr, in_step, out_ptr, out_step]
        if self.segmented:
            args.append(row)
        args += [vec_ok, n, state.ptr if state is not None else 0]
        func.prepared_async_call((grid, 1), (t.block, 1, 1), stream, *args)
        return state  # the caller keeps it until the launch is queued


def _step(ary):
    """The element step of a 1-d array (its byte stride in elements)."""
    s = ary.strides[0] if ary.ndim else ary.itemsize
    if s % ary.itemsize:
        return None
    return s // ary.itemsize


def _extent(ary):
    """[lowest, highest) byte addresses a 1-d array touches."""
    step = ary.strides[0]
    first, last = ary.ptr, ary.ptr + step * (ary.size - 1)
    return min(first, last), max(first, last) + ary.itemsize


def _scan_dtype(dtype):
    """Float16 arrays are scanned in float32 (the values the expression sees)."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


class _ScanKernelBase:
    _exclusive = False

    def __init__(
        self,
        dtype,
        scan_expr,
        neutral=None,
        name_prefix="scan",
        options=None,
        preamble="",
        devices=None,
    ):
        if self._exclusive and neutral is None:
            raise ValueError("neutral element is required for exclusive scan")
        if not is_c_identifier(name_prefix):
            raise ValueError(f"{type(self).__name__}: name_prefix {name_prefix!r} is not a C name")
        self.dtype = np.dtype(dtype)
        try:
            _dtypes.ctype(self.dtype)
        except ValueError:
            raise TypeError(
                f"{type(self).__name__}: no C type for dtype {self.dtype}; register it with "
                "cuplug.tools.get_or_register_dtype (and define it in preamble=)"
            ) from None
        self.scan_expr = scan_expr
        self.neutral = None if neutral is None else str(neutral)
        self.name_prefix = name_prefix
        kind = "exclusive" if self._exclusive else "inclusive"
        self._scan = ArrayScan(
            f"{name_prefix}_{kind}_scan",
            self.dtype,
            _scan_dtype(self.dtype),
            self.dtype,
            scan_expr,
            self.neutral,
            exclusive=self._exclusive,
            preamble=preamble,
            options=options,
        )
        self._scan.compile()  # PyCUDA compiles eagerly: errors show here

    @property
    def source(self):
        """The generated CUDA source."""
        return self._scan.source

    def _check(self, what, ary):
        if not _is_array(ary):
            raise TypeError(
                f"{type(self).__name__}: {what} must be a GPUArray, got {type(ary).__name__}"
            )
        if ary.dtype != self.dtype:
            raise TypeError(
                f"{type(self).__name__}: {what} has dtype {ary.dtype}, the kernel scans "
                f"{self.dtype}; make a kernel for {ary.dtype} or use .astype({self.dtype})"
            )
        if ary.ndim != 1:
            raise ValueError(
                f"{type(self).__name__}: scans 1-d arrays, {what} has shape {ary.shape}; pass "
                "ary.ravel() (or use gpuarray.cumsum(ary, axis=...))"
            )

    def __call__(self, input_ary, output_ary=None, allocator=None, stream=None, queue=None):
        """Scans ``input_ary`` (1-d, any step) into ``output_ary``: ``None`` for in place, an
        array of the same shape and dtype, or ``"new"``; returns the output. ``queue`` is the
        name PyCUDA's docs use for ``stream``."""
        if stream is None:
            stream = queue
        self._check("input_ary", input_ary)
        _core._array._check_same_device("scan", input_ary, output_ary)
        allocator = allocator or input_ary.allocator
        if output_ary is None:
            output_ary = input_ary
        elif isinstance(output_ary, str):
            if output_ary != "new":
                raise ValueError(f"output_ary must be None, an array or 'new', got {output_ary!r}")
            output_ary = _empty(input_ary.shape, self.dtype, allocator=allocator)
        self._check("output_ary", output_ary)
        if input_ary.shape != output_ary.shape:
            raise ValueError("input and output must have the same shape")
        n = input_ary.size
        if not n:
            return output_ary
        src = input_ary
        in_step, out_step = _step(input_ary), _step(output_ary)
        if in_step is None or out_step is None:
            raise ValueError("scan: array strides must be whole elements")
        if output_ary is not input_ary or out_step != in_step:
            lo_i, hi_i = _extent(input_ary)
            lo_o, hi_o = _extent(output_ary)
            same = input_ary.ptr == output_ary.ptr and in_step == out_step
            if lo_i < hi_o and lo_o < hi_i and not same:
                # Partly overlapping views: later tiles would read what earlier ones wrote.
                src = input_ary.copy(stream=stream)
                in_step = 1
        state = self._scan(
            src.ptr, in_step, output_ary.ptr, out_step, n, stream=stream, allocator=allocator
        )
        del state, src
        return output_ary


class InclusiveScanKernel(_ScanKernelBase):
    """PyCUDA's InclusiveScanKernel(dtype, scan_expr, neutral=None, name_prefix="scan",
    options=None, preamble="", devices=None): ``out[i] = in[0] (+) in[1] (+) ⋯ (+) in[i]`` with
    ``(+)`` the C expression ``scan_expr`` of ``a`` (earlier) and ``b`` (later)."""


class ExclusiveScanKernel(_ScanKernelBase):
    """PyCUDA's ExclusiveScanKernel: ``out[0] = neutral``, ``out[i] = in[0] (+) in[1] (+) ⋯ (+)
    in[i-1]``; ``neutral`` (a C expression) is required."""

    _exclusive = True
