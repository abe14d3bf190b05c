"""The elementwise engine's launch plans (no device: arrays wrap made-up addresses).

Every plan is checked by simulating the generated kernel's address arithmetic and comparing the
(output, inputs) element addresses it visits with NumPy's broadcasting of the same views."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cuplug._array.math import _resolve
from cuplug._kernels.engine import Arg, Kernel
from cuplug.gpuarray import GPUArray

BASE = 1 << 32


def wrap(host, address=BASE, dtype=None):
    """A GPUArray with host's shape and strides over a made-up device address (view offsets
    kept: element 0 sits at address + (host's data - its base's data))."""
    owner = host.base if host.base is not None else host
    while owner.base is not None:
        owner = owner.base
    offset = host.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
    return GPUArray(host.shape, dtype or host.dtype, gpudata=address + offset, strides=host.strides)


def addresses(a, shape):
    """Byte addresses of a's elements broadcast to `shape` (NumPy's rules)."""
    idx = np.indices(a.shape, dtype=np.int64) if a.ndim else np.zeros((0,), np.int64)
    addr = np.full(a.shape, a.ptr, dtype=np.int64)
    for d in range(a.ndim):
        addr = addr + idx[d] * a.strides[d]
    return np.broadcast_to(addr, shape)


def simulate(plan, arrays, vectors):
    """The (per operand) element addresses the generated kernel touches, in visit order."""
    classes, vec, n = plan["classes"], plan["vec"], plan["n"]
    shape = plan["shape"]
    ptrs = [a.ptr + off for a, off in zip(arrays, plan["offsets"])]
    strided = [k for k, c in enumerate(classes) if c in "gb"]
    rows = []
    if not strided:
        for e in range(n):
            rows.append(
                tuple(
                    ptrs[k] + (e if classes[k] == "c" else 0) * arrays[k].itemsize for k in vectors
                )
            )
        return rows
    work = n // vec
    for w in range(work):
        coords = np.unravel_index(w, shape)
        offs = {}
        for g, k in enumerate(strided):
            offs[k] = sum(int(c) * s for c, s in zip(coords, plan["strides"][g]))
        for j in range(vec):
            row = []
            for k in vectors:
                c = classes[k]
                if c == "c":
                    e = w * vec + j
                elif c == "g":
                    e = offs[k] + j
                elif c == "b":
                    e = offs[k]
                else:
                    e = 0
                row.append(ptrs[k] + e * arrays[k].itemsize)
            rows.append(tuple(row))
    return rows


def check(core, out, *inputs):
    arrays = [out, *inputs]
    plan = core.plan(*arrays)
    shape = plan["iter_shape"]
    vectors = [k for k, a in enumerate(arrays) if isinstance(a, GPUArray)]
    want = sorted(zip(*(addresses(arrays[k], shape).ravel().tolist() for k in vectors)))
    got = sorted(simulate(plan, arrays, vectors))
    assert got == want, plan
    # Every output element exactly once.
    assert len({r[0] for r in got}) == len(got) == int(np.prod(shape, dtype=np.int64))
    return plan


ADD = {}


def add_core(dt=np.float32):
    dt = np.dtype(dt)
    if dt not in ADD:
        ADD[dt] = _resolve("add", (dt, dt), None)[0]
    return ADD[dt]


def views(rng, shape):
    """Host views of one buffer: contiguous, F, transposed, stepped, reversed."""
    h = np.zeros(shape, np.float32)
    f = np.asfortranarray(h)
    out = [h, f, h.T, h[::-1], h[..., ::2], h[::2, ::-1] if h.ndim >= 2 else h[::-2]]
    if h.ndim >= 2:
        out.append(np.swapaxes(h, 0, 1)[:, 1:])
    return out


@pytest.mark.parametrize("shape", [(7,), (4, 6), (3, 4, 8), (2, 3, 4, 5), (1, 5, 1, 4)])
def test_plans_visit_exactly_numpys_elements(shape):
    rng = np.random.default_rng(3)
    core = add_core()
    for xv, yv in itertools.product(views(rng, shape), repeat=2):
        if xv.shape != yv.shape:
            continue
        out = wrap(np.zeros(xv.shape, np.float32), BASE * 3)
        check(core, out, wrap(xv, BASE), wrap(yv, BASE * 2))


def test_broadcast_plans():
    core = add_core()
    a = np.zeros((16, 32), np.float32)
    row = np.zeros((32,), np.float32)
    col = np.zeros((16, 1), np.float32)
    out = wrap(np.zeros((16, 32), np.float32), BASE * 3)
    plan = check(core, out, wrap(a), wrap(row, BASE * 2))
    assert plan["classes"] == "ccg" and plan["vec"] == 4 and plan["shape"] == (16, 8)
    plan = check(core, out, wrap(a), wrap(col, BASE * 2))
    assert plan["classes"] == "ccb" and plan["vec"] == 4
    plan = check(core, out, wrap(row, BASE), wrap(col, BASE * 2))
    assert plan["classes"] == "cgb"
    zero_d = wrap(np.zeros((), np.float32), BASE * 2)
    plan = check(core, out, wrap(a), zero_d)
    assert plan["classes"] == "ccz" and plan["ndim"] == 1 and plan["vec"] == 4
    # Broadcasting into a larger shape with new leading dims.
    out3 = wrap(np.zeros((3, 16, 32), np.float32), BASE * 3)
    check(core, out3, wrap(np.zeros((3, 1, 32), np.float32)), wrap(col, BASE * 2))


def test_contiguous_operands_collapse_to_one_vectorised_dimension():
    core = add_core()
    h = np.zeros((8, 9, 10), np.float32)
    plan = check(core, wrap(h, BASE * 3), wrap(h), wrap(h, BASE * 2))
    assert (plan["classes"], plan["ndim"], plan["vec"], plan["index64"]) == ("ccc", 1, 4, False)
    f = np.asfortranarray(h)
    plan = check(core, wrap(f, BASE * 3), wrap(f), wrap(f, BASE * 2))
    assert (plan["classes"], plan["ndim"], plan["vec"]) == ("ccc", 1, 4)
    # Reversed in every dim: flipped into a forward walk of one block.
    r = h[::-1, ::-1, ::-1]
    plan = check(core, wrap(r, BASE * 3), wrap(r), wrap(r, BASE * 2))
    assert plan["classes"] == "ccc" and plan["ndim"] == 1


def test_vector_width_needs_alignment():
    core = add_core()
    h = np.zeros(64, np.float32)
    plan = check(core, wrap(h, BASE * 3), wrap(h, BASE + 4), wrap(h, BASE * 2))
    assert plan["vec"] == 1
    plan = check(core, wrap(h, BASE * 3), wrap(h, BASE + 8), wrap(h, BASE * 2))
    assert plan["vec"] == 2
    d = add_core(np.float64)
    h8 = np.zeros(64, np.float64)
    assert check(d, wrap(h8, BASE * 3), wrap(h8), wrap(h8, BASE * 2))["vec"] == 2
    c = add_core(np.complex128)
    h16 = np.zeros(64, np.complex128)
    assert check(c, wrap(h16, BASE * 3), wrap(h16), wrap(h16, BASE * 2))["vec"] == 1
    i8 = add_core(np.int8)
    hb = np.zeros(100, np.int8)
    assert check(i8, wrap(hb, BASE * 3), wrap(hb), wrap(hb, BASE * 2))["vec"] == 16


def test_mixed_itemsizes_vectorise_by_the_widest():
    core = _resolve("add", (np.dtype(np.int8), np.dtype(np.float64)), None)[0]
    x = wrap(np.zeros(40, np.int8))
    y = wrap(np.zeros(40, np.float64), BASE * 2)
    out = wrap(np.zeros(40, np.float64), BASE * 3)
    plan = check(core, out, x, y)
    assert plan["vec"] == 2


def test_scalar_operands_take_no_part_in_layout():
    core = _resolve("multiply", (np.dtype(np.float32), float), None)[0]
    x = wrap(np.zeros((5, 6), np.float32)[:, ::2])
    out = wrap(np.zeros((5, 3), np.float32), BASE * 3)
    plan = core.plan(out, x, 2.0)
    assert plan["classes"][2] == "s"
    assert plan["classes"][:2] == "cg"


def test_index_width_is_64_bit_only_when_needed():
    core = add_core(np.int8)
    small = GPUArray((2**31 - 16,), np.int8, gpudata=BASE)
    assert not core.plan(small, small, small)["index64"]
    big = GPUArray((2**31 + 16,), np.int8, gpudata=BASE)
    assert core.plan(big, big, big)["index64"]
    # A small iteration space reaching far: 64-bit offsets.
    far = GPUArray((4, 16), np.int8, gpudata=BASE, strides=(2**30, 1))
    out = GPUArray((4, 16), np.int8, gpudata=BASE)
    assert core.plan(out, far, out)["index64"]


def test_empty_and_zero_d():
    core = add_core()
    e = GPUArray((0, 5), np.float32, gpudata=BASE)
    assert core.plan(e, e, e)["n"] == 0
    z = GPUArray((), np.float32, gpudata=BASE)
    plan = core.plan(z, z, z)
    assert plan["n"] == 1 and plan["classes"] in ("zzz", "ccc")
    # A 0-d operand with larger ones broadcasts as one element.
    row = GPUArray((5,), np.float32, gpudata=BASE)
    assert core.plan(row, row, z)["classes"] == "ccz"


def test_errors_name_shapes_dtypes_and_arguments():
    core = add_core()
    a = GPUArray((3, 4), np.float32, gpudata=BASE)
    b = GPUArray((5,), np.float32, gpudata=BASE)
    out = GPUArray((3, 4), np.float32, gpudata=BASE)
    with pytest.raises(ValueError, match=r"broadcast.*\(3, 4\) float32.*\(5,\) float32"):
        core.plan(out, a, b)
    small = GPUArray((4,), np.float32, gpudata=BASE)
    with pytest.raises(ValueError, match="output 'z' of shape \\(4,\\) float32"):
        core.plan(small, a, a)
    # An output that does not even broadcast against the inputs is named as the output at fault,
    # wherever it stands among the arguments (cumath.sin(x, out=wrong) reads like this).
    long = GPUArray((1000,), np.float32, gpudata=BASE)
    unfit = GPUArray((3,), np.float32, gpudata=BASE)
    with pytest.raises(ValueError, match=r"output 'z' of shape \(3,\) float32 does not match"):
        core.plan(unfit, long, long)
    odd = GPUArray((3,), np.float32, gpudata=BASE, strides=(6,))
    with pytest.raises(ValueError, match="not whole elements"):
        core.plan(GPUArray((3,), np.float32, gpudata=BASE), odd, odd)
    with pytest.raises(TypeError, match="must be a float32 array, got float64"):
        core.plan(out, a, GPUArray((3, 4), np.float64, gpudata=BASE))
    with pytest.raises(TypeError, match="must be a GPUArray"):
        core.plan(out, a, np.zeros((3, 4), np.float32))


def test_operations_that_use_i_keep_c_order_and_no_vectors():
    k = Kernel([Arg("z", np.int64, True)], "z[i] = i", "iota")
    h = np.zeros((4, 5), np.int64)
    plan = k.plan(wrap(h.T))
    assert plan["vec"] == 1 and plan["classes"] == "g" and plan["ndim"] == 2
    plan = k.plan(wrap(h))
    assert plan["classes"] == "c"


def test_other_subscripts_need_contiguous_operands_or_raw_pointers():
    k = Kernel(
        [Arg("z", np.float32, True), Arg("x", np.float32, True)], "z[i] = x[n - 1 - i]", "rev"
    )
    h = np.zeros(10, np.float32)
    assert k.plan(wrap(h, BASE * 2), wrap(h))["classes"] == "cc"
    with pytest.raises(ValueError, match="must be C-contiguous"):
        k.plan(wrap(h, BASE * 2), wrap(h[::-1]))
    take = Kernel(
        [Arg("z", np.float32, True), Arg("a", np.float32, True), Arg("idx", np.int32, True)],
        "z[i] = a[idx[i]]",
        "take",
        raw=("a",),
    )
    idx = wrap(np.zeros((3, 4), np.int32)[:, ::2], BASE * 4)
    plan = take.plan(wrap(np.zeros((3, 2), np.float32), BASE * 2), wrap(h), idx)
    assert plan["classes"] == "cpg"
