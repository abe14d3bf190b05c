"""PyCUDA's arithmetic ``pycuda.elementwise.get_*_kernel`` factories (cuplug.elementwise
re-exports them; the copying ones are in cuplug._kernels.elementwise_copies): memoized prepared
Functions.

Each returns what PyCUDA's returns (a prepared ``Function`` taking PyCUDA's arguments then the
element count ``n``, launched with ``prepared_call(grid, block, ...)``), built by
``get_elwise_kernel`` with PyCUDA's argument lists, operations and kernel names, and cached per
context (``tools.context_dependent_memoize``). Texture references were removed in CUDA 12: the
GPU scalars of ``get_linear_combination_kernel`` are read through a pointer instead, handed over
by binding the scalar array to the returned stand-in texture references as PyCUDA code does
(``a.bind_to_texref_ext(texrefs[0])``).
"""

from __future__ import annotations

import numpy as np

from cuplug._driver.memoize import context_dependent_memoize
from cuplug._kernels.cargs import ScalarArg, VectorArg
from cuplug._kernels.elementwise import get_elwise_module
from cuplug._kernels.elementwise_copies import _ct, _kernel

__all__ = [
    "get_axpbyz_kernel",
    "get_axpbz_kernel",
    "get_binary_func_kernel",
    "get_binary_func_scalar_kernel",
    "get_binary_minmax_kernel",
    "get_binary_op_kernel",
    "get_fmod_kernel",
    "get_frexp_kernel",
    "get_ldexp_kernel",
    "get_linear_combination_kernel",
    "get_modf_kernel",
    "get_pow_array_kernel",
    "get_rdivide_elwise_kernel",
    "get_scalar_op_kernel",
    "get_unary_func_kernel",
]


def _real_ctype(dtype_z, dtype_other):
    """PyCUDA casts real operands to the real type of a complex result."""
    dtype_z = np.dtype(dtype_z)
    if dtype_z.kind == "c" and np.dtype(dtype_other).kind != "c":
        return _ct(np.empty(0, dtype_z).real.dtype)
    return _ct(dtype_z)


class _ScalarTexref:
    """Stands for the texture reference PyCUDA binds a GPU scalar to: binding an array to it
    (``ary.bind_to_texref_ext(texref)``, ``texref.set_address(ptr, nbytes)``) records the
    address that the kernel then reads the scalar from."""

    def __init__(self, name, dtype):
        self.name = name
        self.dtype = np.dtype(dtype)
        self.address = None

    def set_address(self, devptr, bytes, allow_offset=False):  # noqa: A002 (PyCUDA's name)
        if int(bytes) < self.dtype.itemsize:
            raise ValueError(
                f"{self.name}: a {self.dtype} scalar needs {self.dtype.itemsize} bytes, "
                f"the bound memory has {int(bytes)}"
            )
        self.address = int(devptr)
        return 0

    def set_format(self, fmt, num_components):
        pass

    def set_flags(self, flags):
        pass

    def _pointer(self):
        if self.address is None:
            raise ValueError(
                f"linear_combination: bind the GPU scalar to {self.name} first "
                f"(scalar_gpu.bind_to_texref_ext(texrefs[k]))"
            )
        return self.address


class _LinearCombination:
    """The prepared function of get_linear_combination_kernel with GPU scalars: passes the
    addresses bound to its texture stand-ins as the kernel's pointer arguments."""

    def __init__(self, func, slots):
        self._func = func
        self._slots = slots  # (argument position, texref) in the kernel's argument list

    def _args(self, args):
        args = list(args)
        for pos, texref in self._slots:
            args.insert(pos, texref._pointer())
        return args

    def prepared_call(self, grid, block, *args, **kwargs):
        return self._func.prepared_call(grid, block, *self._args(args), **kwargs)

    def prepared_async_call(self, grid, block, stream, *args, **kwargs):
        return self._func.prepared_async_call(grid, block, stream, *self._args(args), **kwargs)

    def prepared_timed_call(self, grid, block, *args, **kwargs):
        return self._func.prepared_timed_call(grid, block, *self._args(args), **kwargs)

    def __getattr__(self, name):
        return getattr(self._func, name)


