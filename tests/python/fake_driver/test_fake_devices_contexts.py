"""The fake CUDA driver through ctypes, without cuplug: devices and contexts.

Behaviour tests run against the fake and, where one is usable, the real driver too (`drv` is
parametrized); tests of fake-only conventions use `fake_drv`.
"""

from __future__ import annotations

from support.fake_driver import *  # noqa: F401,F403

# Devices --------------------------------------------------------------------------------------


def test_device_count_and_ordinals(drv):
    count = c_int()
    drv.check("cuDeviceGetCount", byref(count))
    assert count.value >= 1
    dev = c_int()
    drv.check("cuDeviceGet", byref(dev), count.value - 1)
    assert dev.value == count.value - 1
    assert drv.cuDeviceGet(byref(dev), count.value) == CUDA_ERROR_INVALID_DEVICE
    assert drv.cuDeviceGet(byref(dev), -1) == CUDA_ERROR_INVALID_DEVICE


def test_fake_devices(fake_drv):
    count = c_int()
    fake_drv.check("cuDeviceGetCount", byref(count))
    assert count.value == 2
    name = ctypes.create_string_buffer(256)
    fake_drv.check("cuDeviceGetName", name, 256, 1)
    assert name.value == b"cuplug fake device"
    total = c_size_t()
    fake_drv.check("cuDeviceTotalMem", byref(total), 0)
    assert total.value == 80 << 30


def test_device_count_from_environment(fake_library):
    here = str(pathlib.Path(fc.__file__).parents[1])  # tests/python, where support/ lives
    script = (
        f"import sys; sys.path.insert(0, {here!r})\n"
        "import ctypes\n"
        "from support import fakecuda as fc\n"
        f"d = fc.FakeCuda({str(fake_library)!r})\n"
        "r = d.cuInit(0)\n"
        "n = ctypes.c_int(); d.cuDeviceGetCount(ctypes.byref(n))\n"
        "print(r, n.value)\n"
    )
    for env_value, expected in (("5", "0 5"), ("0", "100 0")):
        out = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            env={"FAKE_CUDA_DEVICE_COUNT": env_value, "PATH": "/usr/bin:/bin"},
        )
        assert out.stdout.split() == expected.split(), out.stderr


def test_cuda_visible_devices_chooses_and_orders_the_devices(fake_library):
    """As the real driver reads it at cuInit: the listed board devices in the listed order (their
    PCI bus ids say which), the list ending at the first entry that is not one of the board's
    devices; an empty list shows none (cuInit: CUDA_ERROR_NO_DEVICE). Dask workers pinned to one
    GPU each (test_multidevice_dask.py) rely on it."""
    here = str(pathlib.Path(fc.__file__).parents[1])
    script = (
        f"import sys; sys.path.insert(0, {here!r})\n"
        "import ctypes\n"
        "from support import fakecuda as fc\n"
        f"d = fc.FakeCuda({str(fake_library)!r})\n"
        "r = d.cuInit(0)\n"
        "n = ctypes.c_int(); d.cuDeviceGetCount(ctypes.byref(n))\n"
        "ids = []\n"
        "for i in range(n.value):\n"
        "    b = ctypes.create_string_buffer(32); d.cuDeviceGetPCIBusId(b, 32, i)\n"
        "    ids.append(b.value.decode()[5:7])\n"
        "print(r, n.value, *ids)\n"
    )
    # The board of four: buses 18, 2A, 3A, 5D.
    for visible, expected in (
        (None, "0 4 18 2A 3A 5D"),
        ("1", "0 1 2A"),
        ("2,1", "0 2 3A 2A"),
        ("0,2,-1,1", "0 2 18 3A"),
        ("3,7,0", "0 1 5D"),
        ("", "100 0"),
        ("GPU-1234", "100 0"),
    ):
        env = {"FAKE_CUDA_DEVICE_COUNT": "4", "PATH": "/usr/bin:/bin"}
        if visible is not None:
            env["CUDA_VISIBLE_DEVICES"] = visible
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env
        )
        assert out.stdout.split() == expected.split(), (visible, out.stdout, out.stderr)


