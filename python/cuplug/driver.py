"""PyCUDA's ``pycuda.driver`` for cuplug: ``import cuplug.driver as cuda``.

Devices, contexts, streams, events, memory, copies, modules and kernel launch, with PyCUDA's
names, signatures, exception classes and messages. What goes beyond PyCUDA: ``with ctx:``,
contexts other libraries made current are used (Context.get_current() adopts them), objects are
usable from any thread (their context is pushed for the call), ``Stream(priority=...)``,
``Stream.__cuda_stream__``, ``Event.handle``, and no abort at exit with contexts left pushed.

The namespace is listed here name by name (``__all__``): the extension's names come from
cuplug._core, the Python helpers from cuplug._memory and cuplug._launch. The extension's
submodules (backend registry, allocator bindings) belong to cuplug.plugins and cuplug.memory,
not to this namespace; tests/python/test_package_structure.py fails when the extension gains a
public name that is neither listed here nor said to belong elsewhere.
"""

from warnings import warn as _warn

from cuplug._core import (
    TR_DEFAULT,
    TRSA_OVERRIDE_FORMAT,
    TRSF_NORMALIZED_COORDINATES,
    TRSF_READ_AS_INTEGER,
    AlignedHostAllocation,
    CompileError,
    ConfigError,
    Context,
    Device,
    DeviceAllocation,
    DeviceMemoryPool,
    Error,
    Event,
    Function,
    HostAllocation,
    HostPointer,
    IPCMemoryHandle,
    LaunchError,
    Linker,
    LogicError,
    ManagedAllocation,
    Memcpy2D,
    Memcpy3D,
    Memcpy3DPeer,
    MemoryError,
    Module,
    NotSupportedError,
    PageLockedAllocator,
    PagelockedHostAllocation,
    PageLockedMemoryPool,
    PluginError,
    PointerHolderBase,
    PooledDeviceAllocation,
    PooledHostAllocation,
    RegisteredHostMemory,
    RuntimeError,
    Stream,
    address_mode,
    aligned_empty,
    aligned_empty_like,
    aligned_zeros,
    aligned_zeros_like,
    array3d_flags,
    array_cubemap_face,
    array_format,
    bitlog2,
    compute_mode,
    ctx_flags,
    device_attribute,
    event_flags,
    filter_mode,
    func_cache,
    function_attribute,
    get_driver_version,
    get_version,
    graphics_register_flags,
    host_alloc_flags,
    init,
    ipc_mem_flags,
    jit_fallback,
    jit_input_type,
    jit_option,
    jit_target,
    limit,
    managed_empty,
    managed_empty_like,
    managed_zeros,
    managed_zeros_like,
    mem_alloc,
    mem_alloc_managed,
    mem_alloc_pitch,
    mem_attach_flags,
    mem_get_address_range,
    mem_get_info,
    mem_get_ipc_handle,
    mem_host_register_flags,
    memcpy_dtod,
    memcpy_dtod_async,
    memcpy_dtoh,
    memcpy_dtoh_async,
    memcpy_htod,
    memcpy_htod_async,
    memcpy_peer,
    memcpy_peer_async,
    memory_type,
    memset_d2d8,
    memset_d2d8_async,
    memset_d2d16,
    memset_d2d16_async,
    memset_d2d32,
    memset_d2d32_async,
    memset_d8,
    memset_d8_async,
    memset_d16,
    memset_d16_async,
    memset_d32,
    memset_d32_async,
    module_from_buffer,
    module_from_file,
    pagelocked_empty,
    pagelocked_empty_like,
    pagelocked_zeros,
    pagelocked_zeros_like,
    pointer_attribute,
    profiler_output_mode,
    register_host_memory,
    shared_config,
)
from cuplug._launch import ArgumentHandler, In, InOut, Out
from cuplug._memory import from_device, from_device_like, mem_alloc_like, to_device

