"""PyCUDA's ``pycuda.elementwise``: ElementwiseKernel and the module generators behind it.

``ElementwiseKernel("float *z, float a, const float *x", "z[i] = a * x[i]")`` runs the
operation for every element. Beyond PyCUDA, vector arguments may be strided views (negative
strides too) and may broadcast against each other as in NumPy (``z`` of shape (3, 4), ``x`` of
shape (4,)): the array engine (cuplug._array.engine) lays each launch out, generates the
kernel for that layout (cuplug._codegen.elementwise), compiles it through the selected compiler
backend and the compile cache, and launches it from C++. ``i`` is the element's linear index in
C order over the broadcast shape. Operations that index other than ``name[i]`` (``x[n-1-i]``)
take contiguous arrays, as in PyCUDA. ``range=``/``slice=`` run over part of contiguous arrays.

A compile error names the generated source line it is at (``CompileError``: the excerpt, and
``.source`` for the whole generated source).
"""

from __future__ import annotations

import builtins
import re

import numpy as np

from cuplug._cargs import parse_arguments
from cuplug._codegen import elementwise as _cg
from cuplug._public import public_dir as _public_dir
from cuplug.tools import ScalarArg, VectorArg

__all__ = [
    "ElementwiseKernel",
    "ScalarArg",
    "VectorArg",
    "get_elwise_kernel",
    "get_elwise_kernel_and_types",
    "get_elwise_module",
    "get_elwise_range_module",
    "parse_arguments",
]

# GPUArray's exchange protocols (DLPack, CUDA Array Interface, __array__) until the array
# layer mixes them in itself.

_GENERATOR_KWARGS = ("preamble", "loop_prep", "after_loop")


def _engine_args(arguments):
    return [_cg.Arg(a.name, a.dtype, isinstance(a, VectorArg)) for a in arguments]


def _check_name(name):
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"kernel name {name!r} is not a C identifier")


def _module_source(arguments, operation, name, preamble, loop_prep, after_loop, use_range):
    """PyCUDA's flat kernel: contiguous vectors, 64-bit ``n`` (and ``start, stop, step``)."""
    args = _engine_args(arguments)
    classes = "".join("c" if a.vector else "s" for a in args)
    layout = _cg.Layout(classes, index64=True, use_range=use_range)
    return _cg.generate(args, operation, name, layout, preamble, loop_prep, after_loop)


def _source_module(source, keep, options):
    from cuplug.compiler import SourceModule

    return SourceModule(source, options=options, keep=keep, no_extern_c=True)


def get_elwise_module(
    arguments,
    operation,
    name="kernel",
    keep=False,
    options=None,
    preamble="",
    loop_prep="",
    after_loop="",
):
    """A SourceModule with kernel ``name(<arguments>, unsigned long long n)`` running the
    operation for i in [0, n) over contiguous vectors (grid-stride loop).

    Parameters
    ----------
    arguments : str | list[Argument]
        The C argument list ("float *z, const float *x") or parsed arguments.
    operation : str
        The C statement(s) run for each index ``i``.
    name : str
        The kernel's name.
    keep : bool
        Keep the compiler's files.
    options : list[str] | None
        Compiler options.
    preamble : str
        Source before the kernel.
    loop_prep : str
        Statements before the loop.
    after_loop : str
        Statements after it.

    Returns
    -------
    SourceModule
        The compiled module.
    """
    _check_name(name)
    source, _ = _module_source(
        parse_arguments(arguments), operation, name, preamble, loop_prep, after_loop, False
    )
    return _source_module(source, keep, options)


def get_elwise_range_module(
    arguments,
    operation,
    name="kernel",
    keep=False,
    options=None,
    preamble="",
    loop_prep="",
    after_loop="",
):
    """As get_elwise_module, the kernel taking ``n, start, stop, step`` after the arguments and
    running i = start, start + step, ... before stop (negative steps too).

    Parameters
    ----------
    arguments : str | list[Argument]
        The C argument list ("float *z, const float *x") or parsed arguments.
    operation : str
        The C statement(s) run for each index ``i``.
    name : str
        The kernel's name.
    keep : bool
        Keep the compiler's files.
    options : list[str] | None
        Compiler options.
    preamble : str
        Source before the kernel.
    loop_prep : str
        Statements before the loop.
    after_loop : str
        Statements after it.

    Returns
    -------
    SourceModule
        The compiled module.
    """
    _check_name(name)
    source, _ = _module_source(
        parse_arguments(arguments), operation, name, preamble, loop_prep, after_loop, True
    )
    return _source_module(source, keep, options)


def _launch_arguments(arguments, use_range):
    extra = [ScalarArg(np.uintp, "n")]
    if use_range:
        extra += [
            ScalarArg(np.intp, "start"),
            ScalarArg(np.intp, "stop"),
            ScalarArg(np.intp, "step"),
        ]
    return list(arguments) + extra


