"""Issue 26, item 8: a GPUArray whose __init__ never ran (GPUArray.__new__, or a subclass that
forgets super().__init__()) or failed has no dtype, shape or memory. Every attribute, method and
operator must say so ("not initialised") instead of crashing the interpreter; the operators
used to segfault. Each case runs in a child process so that a crash fails one case, not the
whole session."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

CASES = {
    "add": "a + 1",
    "radd": "1 + a",
    "add-array": "a + cuplug.gpuarray.zeros(1)",
    "iadd": "b = a; b += 1",
    "sub": "a - 1",
    "mul": "a * 2",
    "truediv": "a / 2",
    "floordiv": "a // 2",
    "mod": "a % 2",
    "pow": "a ** 2",
    "divmod": "divmod(a, 2)",
    "neg": "-a",
    "pos": "+a",
    "abs": "abs(a)",
    "invert": "~a",
    "and": "a & 1",
    "lshift": "a << 1",
    "eq": "a == 1",
    "lt": "a < 1",
    "out": "cuplug._core._array.apply('add', (1, 2), a)",
    "operand": "cuplug._core._array.apply('add', (a, 2))",
    "shape": "a.shape",
    "strides": "a.strides",
    "size": "a.size",
    "nbytes": "a.nbytes",
    "ndim": "a.ndim",
    "itemsize": "a.itemsize",
    "ptr": "a.ptr",
    "gpudata": "a.gpudata",
    "base": "a.base",
    "allocator": "a.allocator",
    "flags": "a.flags",
    "context": "a.context",
    "len": "len(a)",
    "getitem": "a[0]",
    "setitem": "a[...] = 1",
    "reshape": "a.reshape(1)",
    "ravel": "a.ravel()",
    "transpose": "a.T",
    "view": "a.view()",
    "fill": "a.fill(1)",
    "get": "a.get()",
    "set": "a.set(numpy.zeros(1))",
    "copy": "a.copy()",
    "astype": "a.astype(numpy.float32)",
    "sum": "a.sum()",
    "repr": "repr(a)",
    "bool": "bool(a)",
    "iter": "list(a)",
    "cai": "a.__cuda_array_interface__",
    "dlpack": "a.__dlpack__()",
    "pickle": "pickle.dumps(a)",
    "cumath": "cuplug.cumath.sin(a)",
}

# One context per child (a context per case made about 60 live contexts per child: on an H200
# that took over 120 s); every case gets a fresh uninitialised array from the maker.
HEADER = """
import numpy, pickle, sys
import cuplug.driver as drv
import cuplug.gpuarray, cuplug.cumath
drv.init()
context = drv.Device(0).make_context()
"""

CASE = """
try:
    {make}
    try:
        exec({case!r})
    except Exception as e:
        print("RAISED", type(e).__name__, e)
    else:
        print("NO ERROR")
finally:
    sys.stdout.flush()
"""

FOOTER = """
context.pop()
context.detach()
"""

MAKERS = {
    "new": "a = cuplug.gpuarray.GPUArray.__new__(cuplug.gpuarray.GPUArray)",
    "subclass": textwrap.dedent(
        """
        class Forgetful(cuplug.gpuarray.GPUArray):
            def __init__(self):
                pass
        a = Forgetful()
        """
    )
    .strip()
    .replace("\n", "\n    "),
    "failed-init": textwrap.dedent(
        """
        a = cuplug.gpuarray.GPUArray.__new__(cuplug.gpuarray.GPUArray)
        try:
            a.__init__((4,), numpy.float32, strides=(-1 << 40,))  # refused: outside its memory
        except ValueError:
            pass
        """
    )
    .strip()
    .replace("\n", "\n    "),
}


def test_every_case_says_not_initialised(driver_mode):
    if driver_mode == "none":
        pytest.skip("needs a CUDA driver (the fake one will do)")
    # One child for all cases per maker keeps this quick; a crash names the case it died in.
    lines = []
    for make in MAKERS:
        script = (
            HEADER
            + "\n".join(
                CASE.format(make=MAKERS[make], case=case)
                .replace('print("RAISED"', f'print({name!r}, "RAISED"')
                .replace('print("NO ERROR")', f'print({name!r}, "NO ERROR")')
                for name, case in CASES.items()
            )
            + FOOTER
        )
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, (
            f"{make}: the interpreter died (status {done.returncode}) after:\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
        lines += [f"{make}: {line}" for line in done.stdout.splitlines()]
    bad = [line for line in lines if "not initialised" not in line]
    assert not bad, "cases without the 'not initialised' error:\n" + "\n".join(bad)
    assert len(lines) == len(MAKERS) * len(CASES)