__all__ = [
    # exceptions
    "Error",
    "LogicError",
    "LaunchError",
    "MemoryError",
    "RuntimeError",
    "CompileError",
    "NotSupportedError",
    "ConfigError",
    "PluginError",
    # versions, init, debugging
    "init",
    "get_version",
    "get_driver_version",
    "bitlog2",
    "CUDA_DEBUGGING",
    "set_debugging",
    # constants
    "TR_DEFAULT",
    "TRSA_OVERRIDE_FORMAT",
    "TRSF_NORMALIZED_COORDINATES",
    "TRSF_READ_AS_INTEGER",
    "address_mode",
    "array3d_flags",
    "array_cubemap_face",
    "array_format",
    "compute_mode",
    "ctx_flags",
    "device_attribute",
    "event_flags",
    "filter_mode",
    "func_cache",
    "function_attribute",
    "graphics_register_flags",
    "host_alloc_flags",
    "ipc_mem_flags",
    "jit_fallback",
    "jit_input_type",
    "jit_option",
    "jit_target",
    "limit",
    "mem_attach_flags",
    "mem_host_register_flags",
    "memory_type",
    "pointer_attribute",
    "profiler_output_mode",
    "shared_config",
    # devices, contexts, streams, events
    "Device",
    "Context",
    "Stream",
    "Event",
    # device memory
    "DeviceAllocation",
    "ManagedAllocation",
    "PointerHolderBase",
    "IPCMemoryHandle",
    "DeviceMemoryPool",
    "PooledDeviceAllocation",
    "mem_alloc",
    "mem_alloc_like",
    "mem_alloc_managed",
    "mem_alloc_pitch",
    "mem_get_address_range",
    "mem_get_info",
    "mem_get_ipc_handle",
    "managed_empty",
    "managed_empty_like",
    "managed_zeros",
    "managed_zeros_like",
    "to_device",
    "from_device",
    "from_device_like",
    # host memory
    "HostAllocation",
    "HostPointer",
    "AlignedHostAllocation",
    "PagelockedHostAllocation",
    "RegisteredHostMemory",
    "PageLockedAllocator",
    "PageLockedMemoryPool",
    "PooledHostAllocation",
    "aligned_empty",
    "aligned_empty_like",
    "aligned_zeros",
    "aligned_zeros_like",
    "pagelocked_empty",
    "pagelocked_empty_like",
    "pagelocked_zeros",
    "pagelocked_zeros_like",
    "register_host_memory",
    # copies and memset
    "Memcpy2D",
    "Memcpy3D",
    "Memcpy3DPeer",
    "memcpy_dtod",
    "memcpy_dtod_async",
    "memcpy_dtoh",
    "memcpy_dtoh_async",
    "memcpy_htod",
    "memcpy_htod_async",
    "memcpy_peer",
    "memcpy_peer_async",
    "memset_d8",
    "memset_d8_async",
    "memset_d16",
    "memset_d16_async",
    "memset_d32",
    "memset_d32_async",
    "memset_d2d8",
    "memset_d2d8_async",
    "memset_d2d16",
    "memset_d2d16_async",
    "memset_d2d32",
    "memset_d2d32_async",
    # modules, functions, linking, launch
    "Module",
    "Function",
    "Linker",
    "module_from_buffer",
    "module_from_file",
    "ArgumentHandler",
    "In",
    "Out",
    "InOut",
]

CUDA_DEBUGGING = False


def set_debugging(flag=True):
    """When set, cuplug.compiler disables its cache, keeps its files and compiles with -g -G."""
    global CUDA_DEBUGGING
    CUDA_DEBUGGING = flag


# ---- Device's Python-side methods (PyCUDA defines these in driver.py too) ------------------------


def _device_get_attributes(dev):
    """{device_attribute: value} for every attribute; the driver's refusals become warnings."""
    result = {}
    for att_name in dir(device_attribute):
        if not att_name[0].isupper():
            continue
        att_id = getattr(device_attribute, att_name)
        try:
            result[att_id] = dev.get_attribute(att_id)
        except LogicError as e:
            _warn(f"CUDA driver raised '{e}' when querying '{att_name}' on '{dev}'", stacklevel=2)
    return result


def _device_getattr(dev, name):
    """dev.multiprocessor_count == dev.get_attribute(device_attribute.MULTIPROCESSOR_COUNT)."""
    try:
        attribute = getattr(device_attribute, name.upper())
    except AttributeError:
        raise AttributeError(
            f"'Device' object has no attribute '{name}' (nor is '{name.upper()}' a "
            "device_attribute)"
        ) from None
    return dev.get_attribute(attribute)


Device.get_attributes = _device_get_attributes
Device.__getattr__ = _device_getattr