@context_dependent_memoize
def get_linear_combination_kernel(summand_descriptors, dtype_z):
    """``z[i] = a0*x0[i] + a1*x1[i] + ...``: returns (function, texrefs) as PyCUDA does.

    Parameters
    ----------
    summand_descriptors : sequence of (bool, numpy.dtype, numpy.dtype)
        Per summand: whether its factor is a GPU scalar (a one-element GPUArray bound to the
        returned texref), the factor's dtype and the vector's dtype. Host factors are passed
        before their vector (``a0, x0, ...``); GPU ones are not passed.
    dtype_z : numpy.dtype
        The result's dtype.

    Returns
    -------
    tuple[Function, list]
        The prepared function (arguments, then z and n) and the texture stand-ins, one per
        GPU scalar, in order.
    """
    args, loop_prep, summands, texrefs, slots = [], [], [], [], []
    for k, (is_gpu_scalar, scalar_dtype, vector_dtype) in enumerate(summand_descriptors):
        if is_gpu_scalar:
            texref = _ScalarTexref(f"tex_a{k}", scalar_dtype)
            slots.append((len(args), texref))
            texrefs.append(texref)
            args.append(VectorArg(scalar_dtype, f"lc_gpu_a{k}"))
            loop_prep.append(f"{_ct(scalar_dtype)} a{k} = *lc_gpu_a{k}")
        else:
            args.append(ScalarArg(scalar_dtype, f"a{k}"))
        args.append(VectorArg(vector_dtype, f"x{k}"))
        summands.append(f"a{k}*x{k}[i]")
    args.append(VectorArg(dtype_z, "z"))
    mod = get_elwise_module(
        args,
        "z[i] = " + " + ".join(summands),
        "linear_combination",
        loop_prep=";\n".join(loop_prep),
    )
    func = mod.get_function("linear_combination")
    func.prepare("".join(a.struct_char for a in args) + np.dtype(np.uintp).char)
    if slots:
        func = _LinearCombination(func, slots)
    return func, texrefs


def _operand(dtype, name, is_array):
    """(declaration, value at ``i``) of an operand that is a vector or a host scalar."""
    if is_array:
        return f"{_ct(dtype)} *{name}", f"{name}[i]"
    return f"{_ct(dtype)} {name}", name


def _binary(dtype_x, dtype_y, dtype_z, x_is_scalar, y_is_scalar):
    x = "x[0]" if x_is_scalar else "x[i]"
    y = "y[0]" if y_is_scalar else "y[i]"
    return (
        f"{_ct(dtype_x)} *x, {_ct(dtype_y)} *y, {_ct(dtype_z)} *z",
        f"({_real_ctype(dtype_z, dtype_x)}) {x}",
        f"({_real_ctype(dtype_z, dtype_y)}) {y}",
    )


@context_dependent_memoize
def get_axpbyz_kernel(dtype_x, dtype_y, dtype_z, x_is_scalar=False, y_is_scalar=False):
    """``z = a*x + b*y``: prepared (a, x, b, y, z, n).

    Parameters
    ----------
    dtype_x, dtype_y, dtype_z : numpy.dtype
        The operands' and the result's dtypes.
    x_is_scalar, y_is_scalar : bool
        That operand is a one-element GPUArray (read at [0]).
    """
    _, x, y = _binary(dtype_x, dtype_y, dtype_z, x_is_scalar, y_is_scalar)
    x_t, y_t = _real_ctype(dtype_z, dtype_x), _real_ctype(dtype_z, dtype_y)
    return _kernel(
        f"{_ct(dtype_x)} a, {_ct(dtype_x)} *x, {_ct(dtype_y)} b, {_ct(dtype_y)} *y, "
        f"{_ct(dtype_z)} *z",
        f"z[i] = ({x_t}) a*({x}) + (({y_t}) b)*({y})",
        "axpbyz",
    )


