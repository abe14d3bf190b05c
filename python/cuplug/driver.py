"""PyCUDA's ``pycuda.driver`` for cuplug: ``import cuplug.driver as cuda``.

Devices, contexts, streams, events, memory, copies, modules and kernel launch, with PyCUDA's
names, signatures, exception classes and messages. What goes beyond PyCUDA: ``with ctx:``,
contexts other libraries made current are used (``Context.get_current(adopt=True)`` returns
them; plain ``get_current()`` is PyCUDA's, this thread's stack only), objects are usable from
any thread (their context is pushed for the call), ``Stream(priority=...)``,
``Stream.__cuda_stream__``, ``Event.handle``, and no abort at exit with contexts left pushed.

The namespace is listed here name by name (``__all__``): the extension's names come from
cuplug._core, the Python helpers from the ``cuplug._driver`` wing (copies, arguments, CUDA
arrays, textures, peer copies). The extension's submodules (backend registry, allocator bindings)
belong to cuplug.plugins and cuplug.memory, not to this namespace;
tests/python/package/test_package_structure.py fails when the extension gains a public name that
is neither listed here nor said to belong elsewhere.
"""

# Registers the hook Function.__call__ uses for DLPack-only kernel arguments (JAX arrays), so that
# they work without cuplug.gpuarray imported, as they did when the extension imported it by name.
from cuplug._array import interop as _interop  # noqa: F401
from cuplug._compile import settings as _settings
from cuplug._core import (
    TR_DEFAULT,
    TRSA_OVERRIDE_FORMAT,
    TRSF_NORMALIZED_COORDINATES,
    TRSF_READ_AS_INTEGER,
    AlignedHostAllocation,
    Array,
    ArrayDescriptor,
    ArrayDescriptor3D,
    CompileError,
    ConfigError,
    Context,
    Device,
    DeviceAllocation,
    DeviceMemoryPool,
    Error,
    Event,
    Function,
    Graph,
    GraphExec,
    GraphNode,
    HostAllocation,
    HostPointer,
    IPCMemoryHandle,
    LaunchConfig,
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
    SurfaceObject,
    TextureObject,
    address_mode,
    aligned_empty,
    aligned_empty_like,
    aligned_zeros,
    aligned_zeros_like,
    array3d_flags,
    array_cubemap_face,
    array_format,
    bitlog2,
    capture_mode,
    compute_mode,
    ctx_flags,
    device_attribute,
    event_flags,
    filter_mode,
    func_cache,
    function_attribute,
    get_driver_version,
    get_version,
    graph_node_type,
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
    memcpy_atoa,
    memcpy_atod,
    memcpy_atoh,
    memcpy_atoh_async,
    memcpy_dtoa,
    memcpy_dtod,
    memcpy_dtod_async,
    memcpy_dtoh,
    memcpy_dtoh_async,
    memcpy_htoa,
    memcpy_htoa_async,
    memcpy_htod,
    memcpy_htod_async,
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
    start_profiler,
    stop_profiler,
)
from cuplug._driver.arguments import ArgumentHandler, In, InOut, Out
from cuplug._driver.copies import from_device, from_device_like, mem_alloc_like, to_device
from cuplug._driver.cuda_arrays import (
    TextureReference,
    bind_array_to_texref,
    gpuarray_to_array,
    make_multichannel_2d_array,
    matrix_to_array,
    matrix_to_texref,
    np_to_array,
)
from cuplug._driver.textures import dtype_to_array_format
from cuplug._public import forward_settings as _forward_settings
from cuplug._public import public_dir as _public_dir
from cuplug._rng.curand_info import direction_vector_set, get_curand_version

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
    "start_profiler",
    "stop_profiler",
    "initialize_profiler",
    "have_gl_ext",
    "get_curand_version",
    "direction_vector_set",
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
    # CUDA arrays, texture and surface objects
    "Array",
    "ArrayDescriptor",
    "ArrayDescriptor3D",
    "TextureObject",
    "SurfaceObject",
    "memcpy_atoa",
    "memcpy_atod",
    "memcpy_atoh",
    "memcpy_atoh_async",
    "memcpy_dtoa",
    "memcpy_htoa",
    "memcpy_htoa_async",
    "dtype_to_array_format",
    "matrix_to_array",
    "np_to_array",
    "gpuarray_to_array",
    "make_multichannel_2d_array",
    "TextureReference",
    "bind_array_to_texref",
    "matrix_to_texref",
    # CUDA graphs and stream capture
    "Graph",
    "GraphNode",
    "GraphExec",
    "capture_mode",
    "graph_node_type",
    # modules, functions, linking, launch
    "Module",
    "Function",
    "LaunchConfig",
    "Linker",
    "module_from_buffer",
    "module_from_file",
    "ArgumentHandler",
    "In",
    "Out",
    "InOut",
]

# Peer copies enable peer access once per pair of contexts (cuplug._driver.peer); can_access_peer
# tells.
from cuplug._driver.peer import memcpy_peer, memcpy_peer_async  # noqa: E402

#: When true, every compile disables the cache, keeps its files and builds with -G
#: (set_debugging()). Assigning it, as PyCUDA code does, takes effect (the value lives in
#: cuplug._compile.settings, where the compile step reads it; only annotated here).
CUDA_DEBUGGING: bool
_forward_settings(__name__, _settings, ["CUDA_DEBUGGING"])


def set_debugging(flag=True):
    """When set, cuplug.compiler disables its cache, keeps its files and compiles with -g -G.

    Parameters
    ----------
    flag : bool
        True turns kernel debugging on, False off.
    """
    _settings.CUDA_DEBUGGING = flag


def initialize_profiler(config_file, output_file, output_mode):
    """Raises NotSupportedError: cuProfilerInitialize was removed in CUDA 12 (the profiler needs
    no initialisation; start_profiler / stop_profiler scope what Nsight records).

    Parameters
    ----------
    config_file : str
        PyCUDA's profiler configuration file.
    output_file : str
        PyCUDA's profiler output file.
    output_mode : profiler_output_mode
        KEY_VALUE_PAIR or CSV.
    """
    raise NotSupportedError(
        "initialize_profiler: cuProfilerInitialize was removed in CUDA 12; the profiler needs no "
        "initialisation: scope a capture with start_profiler() / stop_profiler() (Nsight Systems "
        "and Nsight Compute: --capture-range=cudaProfilerApi)"
    )


def have_gl_ext():
    """Whether OpenGL interop is available (``cuplug.gl`` / ``pycuda.gl`` imports): the
    ``interop`` backend is there, as PyCUDA's says whether it was built with GL."""
    from cuplug import plugins

    return plugins.unavailable_reason("interop") is None


__dir__ = _public_dir(__all__)
