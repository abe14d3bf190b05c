"""GPUArray: the C layout (ArrayBase: shape, strides, dtype, memory, operators) plus the methods
of each concern, mixed in from transfers, indexing and methods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cuplug import _core
from cuplug._kernels.results import compact_strides

from .geometry import LaunchGeometry
from .indexing import IndexingMixin
from .interop import ArrayInterop
from .methods import MethodsMixin
from .numpy_protocols import NumpyProtocolsMixin
from .transfers import TransferMixin, pickled_values, unpickle

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import DTypeLike

__all__ = ["ArrayFlags", "GPUArray", "PYCUDA_ATTRIBUTES"]


class ArrayFlags:
    """PyCUDA's (compyte's) flags: c_contiguous, f_contiguous, forc."""

    __slots__ = ("c_contiguous", "f_contiguous", "forc")

    def __init__(self, ary):
        self.c_contiguous = ary._c_contiguous
        self.f_contiguous = ary._f_contiguous
        self.forc = self.c_contiguous or self.f_contiguous

    def __repr__(self):
        return (
            f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : {self.f_contiguous}\n"
            f"  FORC : {self.forc}"
        )


#: PyCUDA's GPUArray keeps these as plain instance attributes, which subclasses set in their
#: __init__ (``self.nbytes = nbytes``, ``self.allocator = ...``, ``self.gpudata = ...``).
PYCUDA_ATTRIBUTES = (
    "shape",
    "dtype",
    "strides",
    "size",
    "mem_size",
    "nbytes",
    "gpudata",
    "allocator",
    "base",
)


def _shadowing(name):
    """A property over ArrayBase's read-only attribute `name` that a subclass instance may set:
    the value set (kept in the instance's __dict__) shadows the C++ one. Setting ``gpudata``
    also moves the array onto that memory (the C++ operations read it there)."""
    cpp_get = _core._array.ArrayBase.__dict__[name].__get__

    def get(self):
        try:
            return self.__dict__[name]
        except KeyError:
            return cpp_get(self)

    def set(self, value):
        if name == "gpudata":
            self._set_gpudata(value)
        self.__dict__[name] = value

    def delete(self):
        self.__dict__.pop(name, None)

    return property(get, set, delete, _core._array.ArrayBase.__dict__[name].__doc__)


class GPUArray(
    TransferMixin,
    IndexingMixin,
    MethodsMixin,
    ArrayInterop,
    NumpyProtocolsMixin,
    _core._array.ArrayBase,
):
    """An n-dimensional array in device memory, PyCUDA's GPUArray with NumPy's semantics.

    ``GPUArray(shape, dtype, allocator=None, base=None, gpudata=None, strides=None, order="C")``:
    memory from ``allocator(nbytes)`` (a callable as in PyCUDA, e.g. a DeviceMemoryPool's
    ``allocate``) or, with ``allocator=None``, from the array allocator backend (a caching pool
    unless ``cuplug.use(allocator=...)`` chose one). ``gpudata`` wraps existing memory instead
    (a DeviceAllocation, an int address, anything with ``__int__``); ``base`` keeps its owner
    alive. Operators and functions broadcast as NumPy does, work on any strides, and take
    NumPy's result dtypes; ``stream=`` arguments order the work on that stream.
    """

    # What type checkers see of ArrayBase, the C layout under the class (a C type: its getters and
    # number slots are descriptors pybind11-stubgen cannot type, so the generated stub,
    # _core/_array.pyi, lists the operators untyped and the attributes not at all). Annotations
    # only: nothing here exists at run time, where the C++ getters and slots answer.
    # PYCUDA_ATTRIBUTES are plain attributes (a subclass may set them, as PyCUDA's allow).
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    strides: tuple[int, ...]
    size: int
    mem_size: int
    nbytes: int
    gpudata: Any
    allocator: Any
    base: Any

    if TYPE_CHECKING:

        def __init__(
            self,
            shape: int | Sequence[int],
            dtype: DTypeLike,
            allocator: Any = None,
            base: Any = None,
            gpudata: Any = None,
            strides: Sequence[int] | None = None,
            order: str = "C",
        ) -> None: ...
        @property
        def ptr(self) -> int:
            """Device address of the first element (0 when empty)."""
            ...

        @property
        def itemsize(self) -> int: ...
        @property
        def ndim(self) -> int: ...
        # Operators: NumPy's semantics, results are arrays (comparisons too).
        def __add__(self, value: Any) -> GPUArray: ...
        def __radd__(self, value: Any) -> GPUArray: ...
        def __iadd__(self, value: Any) -> GPUArray: ...
        def __sub__(self, value: Any) -> GPUArray: ...
        def __rsub__(self, value: Any) -> GPUArray: ...
        def __isub__(self, value: Any) -> GPUArray: ...
        def __mul__(self, value: Any) -> GPUArray: ...
        def __rmul__(self, value: Any) -> GPUArray: ...
        def __imul__(self, value: Any) -> GPUArray: ...
        def __truediv__(self, value: Any) -> GPUArray: ...
        def __rtruediv__(self, value: Any) -> GPUArray: ...
        def __itruediv__(self, value: Any) -> GPUArray: ...
        def __floordiv__(self, value: Any) -> GPUArray: ...
        def __rfloordiv__(self, value: Any) -> GPUArray: ...
        def __ifloordiv__(self, value: Any) -> GPUArray: ...
        def __mod__(self, value: Any) -> GPUArray: ...
        def __rmod__(self, value: Any) -> GPUArray: ...
        def __imod__(self, value: Any) -> GPUArray: ...
        def __pow__(self, value: Any) -> GPUArray: ...
        def __rpow__(self, value: Any) -> GPUArray: ...
        def __ipow__(self, value: Any) -> GPUArray: ...
        def __and__(self, value: Any) -> GPUArray: ...
        def __rand__(self, value: Any) -> GPUArray: ...
        def __iand__(self, value: Any) -> GPUArray: ...
        def __or__(self, value: Any) -> GPUArray: ...
        def __ror__(self, value: Any) -> GPUArray: ...
        def __ior__(self, value: Any) -> GPUArray: ...
        def __xor__(self, value: Any) -> GPUArray: ...
        def __rxor__(self, value: Any) -> GPUArray: ...
        def __ixor__(self, value: Any) -> GPUArray: ...
        def __lshift__(self, value: Any) -> GPUArray: ...
        def __rlshift__(self, value: Any) -> GPUArray: ...
        def __ilshift__(self, value: Any) -> GPUArray: ...
        def __rshift__(self, value: Any) -> GPUArray: ...
        def __rrshift__(self, value: Any) -> GPUArray: ...
        def __irshift__(self, value: Any) -> GPUArray: ...
        def __divmod__(self, value: Any) -> tuple[GPUArray, GPUArray]: ...
        def __rdivmod__(self, value: Any) -> tuple[GPUArray, GPUArray]: ...
        def __neg__(self) -> GPUArray: ...
        def __pos__(self) -> GPUArray: ...
        def __abs__(self) -> GPUArray: ...
        def __invert__(self) -> GPUArray: ...
        def __eq__(self, value: Any) -> GPUArray: ...  # type: ignore[override]
        def __ne__(self, value: Any) -> GPUArray: ...  # type: ignore[override]
        def __lt__(self, value: Any) -> GPUArray: ...
        def __le__(self, value: Any) -> GPUArray: ...
        def __gt__(self, value: Any) -> GPUArray: ...
        def __ge__(self, value: Any) -> GPUArray: ...

    __array_priority__ = 100
    # PyCUDA's launch geometry of the array's elements, read by PyCUDA code that launches the
    # elementwise factories' functions itself.
    _grid = LaunchGeometry(0)
    _block = LaunchGeometry(1)

    def __init_subclass__(cls, **kwargs):
        """Subclasses may set PyCUDA's plain attributes (PYCUDA_ATTRIBUTES) as PyCUDA's allow;
        GPUArray itself keeps the C++ getters (its fast path is untouched)."""
        super().__init_subclass__(**kwargs)
        for name in PYCUDA_ATTRIBUTES:
            found = next((k.__dict__[name] for k in cls.__mro__ if name in k.__dict__), None)
            if found is _core._array.ArrayBase.__dict__[name]:
                setattr(cls, name, _shadowing(name))

    def _new_like_me(self, dtype=None, order="C"):
        """An empty array of self's shape (PyCUDA's protocol): ``self.__class__(shape, dtype,
        allocator=self.allocator, strides=..., order=order)``, self's memory order kept for the
        same dtype. Operations make their results of self's shape through it, so a subclass
        that overrides it decides the results' type and allocation.

        Parameters
        ----------
        dtype : numpy.dtype | None
            The elements' type; None: self's.
        order : str
            "C" or "F", for a dtype other than self's.
        """
        dtype = self.dtype if dtype is None else np.dtype(dtype)
        strides = None
        if dtype == self.dtype:
            strides = compact_strides(self.shape, self.strides, dtype.itemsize)
        return self.__class__(
            self.shape, dtype, allocator=self.allocator, strides=strides, order=order
        )

    def _like_me(self, dtype, shape=None):
        """The new array for a result of a subclass instance, of `shape` (None: self's) and
        `dtype`, made by its _new_like_me as PyCUDA's operations make theirs; None for plain
        GPUArrays and other shapes (the caller makes it)."""
        if type(self) is not GPUArray and (shape is None or tuple(shape) == self.shape):
            return self._new_like_me(dtype)
        return None

    @property
    def flags(self) -> ArrayFlags:
        """The layout flags (c_contiguous, f_contiguous, forc), as NumPy's ndarray.flags."""
        return ArrayFlags(self)

    @property
    def context(self):
        """The Context the array's memory belongs to; None when not known (a bare pointer made
        outside any context)."""
        return _core.Context._from_handle(self._context_handle)

    @property
    def device(self):
        """The Device the array's memory is on; None when not known."""
        ctx = self.context
        return None if ctx is None else ctx.device

    @property
    def T(self) -> GPUArray:  # noqa: N802 (NumPy's name)
        """The transposed view (axes reversed), as NumPy's ndarray.T."""
        return self.transpose()

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __bool__(self) -> bool:
        if self.size == 1:
            return bool(self.get().reshape(()))
        if self.size == 0:
            raise ValueError("The truth value of an empty array is ambiguous.")
        raise ValueError(
            "The truth value of an array with more than one element is ambiguous. "
            "Use a.any() or a.all()"
        )

    def __index__(self) -> int:
        if self.size != 1 or self.dtype.kind not in "iub":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self.get().reshape(()))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def _scalar(self, what):
        if self.size != 1:
            raise TypeError(f"only size-1 arrays can be converted to Python scalars ({what})")
        return self.get().reshape(())[()]

    def __repr__(self):
        return repr(self.get())

    def __str__(self):
        return str(self.get())

    def __reduce__(self):
        # Through host memory (pickle has no other way): read under the array's context,
        # rebuilt on the current device, or device 0 where no context is current (transfers.py).
        return (unpickle, (pickled_values(self),))

    def bind_to_texref(self, texref, allow_offset=False):
        """PyCUDA's texture-reference binding: texture references were removed in CUDA 12
        (NotSupportedError), but an object with PyCUDA's ``set_address(devptr, bytes,
        allow_offset)`` is given the array's address as PyCUDA did.

        Parameters
        ----------
        texref : object
            A stand-in with ``set_address`` (elementwise.get_linear_combination_kernel's).
        allow_offset : bool
            Passed on.
        """
        if getattr(type(texref), "set_address", None) is not None:
            # A stand-in that takes the address as PyCUDA's TextureReference did (the GPU
            # scalars of elementwise.get_linear_combination_kernel): PyCUDA's call.
            offset = texref.set_address(self.gpudata, self.nbytes, allow_offset=allow_offset)
            return offset // self.dtype.itemsize
        raise _core.NotSupportedError(
            "GPUArray.bind_to_texref: texture references were removed in CUDA 12; pass the "
            "array to a kernel (it reads it directly) or create a texture object"
        )

    def bind_to_texref_ext(
        self,
        texref,
        channels=1,
        allow_double_hack=False,
        allow_complex_hack=False,
        allow_offset=False,
    ):
        """PyCUDA's texture-reference binding: as bind_to_texref.

        Parameters
        ----------
        texref : object
            A stand-in with ``set_address`` (elementwise.get_linear_combination_kernel's).
        channels, allow_double_hack, allow_complex_hack, allow_offset
            PyCUDA's format options (the stand-ins read the memory as it is).
        """
        return self.bind_to_texref(texref, allow_offset)

    # No __iter__, as PyCUDA's GPUArray has none: ``for x in a`` still works (Python's sequence
    # protocol: a[0], a[1], ... until IndexError), but ``isinstance(a, collections.abc.Iterable)``
    # is False, which code built on PyCUDA relies on (reikna's tempalloc.extract_dependencies
    # tells an array from a list of arrays by it).


_core._register_hooks(result_type=GPUArray)
# clear_context_caches() also drops compiled array kernels and the per-context array pools.


def _is_array(x):
    return isinstance(x, _core._array.ArrayBase)


def _as_dtype(dtype):
    return np.dtype(dtype)
