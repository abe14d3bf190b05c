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

import numpy as np

from cuplug import _elementwise_copies as _copies
from cuplug import _elementwise_factories as _factories
from cuplug._cargs import parse_arguments
from cuplug._codegen import elementwise as _cg
from cuplug._elementwise_copies import *  # noqa: F403 - PyCUDA's get_*_kernel factories
from cuplug._elementwise_factories import *  # noqa: F403 - PyCUDA's get_*_kernel factories
from cuplug._elementwise_modules import (
    _check_kwargs,
    _check_name,
    _engine_args,
    _source_module,
    get_elwise_kernel,
    get_elwise_kernel_and_types,
    get_elwise_module,
    get_elwise_range_module,
)
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
    *_copies.__all__,
    *_factories.__all__,
]

# GPUArray's exchange protocols (DLPack, CUDA Array Interface, __array__) until the array
# layer mixes them in itself.


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
        self._check_range(
            args, start, stop, step, count, "slice" if slice_ is not None else "range"
        )
        func = self._range_function()
        values = []
        for a, x in zip(self.arguments, args):
            values.append(x.ptr if isinstance(a, VectorArg) else x)
        block = _cg.BLOCK
        grid = min(-(-count // block), 65535 * 8)
        func.prepared_async_call((grid, 1), (block, 1, 1), stream, *values, n, start, stop, step)

    def _check_range(self, args, start, stop, step, count, keyword):
        """IndexError unless every index the range kernel touches (start, start + step, ...,
        count of them) lies inside every vector argument: the kernel indexes raw memory."""
        last = start + (count - 1) * step
        lo, hi = min(start, last), max(start, last)
        for k in self._vectors:
            size = args[k].size
            if lo < 0 or hi >= size:
                bad = lo if lo < 0 else hi
                raise IndexError(
                    f"{self.name}(): {keyword}=slice({start}, {stop}, {step}) runs over indices "
                    f"{start} to {last}, but argument {self.arguments[k].name!r} has {size} "
                    f"elements: index {bad} is out of bounds for axis 0 with size {size}"
                )

    def _range_function(self):
        return self.generate_stride_kernel_and_types(True)[1]

    def generate_stride_kernel_and_types(self, use_range):
        """PyCUDA's (module, prepared function, arguments) of the flat kernel over contiguous
        vectors, made once per context: launch it with the arguments, then ``n`` (and
        ``start, stop, step`` with use_range), as ``arguments`` (which ends with them) says.

        Parameters
        ----------
        use_range : bool
            The range form (start, stop, step after n).

        Returns
        -------
        tuple[SourceModule, Function, list[Argument]]
            The module, its prepared kernel and its full argument list.
        """
        from cuplug import driver
        from cuplug._driver import context_cache

        # One per live context and form, gone with the context (context_cache) or this kernel.
        mine = context_cache.per_object(driver.Context.get_current(), "ElementwiseKernel range")
        forms = mine.get(self)
        if forms is None:
            forms = mine[self] = {}
        made = forms.get(bool(use_range))
        if made is None:
            made = get_elwise_kernel_and_types(
                self.arguments,
                self.operation,
                self.name,
                self.keep,
                self.options,
                use_range=bool(use_range),
                preamble=self.preamble,
                loop_prep=self.loop_prep,
                after_loop=self.after_loop,
            )
            forms[bool(use_range)] = made
        return made

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