def test_device_name_is_truncated_to_the_buffer(drv):
    name = ctypes.create_string_buffer(8)
    drv.check("cuDeviceGetName", name, 5, 0)
    assert len(name.value) == 4


# Attribute numbers from cuda.h.
MAX_THREADS_PER_BLOCK, MAX_BLOCK_DIM_X, MAX_BLOCK_DIM_Z = 1, 2, 4
MAX_GRID_DIM_X, MAX_GRID_DIM_Y = 5, 6
MAX_SHARED_MEMORY_PER_BLOCK, WARP_SIZE = 8, 10
PCI_BUS_ID, L2_CACHE_SIZE = 33, 38
COMPUTE_CAPABILITY_MAJOR, COMPUTE_CAPABILITY_MINOR = 75, 76
MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, MAX_REGISTERS_PER_BLOCK = 97, 12


def test_common_device_attributes(drv):
    assert device_attribute(drv, MAX_THREADS_PER_BLOCK) == 1024
    assert device_attribute(drv, MAX_BLOCK_DIM_X) == 1024
    assert device_attribute(drv, MAX_BLOCK_DIM_Z) == 64
    assert device_attribute(drv, MAX_GRID_DIM_X) == 2**31 - 1
    assert device_attribute(drv, MAX_GRID_DIM_Y) == 65535
    assert device_attribute(drv, MAX_SHARED_MEMORY_PER_BLOCK) == 49152
    assert device_attribute(drv, WARP_SIZE) == 32
    assert device_attribute(drv, MAX_REGISTERS_PER_BLOCK) == 65536


def test_fake_device_is_an_h100(fake_drv):
    assert device_attribute(fake_drv, COMPUTE_CAPABILITY_MAJOR) == 9
    assert device_attribute(fake_drv, COMPUTE_CAPABILITY_MINOR) == 0
    assert device_attribute(fake_drv, MULTIPROCESSOR_COUNT) == 132
    assert device_attribute(fake_drv, L2_CACHE_SIZE) == 50 << 20
    assert device_attribute(fake_drv, MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) == 232448


def test_every_attribute_cuda_h_names_is_answered(drv):
    max_attribute = 148  # CU_DEVICE_ATTRIBUTE_MAX in CUDA 13.0
    for attribute in range(1, max_attribute):
        value = c_int()
        assert drv.cuDeviceGetAttribute(byref(value), attribute, 0) == CUDA_SUCCESS, attribute


@pytest.mark.parametrize("attribute", [0, 148, 100000, -1])
def test_unknown_attribute_is_invalid_value(drv, attribute):
    value = c_int()
    assert drv.cuDeviceGetAttribute(byref(value), attribute, 0) == CUDA_ERROR_INVALID_VALUE


def test_pci_bus_id_round_trip(drv):
    bus_id = ctypes.create_string_buffer(64)
    drv.check("cuDeviceGetPCIBusId", bus_id, 64, 0)
    text = bus_id.value.decode()
    assert re.fullmatch(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]", text), text
    bus = int(text.split(":")[1], 16)
    assert device_attribute(drv, PCI_BUS_ID) == bus
    for spelling in (text, text.lower(), text.upper()):
        dev = c_int(-1)
        drv.check("cuDeviceGetByPCIBusId", byref(dev), spelling.encode())
        assert dev.value == 0


def test_pci_bus_id_is_never_truncated(drv):
    bus_id = ctypes.create_string_buffer(64)
    assert drv.cuDeviceGetPCIBusId(bus_id, 5, 0) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuDeviceGetPCIBusId", bus_id, 13, 0)  # "dddd:bb:dd.f" and its NUL
    assert len(bus_id.value) == 12


def test_unknown_pci_bus_id(drv):
    dev = c_int()
    assert drv.cuDeviceGetByPCIBusId(byref(dev), b"00FF:FE:1F.7") == CUDA_ERROR_INVALID_DEVICE


