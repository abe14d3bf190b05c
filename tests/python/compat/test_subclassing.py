"""Subclassing cuplug's classes the way libraries built on PyCUDA do (issue 24), under the fake
driver: reikna's cluda backend (a GPUArray subclass whose __init__ sets nbytes and replaces
gpudata, an ArgumentHandler that owns its memory, a Device whose name becomes a string), and
PyCUDA's _new_like_me protocol (operations make their results through it, so the subclass
decides the results' type and allocation)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import cuplug.driver as drv
from cuplug import _core, gpuarray
from cuplug.compiler import SourceModule

pytestmark = pytest.mark.gpu


class Buffer(drv.ArgumentHandler):
    """reikna's: memory of its own, no ArgumentHandler.__init__."""

    def __init__(self, size):
        self._buffer = drv.mem_alloc(size)
        self.size = size

    def __int__(self):
        return int(self._buffer)

    def get_device_alloc(self):
        return self._buffer


class Thread:
    """What reikna's Array keeps: makes its arrays and counts them."""

    def __init__(self):
        self.made = 0

    def array(self, shape, dtype, strides=None, offset=0, nbytes=None, base_data=None):
        self.made += 1
        dtype = np.dtype(dtype)
        if nbytes is None:
            nbytes = int(np.prod(shape)) * dtype.itemsize + offset
        if base_data is None and offset:
            base_data = Buffer(nbytes)
        return Array(self, shape, dtype, strides, offset, nbytes, base_data=base_data)

    def empty_like(self, arr):
        return self.array(arr.shape, arr.dtype)


class Array(gpuarray.GPUArray):
    """reikna's cluda.cuda.Array, as published."""

    def __init__(
        self,
        thr,
        shape,
        dtype,
        strides=None,
        offset=0,
        nbytes=None,
        allocator=drv.mem_alloc,
        base_data=None,
    ):
        gpudata = int(base_data) + offset if base_data is not None else None
        gpuarray.GPUArray.__init__(
            self, shape, dtype, strides=strides, allocator=allocator, gpudata=gpudata
        )
        self.base_data = base_data if base_data is not None else self.gpudata
        self.offset = offset
        self.nbytes = nbytes
        self.thread = thr

    def copy(self):
        new_arr = self._new_like_me()
        gpuarray._memcpy_discontig(new_arr, self, async_=True, stream=None)
        return new_arr

    def _new_like_me(self, dtype=None):
        return (
            self.thread.empty_like(self) if dtype is None else self.thread.array(self.shape, dtype)
        )

    def _tempalloc_update_buffer(self, data):
        self.base_data = data
        self.gpudata = int(self.base_data) + self.offset