@context_dependent_memoize
def get_axpbz_kernel(dtype_x, dtype_z):
    """``z = a*x + b``: prepared (a, x, b, z, n).

    Parameters
    ----------
    dtype_x, dtype_z : numpy.dtype
        The operand's and the result's dtypes.
    """
    return _kernel(
        f"{_ct(dtype_z)} a, {_ct(dtype_x)} *x, {_ct(dtype_z)} b, {_ct(dtype_z)} *z",
        "z[i] = a * x[i] + b",
        "axpb",
    )


@context_dependent_memoize
def get_binary_op_kernel(dtype_x, dtype_y, dtype_z, operator, x_is_scalar=False, y_is_scalar=False):
    """``z = x <operator> y``: prepared (x, y, z, n).

    Parameters
    ----------
    dtype_x, dtype_y, dtype_z : numpy.dtype
        The operands' and the result's dtypes.
    operator : str
        A C binary operator ("+", "*", ...).
    x_is_scalar, y_is_scalar : bool
        That operand is a one-element GPUArray (read at [0]).
    """
    arguments, x, y = _binary(dtype_x, dtype_y, dtype_z, x_is_scalar, y_is_scalar)
    return _kernel(arguments, f"z[i] = ({_ct(dtype_z)}) {x} {operator} {y}", "multiply")


@context_dependent_memoize
def get_rdivide_elwise_kernel(dtype_x, dtype_z):
    """``z = y / x``: prepared (x, y, z, n) with y a host scalar.

    Parameters
    ----------
    dtype_x, dtype_z : numpy.dtype
        The operand's and the result's (and y's) dtypes.
    """
    return _kernel(
        f"{_ct(dtype_x)} *x, {_ct(dtype_z)} y, {_ct(dtype_z)} *z", "z[i] = y / x[i]", "divide_r"
    )


@context_dependent_memoize
def get_binary_func_kernel(func, dtype_x, dtype_y, dtype_z):
    """``z = func(x, y)``: prepared (x, y, z, n).

    Parameters
    ----------
    func : str
        A CUDA math function of two arguments ("fmaxf", "atan2", ...).
    dtype_x, dtype_y, dtype_z : numpy.dtype
        The operands' and the result's dtypes.
    """
    return _binary_func(func, dtype_x, dtype_y, dtype_z, y_is_array=True)


@context_dependent_memoize
def get_binary_func_scalar_kernel(func, dtype_x, dtype_y, dtype_z):
    """``z = func(x, y)`` with y a host scalar: prepared (x, y, z, n).

    Parameters
    ----------
    func : str
        A CUDA math function of two arguments.
    dtype_x, dtype_y, dtype_z : numpy.dtype
        The operands' and the result's dtypes.
    """
    return _binary_func(func, dtype_x, dtype_y, dtype_z, y_is_array=False)


def _binary_func(func, dtype_x, dtype_y, dtype_z, y_is_array):
    y_decl, y = _operand(dtype_y, "y", y_is_array)
    return _kernel(
        f"{_ct(dtype_x)} *x, {y_decl}, {_ct(dtype_z)} *z",
        f"z[i] = {func}(x[i], {y})",
        func + "_kernel",
    )


def get_binary_minmax_kernel(func, dtype_x, dtype_y, dtype_z, use_scalar):
    """``z = [f]{func}[f](x, y)`` ("max"/"min" made fmaxf, fmax, max, ...) as PyCUDA names it.

    Parameters
    ----------
    func : str
        "max" or "min".
    dtype_x, dtype_y, dtype_z : numpy.dtype
        The operands' and the result's dtypes.
    use_scalar : bool
        y is a host scalar (get_binary_func_scalar_kernel) instead of a vector.
    """
    dtypes = [np.dtype(dtype_x), np.dtype(dtype_y), np.dtype(dtype_z)]
    if np.float64 not in dtypes[:2]:
        func = func + "f"
    if any(dt.kind == "f" for dt in dtypes):
        func = "f" + func
    if use_scalar:
        return get_binary_func_scalar_kernel(func, dtype_x, dtype_y, dtype_z)
    return get_binary_func_kernel(func, dtype_x, dtype_y, dtype_z)


