"""Allocators written in Python: a subclass of cuplug.memory.Allocator, registered by name, is
a backend like any plugin (created with options, selected by cuplug.use, wrapped by pools)."""

import threading

import numpy as np
import pytest

import cuplug
import cuplug.memory as memory
from cuplug import _core

Error = _core.Error
ConfigError = _core.ConfigError
PluginError = _core.PluginError


class NumpyHost(memory.Allocator):
    """Host memory from numpy, with an optional byte budget (options arrive as strings)."""

    kind = "host"

    def __init__(self, budget="0", tag="none"):
        super().__init__()
        self.budget = int(budget)
        self.tag = tag
        self.live = {}
        self.calls = []

    def allocate(self, nbytes, stream):
        used = sum(b.nbytes for b in self.live.values())
        if self.budget and used + nbytes > self.budget:
            raise MemoryError(f"budget of {self.budget} bytes exhausted")
        buf = np.empty(nbytes + 256, np.uint8)
        address = (buf.ctypes.data + 255) & ~255
        self.live[address] = buf
        self.calls.append(("allocate", nbytes, stream))
        return address

    def deallocate(self, ptr, nbytes, stream):
        del self.live[ptr]
        self.calls.append(("deallocate", nbytes, stream))


@pytest.fixture
def numpy_host():
    memory.register_allocator("numpy_host", NumpyHost, description="numpy-backed host memory")
    return "numpy_host"


def test_a_registered_class_is_a_backend(numpy_host):
    info = _core.backends.info("allocator", numpy_host)
    assert info.source == "builtin" and info.description == "numpy-backed host memory"
    a = memory.create(numpy_host, tag="x")
    assert isinstance(a, NumpyHost)  # the backend object is the Python instance itself
    assert a.tag == "x" and a.name == numpy_host and a.kind == "host"
    p = a.allocate(1000, 0)  # Python calls go to the Python method...
    assert p in a.live
    a.deallocate(p, 1000, 0)
    backend = memory.backend(numpy_host)
    q = _core.allocators.Allocator.allocate(backend, 100)  # ...the C++ door counts
    assert backend.stats()["allocations"] == 1 and backend.stats()["bytes_in_use"] == 100
    _core.allocators.Allocator.deallocate(backend, q, 100)
    assert backend.stats()["bytes_in_use"] == 0


def test_bad_options_are_config_errors(numpy_host):
    with pytest.raises(ConfigError, match="numpy_host"):
        memory.create(numpy_host, nonsense="1")
    with pytest.raises(ConfigError, match="ValueError: invalid literal .* 'lots'"):
        memory.create(numpy_host, budget="lots")


def test_a_pool_over_a_python_allocator(numpy_host):
    pool = memory.create("pool", upstream=numpy_host)
    assert pool.kind == "host"
    p = pool.allocate(5000)
    pool.deallocate(p, 5000)
    assert pool.allocate(5000) == p  # reused without asking Python
    pool.deallocate(p, 5000)
    assert pool.stats()["bytes_held"] == 5120
    assert pool.free_held() == 5120


def test_memory_error_from_python_is_out_of_memory(numpy_host):
    memory_error = _core.MemoryError
    state = cuplug.config.snapshot()
    # The pool makes its upstream with the upstream's configured options.
    cuplug.config.set_options("allocator", numpy_host, {"budget": "10000"})
    try:
        pool = memory.create("pool", upstream=numpy_host)
        big = pool.allocate(6000)
        pool.deallocate(big, 6000)  # held: 6144 bytes of the budget
        small = pool.allocate(5000)  # fits only once the held block is given back
        assert pool.stats()["bytes_held"] == 0
        pool.deallocate(small, 5000)
        with pytest.raises(memory_error, match="budget of 10000 bytes exhausted"):
            pool.allocate(20000)
        direct = memory.create(numpy_host)
        with pytest.raises(memory_error, match=r"NumpyHost\.allocate failed: out of memory"):
            _core.allocators.Allocator.allocate(direct, 20000)
        assert direct.stats()["failures"] == 1
    finally:
        cuplug.config.restore(state)


def test_errors_in_python_methods_reach_the_caller(numpy_host):
    class Broken(memory.Allocator):
        kind = "host"

        def allocate(self, nbytes, stream):
            raise RuntimeError("no memory today")

        def deallocate(self, ptr, nbytes, stream):
            pass

    b = Broken()
    with pytest.raises(PluginError, match="no memory today"):
        _core.allocators.Allocator.allocate(b, 10)


def test_subclasses_must_say_what_they_are():
    class NoKind(memory.Allocator):
        def allocate(self, nbytes, stream):
            return 1

        def deallocate(self, ptr, nbytes, stream):
            pass

    class NoAllocate(memory.Allocator):
        kind = "host"

    class BadKind(NoKind):
        kind = "gpu"

    kind_of = memory.Allocator.kind.fget  # what C++ callers see
    with pytest.raises(TypeError, match="class attribute kind"):
        kind_of(NoKind())
    with pytest.raises(ValueError, match="BadKind.kind is 'gpu'"):
        kind_of(BadKind())

    class PropertyKind(NoKind):
        @property
        def kind(self):
            return "managed"

    class MethodKind(NoKind):
        def kind(self):
            return "pinned_host"

    assert kind_of(PropertyKind()) == "managed"
    assert kind_of(MethodKind()) == "pinned_host"
    with pytest.raises(PluginError, match="must define allocate"):
        _core.allocators.Allocator.allocate(NoAllocate(), 8)
    with pytest.raises(TypeError, match="not a subclass of cuplug.memory.Allocator"):
        memory.register_allocator("not_an_allocator", dict)
    with pytest.raises(ConfigError, match="not valid"):
        memory.register_allocator("Bad Name", NoKind)