def test_peer_access_between_devices(fake_drv):
    can = c_int()
    fake_drv.check("cuDeviceCanAccessPeer", byref(can), 0, 1)
    assert can.value == 1
    fake_drv.check("cuDeviceCanAccessPeer", byref(can), 0, 0)
    assert can.value == 0


# Contexts -------------------------------------------------------------------------------------


def test_context_calls_need_a_current_context(drv):
    def body():
        p, free, total = c_uint64(), c_size_t(), c_size_t()
        stream, dev = c_void_p(), c_int()
        return [
            drv.cuMemAlloc(byref(p), 16),
            drv.cuMemGetInfo(byref(free), byref(total)),
            drv.cuCtxSynchronize(None),
            drv.cuCtxGetDevice(byref(dev), None),
            drv.cuStreamCreate(byref(stream), 0),
            drv.cuModuleLoadData(byref(c_void_p()), SAMPLE_PTX),
            drv.cuCtxPopCurrent(byref(c_void_p())),
        ]

    assert in_fresh_thread(body) == [CUDA_ERROR_INVALID_CONTEXT] * 7


def test_create_push_pop(drv):
    def body():
        a, b, popped = c_void_p(), c_void_p(), c_void_p()
        drv.check("cuCtxCreate", byref(a), None, 0, 0)
        assert current(drv) == a.value
        drv.check("cuCtxCreate", byref(b), None, 0, 0)
        assert current(drv) == b.value
        drv.check("cuCtxPopCurrent", byref(popped))
        assert popped.value == b.value and current(drv) == a.value
        drv.check("cuCtxPushCurrent", b)
        drv.check("cuCtxPushCurrent", a)  # the same context may be on the stack twice
        drv.check("cuCtxPopCurrent", None)
        assert current(drv) == b.value
        drv.check("cuCtxDestroy", b)  # current: popped as well
        assert current(drv) == a.value
        drv.check("cuCtxDestroy", a)
        assert current(drv) == 0
        return drv.cuCtxPopCurrent(byref(popped))

    assert in_fresh_thread(body) == CUDA_ERROR_INVALID_CONTEXT


def test_set_current_replaces_the_top(drv):
    def body():
        a, b = c_void_p(), c_void_p()
        drv.check("cuCtxCreate", byref(a), None, 0, 0)
        drv.check("cuCtxCreate", byref(b), None, 0, 0)
        drv.check("cuCtxSetCurrent", a)  # stack: a, a
        drv.check("cuCtxPopCurrent", None)
        assert current(drv) == a.value
        drv.check("cuCtxSetCurrent", None)  # pops
        assert current(drv) == 0
        drv.check("cuCtxSetCurrent", None)  # nothing to pop: still fine
        drv.check("cuCtxDestroy", a)
        drv.check("cuCtxDestroy", b)
        return current(drv)

    assert in_fresh_thread(body) == 0


def test_destroying_a_non_current_context_leaves_the_stack(drv):
    def body():
        a, b = c_void_p(), c_void_p()
        drv.check("cuCtxCreate", byref(a), None, 0, 0)
        drv.check("cuCtxCreate", byref(b), None, 0, 0)
        drv.check("cuCtxDestroy", a)
        assert current(drv) == b.value
        drv.check("cuCtxDestroy", b)
        # `a` is still on the stack, destroyed: calls fail until it is popped.
        destroyed_current = current(drv)
        p = c_uint64()
        result = drv.cuMemAlloc(byref(p), 16)
        drv.check("cuCtxPopCurrent", None)
        return destroyed_current == a.value, result, current(drv)

    assert in_fresh_thread(body) == (True, CUDA_ERROR_CONTEXT_IS_DESTROYED, 0)