@context_dependent_memoize
def get_pow_array_kernel(dtype_x, dtype_y, dtype_z, is_base_array, is_exp_array):
    """``z = x ** y`` (powf for float32 results, else pow): prepared (x, y, z, n).

    Parameters
    ----------
    dtype_x, dtype_y, dtype_z : numpy.dtype
        The base's, the exponent's and the result's dtypes.
    is_base_array, is_exp_array : bool
        Which operands are arrays (at least one; the other is a host scalar).
    """
    func = "powf" if np.dtype(dtype_z) == np.float32 else "pow"
    if not (is_base_array or is_exp_array):
        raise ValueError("get_pow_array_kernel: the base or the exponent must be an array")
    x_decl, x = _operand(dtype_x, "x", is_base_array)
    y_decl, y = _operand(dtype_y, "y", is_exp_array)
    return _kernel(
        f"{x_decl}, {y_decl}, {_ct(dtype_z)} *z", f"z[i] = {func}({x},{y})", "pow_method"
    )


@context_dependent_memoize
def get_fmod_kernel():
    """``z = fmod(arg, mod)`` over float32: prepared (arg, mod, z, n)."""
    return _kernel("float *arg, float *mod, float *z", "z[i] = fmod(arg[i], mod[i])", "fmod_kernel")


@context_dependent_memoize
def get_modf_kernel():
    """``fracpart = modf(x, &intpart)`` over float32: prepared (x, intpart, fracpart, n)."""
    return _kernel(
        "float *x, float *intpart ,float *fracpart",
        "fracpart[i] = modf(x[i], &intpart[i])",
        "modf_kernel",
    )


@context_dependent_memoize
def get_frexp_kernel():
    """``significand = frexp(x, &exponent)`` over float32: prepared (x, significand, exponent,
    n)."""
    return _kernel(
        "float *x, float *significand, float *exponent",
        "int expt = 0; significand[i] = frexp(x[i], &expt); exponent[i] = expt;",
        "frexp_kernel",
    )


@context_dependent_memoize
def get_ldexp_kernel():
    """``z = ldexp(sig, int(expt))`` over float32: prepared (sig, expt, z, n)."""
    return _kernel(
        "float *sig, float *expt, float *z", "z[i] = ldexp(sig[i], int(expt[i]))", "ldexp_kernel"
    )


@context_dependent_memoize
def get_unary_func_kernel(func_name, in_dtype, out_dtype=None):
    """``z = func_name(y)``: prepared (y, z, n).

    Parameters
    ----------
    func_name : str
        A CUDA math function of one argument ("sinf", "exp", ...).
    in_dtype : numpy.dtype
        The input's dtype.
    out_dtype : numpy.dtype | None
        The result's dtype (default: in_dtype).
    """
    if out_dtype is None:
        out_dtype = in_dtype
    return _kernel(
        f"{_ct(in_dtype)} *y, {_ct(out_dtype)} *z",
        f"z[i] = {func_name}(y[i])",
        f"{func_name}_kernel",
    )


@context_dependent_memoize
def get_scalar_op_kernel(dtype_x, dtype_a, dtype_y, operator):
    """``y = x <operator> a``: prepared (x, a, y, n).

    Parameters
    ----------
    dtype_x, dtype_a, dtype_y : numpy.dtype
        The vector's, the host scalar's and the result's dtypes.
    operator : str
        A C binary operator.
    """
    return _kernel(
        f"{_ct(dtype_x)} *x, {_ct(dtype_a)} a, {_ct(dtype_y)} *y",
        f"y[i] = x[i] {operator} a",
        "scalarop_kernel",
    )
