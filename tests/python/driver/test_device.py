"""Versions, init, Device and the constant classes (spec §1.2-1.4)."""

import os
import subprocess
import sys
import warnings

import pytest

import cuplug.driver as drv

INVALID_DEVICE = 101

# Every device_attribute name PyCUDA lists (spec §1.3).
PYCUDA_DEVICE_ATTRIBUTES = """
MAX_THREADS_PER_BLOCK MAX_BLOCK_DIM_X MAX_BLOCK_DIM_Y MAX_BLOCK_DIM_Z MAX_GRID_DIM_X MAX_GRID_DIM_Y
MAX_GRID_DIM_Z MAX_SHARED_MEMORY_PER_BLOCK SHARED_MEMORY_PER_BLOCK TOTAL_CONSTANT_MEMORY WARP_SIZE
MAX_PITCH MAX_REGISTERS_PER_BLOCK REGISTERS_PER_BLOCK CLOCK_RATE TEXTURE_ALIGNMENT GPU_OVERLAP
MULTIPROCESSOR_COUNT KERNEL_EXEC_TIMEOUT INTEGRATED CAN_MAP_HOST_MEMORY COMPUTE_MODE
MAXIMUM_TEXTURE1D_WIDTH MAXIMUM_TEXTURE2D_WIDTH MAXIMUM_TEXTURE2D_HEIGHT MAXIMUM_TEXTURE3D_WIDTH
MAXIMUM_TEXTURE3D_HEIGHT MAXIMUM_TEXTURE3D_DEPTH MAXIMUM_TEXTURE2D_ARRAY_WIDTH
MAXIMUM_TEXTURE2D_ARRAY_HEIGHT MAXIMUM_TEXTURE2D_ARRAY_NUMSLICES SURFACE_ALIGNMENT
CONCURRENT_KERNELS ECC_ENABLED MAXIMUM_TEXTURE2D_LAYERED_WIDTH MAXIMUM_TEXTURE2D_LAYERED_HEIGHT
MAXIMUM_TEXTURE2D_LAYERED_LAYERS MAXIMUM_TEXTURE1D_LAYERED_WIDTH MAXIMUM_TEXTURE1D_LAYERED_LAYERS
PCI_BUS_ID PCI_DEVICE_ID TCC_DRIVER MEMORY_CLOCK_RATE GLOBAL_MEMORY_BUS_WIDTH L2_CACHE_SIZE
MAX_THREADS_PER_MULTIPROCESSOR ASYNC_ENGINE_COUNT UNIFIED_ADDRESSING
MAXIMUM_TEXTURE2D_GATHER_WIDTH MAXIMUM_TEXTURE2D_GATHER_HEIGHT MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE
MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE PCI_DOMAIN_ID
TEXTURE_PITCH_ALIGNMENT MAXIMUM_TEXTURECUBEMAP_WIDTH MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH
MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS MAXIMUM_SURFACE1D_WIDTH MAXIMUM_SURFACE2D_WIDTH
MAXIMUM_SURFACE2D_HEIGHT MAXIMUM_SURFACE3D_WIDTH MAXIMUM_SURFACE3D_HEIGHT MAXIMUM_SURFACE3D_DEPTH
MAXIMUM_SURFACE1D_LAYERED_WIDTH MAXIMUM_SURFACE1D_LAYERED_LAYERS MAXIMUM_SURFACE2D_LAYERED_WIDTH
MAXIMUM_SURFACE2D_LAYERED_HEIGHT MAXIMUM_SURFACE2D_LAYERED_LAYERS MAXIMUM_SURFACECUBEMAP_WIDTH
MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS
MAXIMUM_TEXTURE1D_LINEAR_WIDTH MAXIMUM_TEXTURE2D_LINEAR_WIDTH MAXIMUM_TEXTURE2D_LINEAR_HEIGHT
MAXIMUM_TEXTURE2D_LINEAR_PITCH MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT
COMPUTE_CAPABILITY_MAJOR COMPUTE_CAPABILITY_MINOR MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH
STREAM_PRIORITIES_SUPPORTED GLOBAL_L1_CACHE_SUPPORTED LOCAL_L1_CACHE_SUPPORTED
MAX_SHARED_MEMORY_PER_MULTIPROCESSOR MAX_REGISTERS_PER_MULTIPROCESSOR MANAGED_MEMORY
MULTI_GPU_BOARD MULTI_GPU_BOARD_GROUP_ID HOST_NATIVE_ATOMIC_SUPPORTED
SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO PAGEABLE_MEMORY_ACCESS CONCURRENT_MANAGED_ACCESS
COMPUTE_PREEMPTION_SUPPORTED CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM
MAX_SHARED_MEMORY_PER_BLOCK_OPTIN PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES
DIRECT_MANAGED_MEM_ACCESS_FROM_HOST HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
HANDLE_TYPE_WIN32_HANDLE_SUPPORTED HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED
MAX_PERSISTING_L2_CACHE_SIZE MAX_BLOCKS_PER_MULTIPROCESSOR GENERIC_COMPRESSION_SUPPORTED
RESERVED_SHARED_MEMORY_PER_BLOCK READ_ONLY_HOST_REGISTER_SUPPORTED MEMORY_POOLS_SUPPORTED
""".split()