def test_init_must_call_super():
    class Forgetful(NumpyHost):
        def __init__(self):
            pass

    memory.register_allocator("forgetful", Forgetful)
    with pytest.raises(ConfigError, match=r"Allocator.__init__\(\) must be called"):
        memory.create("forgetful")


def test_decorator_registration_and_replacement():
    @memory.register_allocator("decorated")
    class First(NumpyHost):
        pass

    assert isinstance(memory.create("decorated"), First)

    @memory.register_allocator("decorated")
    class Second(NumpyHost):
        pass

    assert isinstance(memory.create("decorated"), Second)  # the later registration wins


def test_optional_methods_are_optional(numpy_host):
    a = memory.create(numpy_host)
    assert not a.can_free_held
    with pytest.raises(_core.NotSupportedError, match="free_held"):
        _core.allocators.Allocator.free_held(a)

    class Caching(NumpyHost):
        def bytes_held(self):
            return 4096

        def free_held(self):
            return 4096

    c = Caching()
    assert c.can_free_held
    assert c.stats()["bytes_held"] == 4096
    assert _core.allocators.Allocator.free_held(c) == 4096
    assert memory.free_held(c) == 4096


def test_calls_from_many_threads(numpy_host):
    pool = memory.create("pool", upstream=numpy_host)
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(200):
                n = int(rng.integers(1, 1 << 16))
                p = pool.allocate(n)
                pool.deallocate(p, n)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert pool.stats()["bytes_in_use"] == 0
    pool.free_held()


@pytest.mark.gpu
def test_selected_python_allocator_serves_mem_alloc(ctx):
    import cuplug.driver as drv

    class ThroughDevice(memory.Allocator):
        kind = "device"

        def __init__(self):
            super().__init__()
            self.inner = memory.create("device")
            self.seen = []

        def allocate(self, nbytes, stream):
            self.seen.append(nbytes)
            return self.inner.allocate(nbytes, stream)

        def deallocate(self, ptr, nbytes, stream):
            self.inner.deallocate(ptr, nbytes, stream)

    memory.register_allocator("through_device", ThroughDevice)
    with cuplug.using(allocator="through_device"):
        a = drv.mem_alloc(3000)
        assert a.backend == "through_device"
        data = np.arange(750, dtype=np.float32)
        drv.memcpy_htod(a, data)
        back = np.empty_like(data)
        drv.memcpy_dtoh(back, a)
        assert np.array_equal(back, data)
        current = memory.current()
        assert isinstance(current, ThroughDevice) and current.seen == [3000]
        assert memory.stats()["backend"] == "through_device"
        assert memory.stats()["bytes_in_use"] == 3000
        a.free()
        assert memory.stats()["bytes_in_use"] == 0


def test_pointers_must_be_256_byte_aligned():
    class Sloppy(memory.Allocator):
        kind = "host"

        def __init__(self, offset):
            super().__init__()
            self.offset = offset
            self.freed = []

        def allocate(self, nbytes, stream):
            return 0x10000 + self.offset

        def deallocate(self, ptr, nbytes, stream):
            self.freed.append((ptr, nbytes))

    with pytest.raises(
        PluginError, match=r"Sloppy.allocate\(\) returned 0x10001, which is not 256-byte aligned"
    ):
        _core.allocators.Allocator.allocate(Sloppy(1), 10)
    for offset in (8, 128):
        a = Sloppy(offset)
        with pytest.raises(PluginError, match="multiple of 256 bytes"):
            _core.allocators.Allocator.allocate(a, 10)
        assert a.freed == [(0x10000 + offset, 10)]  # the refused block went back
        assert a.stats()["bytes_in_use"] == 0 and a.stats()["failures"] == 1
    assert _core.allocators.Allocator.allocate(Sloppy(256), 10) == 0x10100


@pytest.mark.gpu
def test_an_allocator_allocating_through_itself_is_told_so(ctx):
    import cuplug.driver as drv

    class Recursive(memory.Allocator):
        kind = "device"
        calls = 0

        def allocate(self, nbytes, stream):
            Recursive.calls += 1
            return int(drv.mem_alloc(nbytes))  # the selected backend: this allocator

        def deallocate(self, ptr, nbytes, stream):
            pass

    memory.register_allocator("recursive", Recursive)
    with cuplug.using(allocator="recursive"):
        with pytest.raises(PluginError) as raised:
            drv.mem_alloc(1024)
    message = str(raised.value)
    assert "Recursive.allocate() was called again while it was running" in message
    assert 'cuplug.memory.create("device")' in message
    assert "must define allocate" not in message
    assert message.count("called again") == 1 and len(message) < 1000
    assert Recursive.calls == 1  # stopped at the first re-entry


def test_reentry_on_one_thread_does_not_block_other_threads(numpy_host):
    inner = memory.create(numpy_host)
    entered, release = threading.Event(), threading.Event()

    class Slow(memory.Allocator):
        kind = "host"

        def allocate(self, nbytes, stream):
            if not entered.is_set():
                entered.set()
                release.wait(5)
            return inner.allocate(nbytes, stream)

        def deallocate(self, ptr, nbytes, stream):
            inner.deallocate(ptr, nbytes, stream)

    a = Slow()
    results = []
    first = threading.Thread(
        target=lambda: results.append(_core.allocators.Allocator.allocate(a, 16))
    )
    first.start()
    assert entered.wait(5)
    second = _core.allocators.Allocator.allocate(a, 16)  # another thread: not a re-entry
    release.set()
    first.join()
    assert len(results) == 1 and second % 256 == 0
