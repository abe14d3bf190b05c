"""Source generation for elementwise kernels: PyCUDA's ``z[i] = a*x[i] + b*y[i]`` operations over
contiguous, strided, broadcast and vectorised layouts. Pure functions of their arguments (no
device, no compiler), so CI checks what they produce by compiling it with NVRTC.

The entry point is :func:`generate`::

    args = [Arg("z", np.float32, True), Arg("a", np.float32, False), Arg("x", np.float32, True)]
    source, entry = generate(args, "z[i] = a*x[i]", "axpb", Layout(classes="csc"))

A :class:`Layout` says how the iteration space was laid out by the engine (cuplug._kernels.engine):
``ndim`` dimensions after collapsing (>= 1), ``vec`` elements per work item along the innermost
dimension (16-byte loads/stores), 32- or 64-bit index arithmetic, and per argument a class:

====  ===========================================================================================
 c    vector, contiguous over the iteration space: element ``i`` is at ``x[i]``
 g    vector, strided: its offset comes from the coordinates and its strides (in elements);
      with ``vec > 1`` its innermost stride is 1 element
 b    vector, strided with innermost stride 0 (``vec > 1`` only): one element per work item
 z    vector whose strides are all 0 (a 0-d array broadcast): always ``x[0]``
 p    vector passed as a bare pointer, outside the iteration space: the operation indexes it
      itself (``z[i] = a[idx[i]]``); it takes no part in broadcasting
 s    scalar, passed by value
====  ===========================================================================================

Kernel parameters, in order (the engine packs them; :func:`param_layout` gives offsets): the
arguments as declared (vectors as ``T *name``, scalars as ``T name``), then, when some argument is
of class g or b, one ``cuplug_nd`` struct (shape, fast-division constants, strides of the g/b
arguments in argument order; see :func:`nd_struct`), then ``n`` (number of elements, idx type),
then for range kernels ``start, stop, step`` (long long).

Names an operation may use, as in PyCUDA: the argument names, ``i`` (the element's linear index
in C order over the iteration shape; not in vectorised layouts), ``n``, ``tid``,
``total_threads``, ``cta_start``; loop_prep and after_loop run once per thread before and after
the loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from cuplug import _dtypes
from cuplug._codegen.names import is_c_identifier, word_tag

__all__ = [
    "Arg",
    "Layout",
    "OpInfo",
    "analyze",
    "generate",
    "nd_struct",
    "param_layout",
]

#: Threads per block every generated kernel is built for (``__launch_bounds__``).
BLOCK = 256


@dataclass(frozen=True)
class Arg:
    """One kernel argument: a name, a dtype, and whether it is a vector (device array)."""

    name: str
    dtype: np.dtype
    vector: bool

    def __post_init__(self):
        object.__setattr__(self, "dtype", np.dtype(self.dtype))
        if not is_c_identifier(self.name):
            raise ValueError(f"argument name {self.name!r} is not a C identifier")


@dataclass(frozen=True)
class Layout:
    """How the engine laid out one launch; see the module docstring."""

    classes: str  # one of c g b z s per argument
    ndim: int = 1
    vec: int = 1
    index64: bool = False
    use_range: bool = False

    def __post_init__(self):
        if self.ndim < 1:
            raise ValueError("Layout.ndim must be >= 1")
        if self.vec not in (1, 2, 4, 8, 16):
            raise ValueError(f"Layout.vec must be 1, 2, 4, 8 or 16, got {self.vec}")
        bad = set(self.classes) - set("cgbzsp")
        if bad:
            raise ValueError(f"Layout.classes: unknown classes {sorted(bad)}")
        if "b" in self.classes and self.vec == 1:
            raise ValueError("Layout: class 'b' needs vec > 1 (it is 'g' otherwise)")
        if self.vec > 1 and "p" in self.classes:
            raise ValueError("Layout: bare-pointer arguments (class 'p') rule out vec > 1")
        if self.use_range and (self.vec != 1 or self.strided):
            raise ValueError("range kernels take contiguous layouts only")

    @property
    def strided(self):
        return "g" in self.classes or "b" in self.classes

    @property
    def key(self):
        """A short string naming the layout (part of entry names and cache keys)."""
        return (
            f"{self.classes}_d{self.ndim}v{self.vec}{'L' if self.index64 else 'I'}"
            f"{'r' if self.use_range else ''}"
        )


@dataclass(frozen=True)
class OpInfo:
    """What an operation does with its vector arguments (see :func:`analyze`)."""

    written: frozenset  # names assigned to (x[...] = / += ...)
    read: frozenset  # names read through x[i]
    uses_index: bool  # i used other than as a subscript x[i] of a vector argument
    other_subscripts: frozenset  # vector names subscripted with something other than [i]

    @property
    def vectorizable(self):
        return not self.uses_index and not self.other_subscripts

    @property
    def any_layout(self):
        """True when every access is name[i], so strided/broadcast layouts are meaningful."""
        return not self.other_subscripts


# Fixed patterns, compiled once: the analysis of the first array operation of a process is on
# its critical path, and a pattern per vector name cost ~0.1 ms each to compile.
_IDENT = re.compile(r"\b[A-Za-z_]\w*")
_SUBSCRIPT_I = re.compile(r"\b([A-Za-z_]\w*)\s*\[\s*i\s*\]")
_SUBSCRIPT_ASSIGN = re.compile(r"\b([A-Za-z_]\w*)\s*\[[^\]]*\]\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)")
_ASSIGN_AFTER = re.compile(r"\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)")
_PURE_ASSIGN_AFTER = re.compile(r"\s*=(?!=)")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"//[^\n]*")
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def _strip_comments_and_strings(code):
    code = _BLOCK_COMMENT.sub(" ", code)
    code = _LINE_COMMENT.sub(" ", code)
    return _STRING.sub('""', code)


def analyze(operation, vector_names):
    """Which vectors ``operation`` writes and reads, and whether it needs the linear index."""
    code = _strip_comments_and_strings(operation)
    names = set(vector_names)
    written, read, other = set(), set(), set()
    rest, last = [], 0
    for m in _SUBSCRIPT_I.finditer(code):
        name = m.group(1)
        if name not in names:
            continue
        after = code[m.end() :]
        if _PURE_ASSIGN_AFTER.match(after):
            written.add(name)
        elif _ASSIGN_AFTER.match(after):
            written.add(name)
            read.add(name)
        else:
            read.add(name)
        rest += (code[last : m.start()], " ")
        last = m.end()
    rest = "".join(rest) + code[last:]
    # Any other subscript (x[j], x[n-1-i]) or a bare use of the pointer.
    identifiers = set(_IDENT.findall(rest))
    other = identifiers & names
    for m in _SUBSCRIPT_ASSIGN.finditer(rest):
        if m.group(1) in names:
            written.add(m.group(1))
    uses_index = "i" in identifiers
    return OpInfo(frozenset(written), frozenset(read), uses_index, frozenset(other))


def _idx(layout):
    return "unsigned long long" if layout.index64 else "unsigned int"


def _off(layout):
    return "long long" if layout.index64 else "int"


def nd_struct(layout, n_strided):
    """(name, C definition) of the by-value struct carrying shape, division constants and the
    strides (elements) of the ``n_strided`` g/b arguments. Field order = packing order:
    ``shape[ndim]`` (idx), ``mul[ndim]``, ``shr[ndim]`` (unsigned; 32-bit fast division, zero
    in 64-bit layouts), ``stride[n_strided][ndim]`` (signed offset type)."""
    idx, off = _idx(layout), _off(layout)
    nd = layout.ndim
    name = f"cuplug_nd_{nd}_{n_strided}_{'L' if layout.index64 else 'I'}"
    guard = name.upper()
    body = (
        f"#ifndef {guard}\n#define {guard}\n"
        f"struct {name} {{\n"
        f"  {idx} shape[{nd}];\n"
        f"  unsigned mul[{nd}];\n"
        f"  unsigned shr[{nd}];\n"
        f"  {off} stride[{max(n_strided, 1)}][{nd}];\n"
        f"}};\n#endif\n"
    )
    return name, body


def _align_of(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return dtype.itemsize  # libcu++ complex is alignas(2 * sizeof(T))
    return dtype.alignment


def param_layout(args, layout):
    """[(offset, size)] of every kernel parameter in order (arguments, the nd struct if any,
    n, then start/stop/step for range kernels), and the total size: how the engine packs."""
    out = []
    pos = 0

    def put(size, align):
        nonlocal pos
        pos = (pos + align - 1) // align * align
        out.append((pos, size))
        pos += size

    for a, cls in zip(args, layout.classes):
        if cls == "s":
            put(a.dtype.itemsize, _align_of(a.dtype))
        else:
            put(8, 8)
    idx_size = 8 if layout.index64 else 4
    off_size = 8 if layout.index64 else 4
    if layout.strided:
        ng = sum(c in "gb" for c in layout.classes)
        nd = layout.ndim
        size = nd * idx_size + 2 * nd * 4
        size = (size + off_size - 1) // off_size * off_size + max(ng, 1) * nd * off_size
        align = idx_size
        size = (size + align - 1) // align * align
        put(size, align)
    put(idx_size, idx_size)
    if layout.use_range:
        for _ in range(3):
            put(8, 8)
    return out, pos


def _vec_struct(dtype, vec):
    ct = _dtypes.ctype(dtype)
    tag = word_tag(ct)
    name = f"cuplug_v{vec}_{tag}"
    guard = name.upper()
    nbytes = np.dtype(dtype).itemsize * vec
    body = (
        f"#ifndef {guard}\n#define {guard}\n"
        f"struct alignas({nbytes}) {name} {{ {ct} v[{vec}]; }};\n#endif\n"
    )
    return name, body


def _offsets(args, layout, strided, index_var):
    """Statements computing cuplug_o_<name> for the g/b arguments from the linear index."""
    if not strided:
        return ""
    nd = layout.ndim
    off = _off(layout)
    idx = _idx(layout)
    lines = [f"{idx} cuplug_r = {index_var};"]
    for a in strided:
        lines.append(f"{off} cuplug_o_{a.name} = 0;")
    for k in range(nd - 1, 0, -1):
        if layout.index64:
            lines.append(f"{{ {idx} cuplug_q = cuplug_r / cuplug_nd.shape[{k}];")
        else:
            lines.append(
                f"{{ {idx} cuplug_q = __umulhi(cuplug_r, cuplug_nd.mul[{k}]) >> cuplug_nd.shr[{k}];"
            )
        lines.append(f"  {off} cuplug_c = ({off})(cuplug_r - cuplug_q * cuplug_nd.shape[{k}]);")
        for g, a in enumerate(strided):
            lines.append(f"  cuplug_o_{a.name} += cuplug_c * cuplug_nd.stride[{g}][{k}];")
        lines.append("  cuplug_r = cuplug_q; }")
    for g, a in enumerate(strided):
        lines.append(f"cuplug_o_{a.name} += ({off})cuplug_r * cuplug_nd.stride[{g}][0];")
    return "\n      ".join(lines)


def _substitute(operation, args, classes, replace):
    """operation with every vector access name[i] replaced by replace(arg, class)."""
    todo = {a.name: (a, cls) for a, cls in zip(args, classes) if a.vector and cls != "p"}

    def one(m):
        hit = todo.get(m.group(1))
        return m.group(0) if hit is None else replace(*hit)

    return _SUBSCRIPT_I.sub(one, operation) if todo else operation


def _check(args, layout, info):
    if len(layout.classes) != len(args):
        raise ValueError(
            f"Layout.classes has {len(layout.classes)} entries for {len(args)} arguments"
        )
    for a, cls in zip(args, layout.classes):
        if (cls == "s") == a.vector:
            raise ValueError(
                f"argument {a.name!r}: class {cls!r} does not fit a "
                f"{'vector' if a.vector else 'scalar'} argument"
            )
        if cls in "gbz" and a.name in info.other_subscripts:
            raise ValueError(
                f"argument {a.name!r} is indexed other than as {a.name}[i], which only "
                "contiguous arrays support"
            )
    if layout.vec > 1 and not info.vectorizable:
        raise ValueError("vectorised layouts need an operation that uses i only as name[i]")
    if layout.ndim > 1 and not layout.strided:
        raise ValueError("a layout of ndim > 1 needs a strided (g/b) argument")


def generate(
    args,
    operation,
    name="kernel",
    layout=None,
    preamble="",
    loop_prep="",
    after_loop="",
    restrict=False,
    unroll=1,
):
    """CUDA C++ source of one elementwise kernel and its entry name.

    ``args``: :class:`Arg` list in parameter order; ``operation``: PyCUDA-style statement(s)
    using ``name[i]`` for vectors; ``layout``: a :class:`Layout` (default: all vectors
    contiguous, scalar args by value, 32-bit index). The source includes only the headers its
    dtypes need (cuda_fp16.h for float16, <cuda/std/complex> for complex) and is wrapped in
    nothing: the entry is ``extern "C"``, its name ``name`` (not mangled).

    ``restrict`` declares the vectors ``__restrict__`` (and read-only ones const), which lets
    the compiler issue the loads of later iterations before earlier stores: only for callers
    whose vectors are either the same view or do not overlap at all (the array operators copy
    partially overlapping inputs first). ``unroll`` > 1 unrolls the main loop that many times
    (more loads in flight per thread)."""
    args = [a if isinstance(a, Arg) else Arg(*a) for a in args]
    if not is_c_identifier(name):
        raise ValueError(f"kernel name {name!r} is not a C identifier")
    if layout is None:
        layout = Layout("".join("c" if a.vector else "s" for a in args))
    info = analyze(
        operation, [a.name for a, c in zip(args, layout.classes) if a.vector and c != "p"]
    )
    _check(args, layout, info)

    idx = _idx(layout)
    off = _off(layout)
    head = _dtypes.headers_for(a.dtype for a in args)
    defs = []
    strided = [a for a, c in zip(args, layout.classes) if c in "gb"]

    params = []
    for a, cls in zip(args, layout.classes):
        ct = _dtypes.ctype(a.dtype)
        if cls == "s":
            params.append(f"{ct} {a.name}")
        elif restrict and cls != "p":
            const = "" if a.name in info.written else "const "
            params.append(f"{const}{ct} *__restrict__ {a.name}")
        else:
            params.append(f"{ct} *{a.name}")
    if layout.strided:
        nd_name, nd_def = nd_struct(layout, len(strided))
        defs.append(nd_def)
        params.append(f"const {nd_name} cuplug_nd")
    params.append(f"const {idx} n")
    if layout.use_range:
        params += ["const long long start", "const long long stop", "const long long step"]

    def scalar_access(a, cls):
        if cls == "z":
            return f"{a.name}[0]"
        if cls == "g":
            return f"{a.name}[cuplug_o_{a.name}]"
        return f"{a.name}[i]"

    body = []
    body.append(f"[[maybe_unused]] const {idx} tid = threadIdx.x;")
    body.append(f"[[maybe_unused]] const {idx} total_threads = ({idx})gridDim.x * blockDim.x;")
    body.append(f"[[maybe_unused]] const {idx} cta_start = ({idx})blockDim.x * blockIdx.x;")
    if layout.use_range:
        body.append("[[maybe_unused]] long long i;")
    else:
        body.append(f"[[maybe_unused]] {idx} i;")
    body.append(f"{loop_prep}\n  ;")

    if layout.use_range:
        op = _substitute(operation, args, layout.classes, scalar_access)
        body.append(
            "for (i = start + ((long long)cta_start + (long long)tid) * step;\n"
            "       (step < 0) ? (i > stop) : (i < stop);\n"
            "       i += (long long)total_threads * step) {\n"
            f"    {op}\n    ;\n  }}"
        )
    elif layout.vec == 1:
        op = _substitute(operation, args, layout.classes, scalar_access)
        offs = _offsets(args, layout, strided, "i")
        body.append(
            _unroll(unroll)
            + "for (i = cta_start + tid; i < n; i += total_threads) {\n"
            + (f"      {offs}\n" if offs else "")
            + f"    {op}\n    ;\n  }}"
        )
    else:
        body.append(_vector_loop(args, layout, info, operation, strided, defs, off, unroll))
    body.append(f"{after_loop}\n  ;")

    source = "\n".join(head) + ("\n" if head else "")
    source += "".join(defs)
    if preamble:
        source += preamble + "\n"
    source += (
        f'extern "C" __global__ void __launch_bounds__({BLOCK}) {name}(\n    '
        + ",\n    ".join(params)
        + ")\n{\n  "
        + "\n  ".join(body)
        + "\n}\n"
    )
    return source, name


def _unroll(unroll):
    return f"#pragma unroll {unroll}\n  " if unroll > 1 else ""


def _vector_loop(args, layout, info, operation, strided, defs, off, unroll=1):
    v = layout.vec
    idx = _idx(layout)
    loads, stores, decls = [], [], []
    for a, cls in zip(args, layout.classes):
        if cls in "szp":
            continue
        where = f"w * {v}" if cls == "c" else f"cuplug_o_{a.name}"
        if cls == "b":
            if a.name in info.written:
                raise ValueError(f"argument {a.name!r} is written but broadcast")
            if a.name in info.read:
                ct = _dtypes.ctype(a.dtype)
                loads.append(f"const {ct} cuplug_s_{a.name} = {a.name}[{where}];")
            continue
        vname, vdef = _vec_struct(a.dtype, v)
        if vdef not in defs:
            defs.append(vdef)
        if a.name in info.read:
            loads.append(
                f"{vname} cuplug_r_{a.name} = "
                f"*reinterpret_cast<const {vname} *>({a.name} + {where});"
            )
        elif a.name in info.written:
            decls.append(f"{vname} cuplug_r_{a.name};")
        if a.name in info.written:
            stores.append(f"*reinterpret_cast<{vname} *>({a.name} + {where}) = cuplug_r_{a.name};")

    def vec_access(a, cls):
        if cls == "z":
            return f"{a.name}[0]"
        if cls == "b":
            return f"cuplug_s_{a.name}"
        return f"cuplug_r_{a.name}.v[cuplug_j]"

    op = _substitute(operation, args, layout.classes, vec_access)
    offs = _offsets(args, layout, strided, "w")
    lines = [
        f"const {idx} cuplug_nw = n / {v};",
        _unroll(unroll) + f"for ({idx} w = cta_start + tid; w < cuplug_nw; w += total_threads) {{",
    ]
    if offs:
        lines.append(f"    {offs}")
    lines += ["    " + s for s in decls + loads]
    lines.append(f"    #pragma unroll\n    for (int cuplug_j = 0; cuplug_j < {v}; ++cuplug_j) {{")
    lines.append(f"      {op}\n    ;\n    }}")
    lines += ["    " + s for s in stores]
    lines.append("  }")
    if not layout.strided:
        # The n % vec elements past the last whole vector, one per thread.
        def tail_access(a, cls):
            return f"{a.name}[0]" if cls == "z" else f"{a.name}[i]"

        tail = _substitute(operation, args, layout.classes, tail_access)
        lines.append(
            f"for (i = cuplug_nw * {v} + cta_start + tid; i < n; i += total_threads) {{\n"
            f"    {tail}\n    ;\n  }}"
        )
    return "\n  ".join(lines)