ENUM_CLASSES = """
ctx_flags event_flags device_attribute function_attribute func_cache shared_config limit
compute_mode memory_type mem_attach_flags ipc_mem_flags jit_option jit_target jit_fallback
jit_input_type pointer_attribute profiler_output_mode graphics_register_flags array_format
address_mode filter_mode
""".split()


# ---- constants (no device needed) -------------------------------------------------------------


def test_device_attribute_names_and_values():
    names = dir(drv.device_attribute)
    missing = [name for name in PYCUDA_DEVICE_ATTRIBUTES if name not in names]
    assert not missing
    # Newer attributes are there too, with cuda.h's values.
    assert drv.device_attribute.CLUSTER_LAUNCH == 120
    assert drv.device_attribute.MULTIPROCESSOR_COUNT == 16
    attr = drv.device_attribute
    assert attr.SHARED_MEMORY_PER_BLOCK == attr.MAX_SHARED_MEMORY_PER_BLOCK == 8


def test_enums_are_int_like():
    attr = drv.device_attribute.WARP_SIZE
    assert attr == 10 and 10 == attr and attr != 11
    assert int(attr) == 10 and hash(attr) == hash(10)
    assert {attr: "x"}[10] == "x" and {10: "y"}[attr] == "y"
    assert [0, 1, 2][drv.func_cache.PREFER_L1] == 2  # usable as an index
    assert drv.ctx_flags.SCHED_BLOCKING_SYNC | drv.ctx_flags.MAP_HOST == 12
    assert drv.ctx_flags.BLOCKING_SYNC == drv.ctx_flags.SCHED_BLOCKING_SYNC
    assert drv.event_flags.INTERPROCESS | drv.event_flags.DISABLE_TIMING == 6
    assert "WARP_SIZE" in repr(attr)
    for name in ENUM_CLASSES:
        cls = getattr(drv, name)
        assert cls.__module__ == "cuplug._core", name
        assert any(n[0].isupper() for n in dir(cls)), name


def test_jit_targets_are_cuda13_ones():
    names = dir(drv.jit_target)
    for gone in ("10", "11", "12", "13", "20", "21"):
        assert f"COMPUTE_{gone}" not in names
    assert drv.jit_target.COMPUTE_90 == 90
    assert drv.jit_target.COMPUTE_90A == 0x10000 + 90


def test_plain_int_constant_classes():
    assert drv.host_alloc_flags.PORTABLE == 1 and type(drv.host_alloc_flags.PORTABLE) is int
    assert drv.host_alloc_flags.DEVICEMAP | drv.host_alloc_flags.WRITECOMBINED == 6
    assert drv.mem_host_register_flags.DEVICEMAP == 2
    assert getattr(drv.array3d_flags, "2DARRAY") == drv.array3d_flags.ARRAY3D_LAYERED == 1
    assert drv.array3d_flags.SURFACE_LDST == 2
    assert drv.compute_mode.EXCLUSIVE_PROCESS == 3 and not hasattr(drv.compute_mode, "EXCLUSIVE")
    assert drv.jit_fallback.PREFER_BINARY == 1
    assert drv.limit.MALLOC_HEAP_SIZE == 2
    assert drv.TR_DEFAULT == -1