def test_context_destroyed_on_another_thread(drv):
    created, destroyed = threading.Event(), threading.Event()
    box = {}

    def owner():
        c = c_void_p()
        drv.check("cuCtxCreate", byref(c), None, 0, 0)
        box["ctx"] = c
        created.set()
        destroyed.wait()
        p = c_uint64()
        box["alloc"] = drv.cuMemAlloc(byref(p), 16)
        box["pop"] = drv.cuCtxPopCurrent(None)

    t = threading.Thread(target=owner)
    t.start()
    created.wait()
    drv.check("cuCtxDestroy", box["ctx"])
    destroyed.set()
    t.join()
    assert box["alloc"] == CUDA_ERROR_CONTEXT_IS_DESTROYED
    assert box["pop"] == CUDA_SUCCESS


def test_destroyed_context_cannot_be_pushed(fake_drv):
    # The real driver aborts the process here (undefined behaviour); the fake says no, and
    # reports it.
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    fake_drv.check("cuCtxDestroy", c)
    assert fake_drv.cuCtxPushCurrent(c) == CUDA_ERROR_INVALID_CONTEXT
    assert fake_drv.cuCtxDestroy(c) == CUDA_ERROR_INVALID_CONTEXT
    reports = fake_drv.take_undefined_behaviour()
    assert len(reports) == 2
    assert reports[0].startswith("cuCtxPushCurrent: context ")
    assert "destroyed or never created" in reports[0] and "may crash" in reports[0]


def test_context_create_flags(drv):
    def body():
        c = c_void_p()
        results = [
            drv.cuCtxCreate(byref(c), None, 0x100, 0),  # not a flag
            drv.cuCtxCreate(byref(c), None, 3, 0),
        ]  # SPIN|YIELD: not one policy
        drv.check("cuCtxCreate", byref(c), None, 4, 0)  # BLOCKING_SYNC
        flags = c_uint()
        drv.check("cuCtxGetFlags", byref(flags))
        dev = c_int(-1)
        drv.check("cuCtxGetDevice", byref(dev), None)
        drv.check("cuCtxDestroy", c)
        return results, flags.value & 0x7, dev.value

    assert in_fresh_thread(body) == ([CUDA_ERROR_INVALID_VALUE] * 2, 4, 0)


def test_context_stacks_are_per_thread(drv, ctx):
    assert current(drv) == ctx.value
    assert in_fresh_thread(lambda: current(drv)) == 0


def test_primary_context_refcount(drv):
    def body():
        flags, active = c_uint(), c_int()
        drv.check("cuDevicePrimaryCtxGetState", 0, byref(flags), byref(active))
        was_active = active.value
        a, b = c_void_p(), c_void_p()
        drv.check("cuDevicePrimaryCtxRetain", byref(a), 0)
        drv.check("cuDevicePrimaryCtxRetain", byref(b), 0)
        assert a.value == b.value
        drv.check("cuDevicePrimaryCtxGetState", 0, byref(flags), byref(active))
        assert active.value == 1
        assert current(drv) == 0  # retaining does not make it current
        drv.check("cuCtxPushCurrent", a)
        p = alloc(drv, 64)
        drv.check("cuMemFree", p)
        drv.check("cuCtxPopCurrent", None)
        drv.check("cuDevicePrimaryCtxRelease", 0)
        drv.check("cuDevicePrimaryCtxRelease", 0)
        drv.check("cuDevicePrimaryCtxGetState", 0, byref(flags), byref(active))
        if was_active:
            return None
        return active.value, drv.cuDevicePrimaryCtxRelease(0)

    result = in_fresh_thread(body)
    if result is not None:  # the primary context was ours alone
        assert result == (0, CUDA_ERROR_INVALID_CONTEXT)


def test_primary_context_is_not_destroyed_by_cuctxdestroy(fake_drv):
    c = c_void_p()
    fake_drv.check("cuDevicePrimaryCtxRetain", byref(c), 0)
    assert fake_drv.cuCtxDestroy(c) == CUDA_ERROR_INVALID_CONTEXT
    fake_drv.check("cuDevicePrimaryCtxRelease", 0)


CU_LIMIT_STACK_SIZE, CU_LIMIT_PRINTF_FIFO_SIZE, CU_LIMIT_MALLOC_HEAP_SIZE = 0, 1, 2
CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH, CU_LIMIT_SHMEM_SIZE = 3, 7
CUDA_ERROR_NOT_PERMITTED = 800