class Plain(gpuarray.GPUArray):
    """A subclass that only adds to PyCUDA's __init__ (results run it, as in PyCUDA)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tag = "plain"


def test_a_subclass_sets_pycudas_plain_attributes_in_its_init(ctx):
    thr = Thread()
    a = thr.array((4, 5), np.float32, nbytes=4096)
    assert a.nbytes == 4096  # reikna's buffer size, not size * itemsize
    assert a.thread is thr and a.offset == 0
    assert a.shape == (4, 5) and a.size == 20 and a.dtype == np.float32
    for name, value in [
        ("shape", (20,)),
        ("dtype", np.dtype(np.int32)),
        ("strides", (4,)),
        ("size", 20),
        ("mem_size", 20),
        ("allocator", drv.mem_alloc),
        ("base", None),
    ]:
        setattr(a, name, value)
        assert getattr(a, name) == value
    del a.shape  # the C++ value shows again
    assert a.shape == (4, 5)


def test_plain_gpuarray_keeps_its_cpp_attributes(ctx):
    base = _core._array.ArrayBase
    for name in ("shape", "dtype", "strides", "nbytes", "gpudata", "allocator"):
        assert inspect.getattr_static(gpuarray.GPUArray, name) is base.__dict__[name]
        assert inspect.getattr_static(Array, name) is not base.__dict__[name]
    a = gpuarray.empty((3,), np.float32)
    with pytest.raises(AttributeError, match="nbytes"):
        a.nbytes = 1


def test_gpuarray_init_takes_pycudas_arguments_from_a_subclass(ctx):
    mem = drv.mem_alloc(64)

    class Positional(gpuarray.GPUArray):
        def __init__(self, shape, dtype, gpudata):
            args = (shape, dtype, drv.mem_alloc, None, gpudata, (8, 4), "C")
            gpuarray.GPUArray.__init__(self, *args)

    a = Positional((2, 2), np.float32, mem)
    assert (a.shape, a.strides, a.ptr, a.allocator) == ((2, 2), (8, 4), int(mem), drv.mem_alloc)
    b = Plain(shape=(2, 3), dtype=np.float64, order="F", allocator=None)
    assert b.strides == (8, 16) and b.tag == "plain"


class Holder(drv.PointerHolderBase):
    def __init__(self, mem):
        super().__init__()
        self.mem = mem

    def get_pointer(self):
        return int(self.mem)


@pytest.mark.parametrize("wrap", [Buffer, lambda n: Holder(drv.mem_alloc(n))])
def test_gpudata_is_anything_with_int_or_a_pointer_holder(ctx, wrap):
    mem = wrap(64)
    a = gpuarray.GPUArray((16,), np.float32, gpudata=mem)
    assert a.ptr == int(mem) and a.gpudata is mem
    a.set(np.arange(16, dtype=np.float32))
    assert (a.get() == np.arange(16)).all()


def test_setting_gpudata_moves_the_array_onto_that_memory(ctx):
    thr = Thread()
    a = thr.array((8,), np.float32, offset=16)
    first = a.ptr
    assert first == int(a.base_data) + 16
    other = Buffer(64)
    a._tempalloc_update_buffer(other)
    assert a.ptr == int(other) + 16 != first and a.gpudata == int(other) + 16
    a.set(np.full(8, 3, np.float32))  # reaches the new memory
    host = np.empty(16, np.float32)
    drv.memcpy_dtoh(host, int(other))
    assert (host[4:12] == 3).all()
    with pytest.raises(TypeError, match="device pointer"):
        a.gpudata = "nowhere"
    assert a.ptr == int(other) + 16  # a refused value changes nothing
    small = drv.mem_alloc(16)  # an allocation too small for 8 float32
    with pytest.raises(ValueError, match="strides is incompatible|too small|outside"):
        a.gpudata = small
    assert a.ptr == int(other) + 16 and a.gpudata == int(other) + 16  # still on its memory
    a.set(np.full(8, 5, np.float32))
    drv.memcpy_dtoh(host, int(other))
    assert (host[4:12] == 5).all()


def test_results_of_operations_are_made_by_the_subclasss_new_like_me(ctx):
    thr = Thread()
    a = thr.array((4, 8), np.float32)
    b = thr.array((4, 8), np.float32)
    made = thr.made
    results = [a + b, a * 2, -a, abs(a), a.astype(np.float64), a.copy(), a.mul_add(2, b, 3)]
    for r in results:
        assert type(r) is Array and r.thread is thr and r.shape == (4, 8)
    assert thr.made == made + len(results)
    assert results[4].dtype == np.float64


def test_a_subclass_without_new_like_me_gets_its_own_results(ctx):
    a = Plain((4,), np.float32)
    for r in (a + 1, a * a, a.copy(), a.astype(np.int32)):
        assert type(r) is Plain and r.tag == "plain"  # its __init__ ran, as in PyCUDA


def test_new_like_me_of_the_wrong_shape_is_refused(ctx):
    class Wrong(Plain):
        def _new_like_me(self, dtype=None, order="C"):
            return gpuarray.empty((1,), np.float32)

    a = Wrong((4,), np.float32)
    with pytest.raises(ValueError, match="_new_like_me returned an array of another shape"):
        a + 1


def test_memcpy_discontig_copies_every_way_and_checks_its_arguments(ctx):
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = gpuarray.to_gpu(host)
    back = np.zeros_like(host)
    gpuarray._memcpy_discontig(back, a)
    assert (back == host).all()
    b = gpuarray.empty((4, 6), np.float32)
    gpuarray._memcpy_discontig(b, host)
    assert (b.get() == host).all()
    with pytest.raises(ValueError, match="same shape"):
        gpuarray._memcpy_discontig(b, host[:2])
    with pytest.raises(TypeError, match="same dtype"):
        gpuarray._memcpy_discontig(b, host.astype(np.float64))
    with pytest.raises(TypeError, match="src must be GPUArray or ndarray"):
        gpuarray._memcpy_discontig(b, [1, 2])


def test_a_device_subclass_replaces_name_by_its_value(ctx):
    class Device(drv.Device):
        def __init__(self, device_num):
            drv.Device.__init__(self, device_num)
            self.name = self.name()

    d = Device(0)
    assert isinstance(d.name, str) and d.name == drv.Device(0).name()
    assert d.compute_capability() == drv.Device(0).compute_capability()


def test_an_argument_handler_that_owns_its_memory_is_passed_to_a_kernel(ctx, fake):
    mod = SourceModule("__global__ void touch(float *x) { x[threadIdx.x] = 1; }")
    buf = Buffer(64)
    fake.clear_launches()
    mod.get_function("touch")(buf, block=(16, 1, 1), grid=(1, 1))
    assert fake.launch_count() == 1
    assert int.from_bytes(fake.last_launch().params[:8], "little") == int(buf)


def test_a_source_module_subclass(ctx):
    class Module(SourceModule):
        def __init__(self, source):
            super().__init__(source)
            self.kernel = self.get_function("k")

    m = Module("__global__ void k(int *x) { }")
    assert m.kernel is not None and m.get_function("k") is not None


def test_results_of_another_shape_are_of_the_subclass_without_its_constructor(ctx):
    thr = Thread()
    a = thr.array((4, 8), np.float32)
    made = thr.made
    copied = a.T.reshape(32)  # not contiguous: a copy
    in_f = a.reshape(4, 8, order="F")  # the layout asked: a copy
    backwards = a.reverse()
    wide = thr.array((8,), np.float32).mul_add(1, a, 1)  # broadcast to (4, 8)
    for r in (copied, in_f, wide, backwards):
        assert type(r) is Array
    assert copied.shape == (32,) and in_f.flags.f_contiguous and wide.shape == (4, 8)
    assert thr.made == made + 1  # only the (8,) operand: reikna's constructor takes a thread