def test_get_version_is_the_headers():
    major, minor, revision = drv.get_version()
    assert major >= 13 and 0 <= minor < 100 and 0 <= revision < 10


def test_debugging_flag():
    assert drv.CUDA_DEBUGGING is False
    drv.set_debugging()
    try:
        assert drv.CUDA_DEBUGGING is True
    finally:
        drv.set_debugging(False)
    assert drv.CUDA_DEBUGGING is False


# ---- devices ----------------------------------------------------------------------------------


def _run(code):
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )


@pytest.mark.gpu
def test_device_before_init_is_a_logic_error():
    result = _run(
        "import cuplug.driver as cuda\n"
        "try:\n"
        "    cuda.Device(0)\n"
        "except cuda.LogicError as e:\n"
        "    print('LogicError', e.code, e)\n"
    )
    assert result.returncode == 0, result.stderr
    assert "LogicError 3 cuDeviceGet failed: initialization error" in result.stdout


@pytest.mark.gpu
def test_init_and_driver_version():
    drv.init()
    drv.init()  # idempotent
    assert isinstance(drv.get_driver_version(), int)
    assert drv.get_driver_version() // 1000 >= 12


@pytest.mark.gpu
def test_device_queries():
    drv.init()
    assert drv.Device.count() >= 1
    dev = drv.Device(0)
    assert isinstance(dev.name(), str) and dev.name()
    major, minor = dev.compute_capability()
    assert (major, minor) == (
        dev.get_attribute(drv.device_attribute.COMPUTE_CAPABILITY_MAJOR),
        dev.get_attribute(drv.device_attribute.COMPUTE_CAPABILITY_MINOR),
    )
    assert dev.total_memory() > 0
    assert dev.get_attribute(drv.device_attribute.WARP_SIZE) == 32
    assert dev.get_attribute(10) == 32  # a plain int works too
    mode = dev.get_attribute(drv.device_attribute.COMPUTE_MODE)
    assert isinstance(mode, drv.compute_mode)


@pytest.mark.gpu
def test_device_bad_ordinal():
    drv.init()
    with pytest.raises(drv.LogicError) as info:
        drv.Device(drv.Device.count())
    assert info.value.code == INVALID_DEVICE
    assert str(info.value) == "cuDeviceGet failed: invalid device ordinal"


@pytest.mark.gpu
def test_device_by_pci_bus_id_equality_and_hash():
    drv.init()
    dev = drv.Device(0)
    same = drv.Device(dev.pci_bus_id())
    assert same == dev and not (same != dev)
    assert hash(same) == hash(dev)
    assert {dev: 1}[same] == 1
    assert dev != "not a device"
    if drv.Device.count() > 1:
        assert drv.Device(1) != dev
    with pytest.raises(drv.LogicError):
        drv.Device("not-a-bus-id")


@pytest.mark.gpu
def test_lower_case_attribute_access():
    drv.init()
    dev = drv.Device(0)
    assert dev.multiprocessor_count == dev.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
    assert dev.max_threads_per_block == dev.get_attribute(1)
    with pytest.raises(AttributeError, match="no_such_thing"):
        dev.no_such_thing  # noqa: B018
    assert not hasattr(dev, "__array_interface__")


@pytest.mark.gpu
def test_get_attributes_covers_every_attribute(driver_mode):
    drv.init()
    dev = drv.Device(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        attributes = dev.get_attributes()
    if driver_mode == "fake":  # the fake answers every attribute; a real driver may refuse some
        assert not caught
    assert isinstance(attributes, dict)
    assert attributes[drv.device_attribute.WARP_SIZE] == 32
    assert attributes[10] == 32
    values = {int(getattr(drv.device_attribute, n)) for n in PYCUDA_DEVICE_ATTRIBUTES}
    assert values <= {int(key) for key in attributes}


@pytest.mark.gpu
def test_can_access_peer():
    drv.init()
    dev = drv.Device(0)
    for other in range(drv.Device.count()):
        assert isinstance(dev.can_access_peer(drv.Device(other)), bool)