def test_limits(drv, ctx):
    value = c_size_t()
    drv.check("cuCtxGetLimit", byref(value), CU_LIMIT_STACK_SIZE)
    assert value.value == 1024
    drv.check("cuCtxGetLimit", byref(value), CU_LIMIT_PRINTF_FIFO_SIZE)
    assert value.value >= 1 << 20
    drv.check("cuCtxGetLimit", byref(value), CU_LIMIT_MALLOC_HEAP_SIZE)
    assert value.value == 8 << 20
    drv.check("cuCtxSetLimit", CU_LIMIT_MALLOC_HEAP_SIZE, 64 << 20)
    drv.check("cuCtxGetLimit", byref(value), CU_LIMIT_MALLOC_HEAP_SIZE)
    assert value.value == 64 << 20
    assert drv.cuCtxGetLimit(byref(value), 1000) == CUDA_ERROR_INVALID_VALUE
    assert (
        drv.cuCtxGetLimit(byref(value), CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH)
        == fc.CUDA_ERROR_UNSUPPORTED_LIMIT
    )
    drv.check("cuCtxGetLimit", byref(value), CU_LIMIT_SHMEM_SIZE)
    assert value.value == device_attribute(drv, MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    assert drv.cuCtxSetLimit(CU_LIMIT_SHMEM_SIZE, 1024) == CUDA_ERROR_NOT_PERMITTED


def test_cache_config_and_api_version(drv, ctx):
    config = c_int(-1)
    drv.check("cuCtxGetCacheConfig", byref(config))
    assert config.value == 0
    drv.check("cuCtxSetCacheConfig", 2)  # PREFER_L1
    drv.check("cuCtxGetCacheConfig", byref(config))
    assert config.value == 2
    assert drv.cuCtxSetCacheConfig(7) == CUDA_ERROR_INVALID_VALUE
    version = c_uint()
    drv.check("cuCtxGetApiVersion", ctx, byref(version))
    explicit = version.value
    drv.check("cuCtxGetApiVersion", None, byref(version))
    assert version.value == explicit == 3020


def test_peer_access(fake_drv):
    a, b = c_void_p(), c_void_p()
    fake_drv.check("cuCtxCreate", byref(b), None, 0, 1)
    fake_drv.check("cuCtxCreate", byref(a), None, 0, 0)
    assert fake_drv.cuCtxDisablePeerAccess(b) == fc.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
    fake_drv.check("cuCtxEnablePeerAccess", b, 0)
    assert fake_drv.cuCtxEnablePeerAccess(b, 0) == fc.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
    fake_drv.check("cuCtxDisablePeerAccess", b)
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    fake_drv.check("cuCtxPopCurrent", None)
    assert fake_drv.cuCtxEnablePeerAccess(c, 0) == CUDA_ERROR_INVALID_DEVICE  # same device


def test_peer_access_can_be_switched_off(fake_drv):
    """Fake-only: the control stands for GPUs without P2P, which the GPU machines are not."""
    a, b = c_void_p(), c_void_p()
    fake_drv.check("cuCtxCreate", byref(b), None, 0, 1)
    fake_drv.check("cuCtxCreate", byref(a), None, 0, 0)
    fake_drv.set_peer_access(False)
    try:
        can = c_int()
        fake_drv.check("cuDeviceCanAccessPeer", byref(can), 0, 1)
        assert can.value == 0
        assert fake_drv.cuCtxEnablePeerAccess(b, 0) == fc.CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
        assert not fake_drv.peer_enabled(a.value, b.value)
    finally:
        fake_drv.set_peer_access(True)
    fake_drv.check("cuCtxEnablePeerAccess", b, 0)
    assert fake_drv.peer_enabled(a.value, b.value)
    assert not fake_drv.peer_enabled(b.value, a.value)


def test_profiler(drv, ctx):
    drv.check("cuProfilerStart")
    drv.check("cuProfilerStop")
