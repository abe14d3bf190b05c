"""Generated elementwise kernels compile (NVRTC to PTX, no device): every operation of
cuplug.gpuarray over every dtype pair NumPy has a loop for, every layout class over the dtype
pairs of one operation, batched into few NVRTC programs so the whole sweep stays quick."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from cuplug import _dtypes
from cuplug._codegen import elementwise as cg
from cuplug._codegen import ops

DTYPES = [np.dtype(t) for t in _dtypes._CODES]
BINARY = [n for n, op in ops.OPS.items() if op.nin == 2 and op.build is not None]
UNARY = [n for n, op in ops.OPS.items() if op.nin == 1 and op.build is not None]


def _nvrtc():
    from cuplug import _core

    try:
        _core._compiler.compiler_info("nvrtc", {})
    except Exception as e:  # pragma: no cover - only without the plugin
        pytest.skip(f"the nvrtc compiler backend is not available: {e}")


def _layouts(n_inputs_vector, vec):
    """Layout classes for (output, vector inputs...): flat contiguous (vectorised and not,
    64-bit), strided nd 2 and 3, broadcast along the innermost dim, 0-d inputs."""
    nv = n_inputs_vector
    out = [
        dict(classes="c" + "c" * nv, ndim=1, vec=vec),
        dict(classes="c" + "c" * nv, ndim=1, vec=1, index64=True),
        dict(classes="g" + "g" * nv, ndim=2),
        dict(classes="c" + "g" * nv, ndim=3, index64=True),
        dict(classes="c" + "z" * nv, ndim=1),
    ]
    if vec > 1 and nv:
        out.append(dict(classes="c" + "b" + "g" * (nv - 1), ndim=2, vec=vec))
    return out


def _vec_for(dtypes):
    widest = max(np.dtype(d).itemsize for d in dtypes)
    return max(16 // widest, 1)


def _kernel(name, descriptors):
    from cuplug._array.math import kernel_for

    return kernel_for(name, descriptors)


def _compile(sources):
    from support.compile_sources import builtin_options

    from cuplug import compiler

    source = "\n".join(sources)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a compiler warning is a failure too
        ptx = compiler.compile(
            source,
            target="ptx",
            arch="sm_90",
            no_extern_c=True,
            cache_dir=False,
            options=builtin_options(source),
        )
    assert b".entry" in ptx
    return ptx


def _source(kernel, layout_kwargs):
    classes = layout_kwargs["classes"]
    # Scalars keep class s; the layout's classes cover the vectors in order.
    it = iter(classes)
    full = "".join(next(it) if a.vector else "s" for a in kernel.args)
    layout = cg.Layout(**{**layout_kwargs, "classes": full})
    source, entry = kernel.source(layout)
    return source, entry


def _resolvable(name, descriptors):
    ufunc = ops.OPS[name].ufunc
    try:
        _dtypes.resolve_ufunc(ufunc, [d if not isinstance(d, tuple) else d[1] for d in descriptors])
        return True
    except TypeError:
        return False


def _split(items, parts):
    return [items[k::parts] for k in range(parts)]


def _program_sources(pairs, name):
    """(sources, real_dtype_sources, complex_sources): kernels of `name` over dtype pairs,
    each in one layout (rotating), split by whether they include <cuda/std/complex>."""
    plain, cplx = [], []
    for k, (a, b) in enumerate(pairs):
        if not _resolvable(name, (a, b)):
            continue
        kern = _kernel(name, (a, b))
        vectors = [x for x in kern.args[1:] if x.vector]
        layouts = _layouts(len(vectors), _vec_for([x.dtype for x in kern.args]))
        src, _ = _source(kern, layouts[k % len(layouts)])
        (cplx if "complex" in src else plain).append(src)
    return plain, cplx


@pytest.mark.parametrize("name", BINARY)
def test_binary_operation_compiles_for_every_dtype_pair(name):
    _nvrtc()
    pairs = list(itertools.product(DTYPES, DTYPES))
    plain, cplx = _program_sources(pairs, name)
    assert plain or cplx
    for group in (plain, cplx):
        if group:
            _compile(group)


def test_unary_operations_compile_for_every_dtype():
    _nvrtc()
    plain, cplx = [], []
    for name in UNARY + ["_copy"]:
        for k, dt in enumerate(DTYPES):
            if name != "_copy" and not _resolvable(name, (dt,)):
                continue
            kern = _kernel(name, (dt,))
            layouts = _layouts(1, _vec_for([x.dtype for x in kern.args]))
            src, _ = _source(kern, layouts[k % len(layouts)])
            (cplx if "complex" in src else plain).append(src)
    _compile(plain)
    _compile(cplx)


def test_every_layout_class_compiles_for_every_dtype_pair_of_add():
    _nvrtc()
    plain, cplx = [], []
    for a, b in itertools.product(DTYPES, DTYPES):
        kern = _kernel("add", (a, b))
        for lay in _layouts(2, _vec_for([x.dtype for x in kern.args])):
            src, _ = _source(kern, lay)
            (cplx if "complex" in src else plain).append(src)
    for group in _split(plain, 2) + [cplx]:
        _compile(group)


def test_scalar_operands_compile_weak_and_strong():
    _nvrtc()
    plain, cplx, seen = [], [], set()
    for name in ("add", "multiply", "true_divide", "power", "less", "maximum", "floor_divide"):
        for dt in DTYPES:
            for scalar in (bool, int, float, complex, ("scalar", np.dtype(np.float32))):
                descr = (dt, scalar)
                try:
                    kern = _kernel(name, descr)
                except TypeError:
                    continue  # NumPy has no loop (e.g. floor_divide of complex)
                src, entry = _source(kern, dict(classes="cc", ndim=1, vec=_vec_for([dt])))
                if entry not in seen:  # weak and strong scalars may give the same kernel
                    seen.add(entry)
                    (cplx if "complex" in src else plain).append(src)
    _compile(plain)
    _compile(cplx)


def test_ternary_where_and_clip_compile():
    _nvrtc()
    sources = []
    for dt in (np.int8, np.uint16, np.float16, np.float32, np.float64, np.int64):
        dt = np.dtype(dt)
        for name, descr in (("where", (np.dtype(bool), dt, dt)), ("clip", (dt, dt, dt))):
            kern = _kernel(name, descr)
            sources.append(_source(kern, dict(classes="cggg", ndim=2))[0])
            sources.append(_source(kern, dict(classes="cccz", ndim=1, vec=_vec_for([dt])))[0])
    _compile(sources)


def test_range_and_raw_pointer_kernels_compile():
    _nvrtc()
    args = [
        cg.Arg("z", np.float32, True),
        cg.Arg("a", np.float32, True),
        cg.Arg("idx", np.int32, True),
    ]
    take, _ = cg.generate(args, "z[i] = a[idx[i]]", "take_p", cg.Layout("cpc"))
    take_g, _ = cg.generate(args, "z[i] = a[idx[i]]", "take_pg", cg.Layout("gpg", ndim=2))
    rng, _ = cg.generate(args[:1], "z[i] = i", "range_k", cg.Layout("c", use_range=True))
    _compile([take, take_g, rng])


def test_operations_may_end_in_a_line_comment():
    _nvrtc()
    args = [cg.Arg("z", np.float32, True), cg.Arg("x", np.float32, True)]
    sources = [
        cg.generate(
            args,
            "z[i] = x[i] * s // scale",
            f"comment_{k}",
            lay,
            loop_prep="float s = 1; // prep",
            after_loop="// done",
        )[0]
        for k, lay in enumerate([cg.Layout("cc"), cg.Layout("cc", vec=4), cg.Layout("gg", ndim=2)])
    ]
    _compile(sources)


def test_precompiled_headers_made_with_other_options_compile_quietly():
    """NVRTC's automatic PCH is one per process: kernels compiled with other options (with and
    without -minimal, other defines) must not warn that the header was made differently."""
    _nvrtc()
    from cuplug._kernels.engine import pch_options

    if not pch_options():
        pytest.skip("this NVRTC has no automatic precompiled header (12.8 and newer): none is made")
    source = (
        "#include <cuda/std/complex>\n"
        "__global__ void k_%d(cuda::std::complex<float> *p) { p[0] *= p[0]; }\n"
    )
    for k, extra in enumerate(([], ["-minimal"], ["-DCUPLUG_TEST_PCH=1"], [])):
        from cuplug import compiler

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            compiler.compile(
                source % k,
                target="ptx",
                arch="sm_90",
                no_extern_c=True,
                cache_dir=False,
                options=pch_options() + extra,
            )


def test_c_names_are_checked_and_tagged_as_regular_expressions_would():
    import re

    from cuplug._codegen.names import is_c_identifier, word_tag

    cases = [("k", True), ("_k1", True), ("K_2x", True), ("1k", False), ("a b", False),
             ("é", False), ("", False), ("a-b", False), (None, False), (b"k", False)]  # fmt: skip
    for name, ok in cases:
        assert is_c_identifier(name) == ok, name
        if isinstance(name, str):
            assert ok == bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)), name
    for text in [
        "unsigned int",
        "cuda::std::complex<float>",
        "a_ b",
        " x ",
        "",
        "long long",
        "é b",
    ]:
        assert word_tag(text) == re.sub(r"\W+", "_", text), text