def get_elwise_kernel_and_types(
    arguments, operation, name="kernel", keep=False, options=None, use_range=False, **kwargs
):
    """(module, prepared function, arguments): the arguments list ends with the ScalarArgs the
    kernel takes after the user's (n; and start, stop, step for ranges).

    Parameters
    ----------
    arguments : str | list[Argument]
        The C argument list ("float *z, const float *x") or parsed arguments.
    operation : str
        The C statement(s) run for each index ``i``.
    name : str
        The kernel's name.
    keep : bool
        Keep the compiler's files.
    options : list[str] | None
        Compiler options.
    use_range : bool
        The range form (start, stop, step).
    **kwargs
        preamble, loop_prep, after_loop.

    Returns
    -------
    tuple[SourceModule, Function, list[Argument]]
        The module, its prepared kernel and its full argument list.
    """
    _check_kwargs(kwargs, "get_elwise_kernel_and_types")
    _check_name(name)
    arguments = parse_arguments(arguments)
    source, _ = _module_source(
        arguments,
        operation,
        name,
        kwargs.get("preamble", ""),
        kwargs.get("loop_prep", ""),
        kwargs.get("after_loop", ""),
        use_range,
    )
    mod = _source_module(source, keep, options)
    func = mod.get_function(name)
    full = _launch_arguments(arguments, use_range)
    func.prepare("".join(a.struct_char for a in full))
    return mod, func, full


def get_elwise_kernel(arguments, operation, name="kernel", keep=False, options=None, **kwargs):
    """The prepared function of get_elwise_kernel_and_types.

    Parameters
    ----------
    arguments : str | list[Argument]
        The C argument list ("float *z, const float *x") or parsed arguments.
    operation : str
        The C statement(s) run for each index ``i``.
    name : str
        The kernel's name.
    keep : bool
        Keep the compiler's files.
    options : list[str] | None
        Compiler options.
    **kwargs
        As get_elwise_kernel_and_types.

    Returns
    -------
    Function
        The prepared kernel.
    """
    _mod, func, _args = get_elwise_kernel_and_types(
        arguments, operation, name, keep, options, **kwargs
    )
    return func


def _check_kwargs(kwargs, where):
    unknown = sorted(set(kwargs) - set(_GENERATOR_KWARGS))
    if unknown:
        raise TypeError(
            f"{where}() got unexpected keyword argument(s) {', '.join(unknown)}; the source "
            f"generator takes {', '.join(_GENERATOR_KWARGS)}"
        )


def _is_array(x):
    from cuplug import gpuarray

    return isinstance(x, gpuarray.GPUArray)


class ElementwiseKernel:
    """``ElementwiseKernel(arguments, operation, name="kernel", keep=False, options=None,
    preamble="", loop_prep="", after_loop="")``; call it with one value per argument:
    GPUArrays of the declared dtype for vectors, numbers for scalars."""

    def __init__(self, arguments, operation, name="kernel", keep=False, options=None, **kwargs):
        _check_kwargs(kwargs, "ElementwiseKernel")
        _check_name(name)
        if not isinstance(operation, str) or not operation.strip():
            raise ValueError("operation must be C code, e.g. 'z[i] = a * x[i]'")
        self.arguments = parse_arguments(arguments)
        if not any(isinstance(a, VectorArg) for a in self.arguments):
            raise ValueError(
                "ElementwiseKernel needs at least one vector argument ('float *x'): the "
                "vectors give the number of elements"
            )
        self.operation = operation
        self.name = name
        self.keep = keep
        self.options = list(options) if options is not None else None
        self.preamble = kwargs.get("preamble", "")
        self.loop_prep = kwargs.get("loop_prep", "")
        self.after_loop = kwargs.get("after_loop", "")
        self._vectors = [k for k, a in enumerate(self.arguments) if isinstance(a, VectorArg)]
        self._kernel = None  # the engine's kernel, made on the first call

    # {{{ the engine

    def _engine_kernel(self):
        if self._kernel is None:
            from cuplug._array import engine

            keep = self.keep

            class _Kernel(engine.Kernel):
                def _generate(self, classes, ndim, vec, index64):
                    if not keep:
                        return super()._generate(classes, ndim, vec, index64)
                    source, entry = self.source(
                        engine.Layout(classes, ndim=ndim, vec=vec, index64=index64)
                    )
                    return _source_module(source, True, self.options).get_function(entry)

            self._kernel = _Kernel(
                _engine_args(self.arguments),
                self.operation,
                self.name,
                preamble=self.preamble,
                loop_prep=self.loop_prep,
                after_loop=self.after_loop,
                options=self.options,
            )
        return self._kernel

    # }}}

    def __call__(self, *args, range=None, slice=None, stream=None, **kwargs):  # noqa: A002
        if kwargs:
            raise TypeError(
                f"{self.name}() got unexpected keyword argument(s) {', '.join(sorted(kwargs))}; "
                "it takes range=, slice= and stream="
            )
        if range is not None and slice is not None:
            raise TypeError("may not specify both range and slice keyword arguments")
        if len(args) != len(self.arguments):
            raise TypeError(
                f"{self.name}() takes {len(self.arguments)} arguments "
                f"({', '.join(a.name for a in self.arguments)}), got {len(args)}"
            )
        for k in self._vectors:
            if not _is_array(args[k]):
                a = self.arguments[k]
                raise TypeError(
                    f"{self.name}(): argument {a.name!r} is declared as a vector "
                    f"({a.dtype} *{a.name}) and needs a GPUArray, got {type(args[k]).__name__}"
                )
        if range is not None or slice is not None:
            return self._call_range(args, range, slice, stream)
        args = self._flat_if_pycuda(args)
        self._engine_kernel()(*args, stream=stream)

    def _flat_if_pycuda(self, args):
        """PyCUDA ran over the first vector's size on flat memory: vectors of equal size but
        shapes that do not broadcast (a (2, 5) and a (10,)) still work when contiguous."""
        vectors = [args[k] for k in self._vectors]
        shapes = {v.shape for v in vectors}
        if len(shapes) == 1:
            return args
        try:
            np.broadcast_shapes(*shapes)
            return args
        except ValueError:
            pass
        sizes = {v.size for v in vectors}
        if len(sizes) == 1 and all(v.flags.c_contiguous for v in vectors):
            args = list(args)
            for k in self._vectors:
                args[k] = args[k].reshape(args[k].size)
            return tuple(args)
        described = ", ".join(
            f"{self.arguments[k].name} {args[k].shape} {args[k].dtype}" for k in self._vectors
        )
        raise ValueError(
            f"{self.name}(): vector shapes do not broadcast ({described}), and are not "
            "contiguous arrays of one size either (which would run over flat memory)"
        )

    # {{{ range= and slice=: PyCUDA's range kernel over contiguous memory

    def _call_range(self, args, range_, slice_, stream):
        vectors = [args[k] for k in self._vectors]
        for k, v in zip(self._vectors, vectors):
            if not v.flags.forc:
                raise ValueError(
                    f"{self.name}(): range= and slice= need contiguous arrays; argument "
                    f"{self.arguments[k].name!r} has strides {v.strides}"
                )
        n = vectors[0].size
        if slice_ is not None:
            if not isinstance(slice_, builtins.slice):
                raise TypeError(f"slice= must be a slice, got {type(slice_).__name__}")
            start, stop, step = slice_.indices(n)
        else:
            if not isinstance(range_, builtins.slice):
                raise TypeError(f"range= must be a slice, got {type(range_).__name__}")
            if range_.start is None or range_.stop is None:
                raise ValueError(
                    "range= needs a start and a stop: range=slice(start, stop[, step])"
                )
            start, stop = int(range_.start), int(range_.stop)
            step = 1 if range_.step is None else int(range_.step)
        if step == 0:
            raise ValueError("range step must not be zero")
        count = max(0, -(-(stop - start) // step))
        if count == 0:
            return
        func = self._range_function()
        values = []
        for a, x in zip(self.arguments, args):
            values.append(x.ptr if isinstance(a, VectorArg) else x)
        block = _cg.BLOCK
        grid = min(-(-count // block), 65535 * 8)
        func.prepared_async_call((grid, 1), (block, 1, 1), stream, *values, n, start, stop, step)

    def _range_function(self):
        from cuplug import driver
        from cuplug._driver import context_cache

        # One per live context, gone with it (context_cache) or with this kernel.
        mine = context_cache.per_object(driver.Context.get_current(), "ElementwiseKernel range")
        func = mine.get(self)
        if func is None:
            _mod, func, _ = get_elwise_kernel_and_types(
                self.arguments,
                self.operation,
                self.name,
                self.keep,
                self.options,
                use_range=True,
                preamble=self.preamble,
                loop_prep=self.loop_prep,
                after_loop=self.after_loop,
            )
            mine[self] = func
        return func

    # }}}

    def get_texref(self, name, use_range=False):
        """Raises NotImplementedError: texture references were removed in CUDA 12.

        Parameters
        ----------
        name : str
            The texture reference's name.
        use_range : bool
            PyCUDA's flag, ignored.
        """
        raise NotImplementedError(
            "texture references were removed in CUDA 12; pass the array as a vector argument"
        )


__dir__ = _public_dir(__all__)
