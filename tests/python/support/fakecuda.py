"""ctypes access to CUDA driver libraries: any driver's entry points, the fake's control API.

Entry points are fetched the way cuplug's core fetches them (cuGetProcAddress_v2 with the base
name for CUDA 13.0), so the same calls run against the fake (tests/fake_driver) and a real
libcuda.so.1.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
from collections import namedtuple
from ctypes import (  # noqa: F401 - the unused ones were fakecuda's names before the split
    POINTER,
    Structure,
    byref,
    c_char,
    c_char_p,
    c_float,
    c_int,
    c_size_t,
    c_ubyte,
    c_uint,
    c_uint64,
    c_ushort,
    c_void_p,
)

from . import fakecuda_graphics, fakecuda_objects  # noqa: F401 - in PROTOTYPES; kept as names

# The types, structs and PROTOTYPES live in fakecuda_prototypes.py; every name stays importable
# from here.
from .fakecuda_prototypes import (  # noqa: F401
    CUDA_MEMCPY2D,
    CUDA_MEMCPY3D,
    CUDA_MEMCPY3D_PEER,
    PROTOTYPES,
    CUctxCreateParams,
    CUdeviceptr,
    CUipcEventHandle,
    CUipcMemHandle,
    CUmemLocation,
    CUmemPoolProps,
    CUresult,
    P,
    dptr_p,
    handle,
    handle_p,
    int_p,
    size_p,
    uint_p,
)

LIBRARY_NAME = "libcuplug_fake_cuda.so"
REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]
CUDA_VERSION = 13000

# CUresult values the tests use.
CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_NOT_INITIALIZED = 3
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_INVALID_DEVICE = 101
CUDA_ERROR_INVALID_IMAGE = 200
CUDA_ERROR_INVALID_CONTEXT = 201
CUDA_ERROR_NO_BINARY_FOR_GPU = 209
CUDA_ERROR_UNSUPPORTED_LIMIT = 215
CUDA_ERROR_INVALID_PTX = 218
CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222
CUDA_ERROR_FILE_NOT_FOUND = 301
CUDA_ERROR_INVALID_HANDLE = 400
CUDA_ERROR_NOT_FOUND = 500
CUDA_ERROR_NOT_READY = 600
CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701
CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217
CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704
CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705
CUDA_ERROR_CONTEXT_IS_DESTROYED = 709
CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712
CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713
CUDA_ERROR_NOT_SUPPORTED = 801
CUDA_ERROR_UNKNOWN = 999

CU_GET_PROC_ADDRESS_SUCCESS = 0
CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1
CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2

CU_MEMORYTYPE_HOST = 1
CU_MEMORYTYPE_DEVICE = 2
CU_MEMORYTYPE_ARRAY = 3
CU_MEMORYTYPE_UNIFIED = 4

CU_LAUNCH_PARAM_END = 0
CU_LAUNCH_PARAM_BUFFER_POINTER = 1
CU_LAUNCH_PARAM_BUFFER_SIZE = 2

CU_JIT_INFO_LOG_BUFFER = 3
CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6

CU_JIT_INPUT_CUBIN = 0
CU_JIT_INPUT_PTX = 1
CU_JIT_INPUT_FATBINARY = 2
CU_JIT_INPUT_LIBRARY = 4


class CudaError(Exception):
    """A driver call returned something other than CUDA_SUCCESS."""

    def __init__(self, routine: str, code: int):
        super().__init__(f"{routine} failed with CUresult {code}")
        self.routine = routine
        self.code = code


_GET_PROC = ctypes.CFUNCTYPE(c_int, c_char_p, P(c_void_p), c_int, c_uint64, int_p)


class Driver:
    """A CUDA driver library's entry points, fetched through cuGetProcAddress_v2.

    ``drv.cuMemAlloc(byref(p), n)`` returns the CUresult; ``drv.check("cuMemAlloc", ...)``
    raises CudaError unless it is CUDA_SUCCESS.
    """

    def __init__(self, path: str):
        self.path = str(path)
        self.lib = ctypes.CDLL(self.path)
        self._get_proc = _GET_PROC(("cuGetProcAddress_v2", self.lib))
        self._functions: dict[str, ctypes._CFuncPtr] = {}

    def proc_address(self, name: str, version: int = CUDA_VERSION) -> tuple[int, int, int]:
        """(CUresult, address or 0, CUdriverProcAddressQueryResult) of cuGetProcAddress_v2.

        As documented, unknown names give CUDA_SUCCESS with address 0 and a status saying why."""
        pfn = c_void_p()
        status = c_int(-1)
        result = self._get_proc(name.encode(), byref(pfn), version, 0, byref(status))
        return result, pfn.value or 0, status.value

    def function(self, name: str):
        if name not in self._functions:
            result, address, status = self.proc_address(name)
            if result != CUDA_SUCCESS or not address:
                raise AttributeError(
                    f"{self.path} has no entry point {name} (CUresult {result}, status {status})"
                )
            prototype = ctypes.CFUNCTYPE(CUresult, *PROTOTYPES[name])
            self._functions[name] = prototype(address)
        return self._functions[name]

    def __getattr__(self, name: str):
        if name.startswith("cu") and name in PROTOTYPES:
            return self.function(name)
        raise AttributeError(name)

    def check(self, name: str, *args) -> None:
        result = self.function(name)(*args)
        if result != CUDA_SUCCESS:
            raise CudaError(name, result)

    def error_name(self, code: int) -> str | None:
        text = c_char_p()
        if self.cuGetErrorName(code, byref(text)) != CUDA_SUCCESS:
            return None
        return text.value.decode()

    def error_string(self, code: int) -> str | None:
        text = c_char_p()
        if self.cuGetErrorString(code, byref(text)) != CUDA_SUCCESS:
            return None
        return text.value.decode()


Launch = namedtuple("Launch", "function grid block shared_bytes stream params")


class FakeCuda(Driver):
    """The fake driver: its entry points plus the control API of tests/fake_driver/fake_cuda.h."""

    def __init__(self, path: str):
        super().__init__(path)
        lib = self.lib
        lib.fake_cuda_reset.restype = None
        lib.fake_cuda_fail_next.argtypes = [c_char_p, c_int, c_int]
        lib.fake_cuda_fail_next.restype = c_int
        lib.fake_cuda_clear_faults.restype = None
        lib.fake_cuda_launch_count.restype = ctypes.c_ulonglong
        lib.fake_cuda_clear_launches.restype = None
        lib.fake_cuda_get_launch.argtypes = [
            c_uint,
            c_char_p,
            c_size_t,
            P(c_uint),
            P(c_uint),
            P(c_uint),
            handle_p,
            c_void_p,
            size_p,
        ]
        lib.fake_cuda_get_launch.restype = c_int
        lib.fake_cuda_live_allocations.restype = c_size_t
        lib.fake_cuda_live_host_allocations.restype = c_size_t
        lib.fake_cuda_device_bytes_in_use.argtypes = [c_int]
        lib.fake_cuda_device_bytes_in_use.restype = c_size_t
        lib.fake_cuda_context_stack_depth.restype = c_int
        lib.fake_cuda_take_undefined_behaviour.argtypes = [c_char_p, c_size_t]
        lib.fake_cuda_take_undefined_behaviour.restype = c_size_t
        lib.fake_cuda_context_alive.argtypes = [handle]
        lib.fake_cuda_context_alive.restype = c_int
        lib.fake_cuda_set_peer_access.argtypes = [c_int]
        lib.fake_cuda_set_peer_access.restype = None
        lib.fake_cuda_peer_enabled.argtypes = [handle, handle]
        lib.fake_cuda_peer_enabled.restype = c_int
        lib.fake_cuda_set_ipc_in_process.argtypes = [c_int]
        lib.fake_cuda_set_ipc_in_process.restype = None
        lib.fake_cuda_reuse_context_handles.argtypes = [c_int]
        lib.fake_cuda_reuse_context_handles.restype = None
        lib.fake_cuda_get_launch_attributes.argtypes = [c_uint, P(c_uint), P(c_int), P(c_int)]
        lib.fake_cuda_get_launch_attributes.restype = c_int
        lib.fake_cuda_live_objects.argtypes = [c_char_p]
        lib.fake_cuda_live_objects.restype = ctypes.c_long

    def launch_attributes(self, back: int = 0) -> tuple | None:
        """(cluster, cooperative, priority) of a launch (cuLaunchKernelEx's attributes; zeros for
        cuLaunchKernel), or None when there is no such launch."""
        cluster, cooperative, priority = (c_uint * 3)(), c_int(), c_int()
        if self.lib.fake_cuda_get_launch_attributes(
            back, cluster, byref(cooperative), byref(priority)
        ):
            return None
        return tuple(cluster), cooperative.value, priority.value

    def live_objects(self, kind: str) -> int:
        """Live driver objects of `kind`: array, texture, surface, graph, graph_exec."""
        count = self.lib.fake_cuda_live_objects(kind.encode())
        if count < 0:
            raise ValueError(f"the fake CUDA driver counts no objects of kind {kind!r}")
        return count

    def reset(self) -> None:
        """Everything back to a freshly loaded driver (cuInit needed again)."""
        self.lib.fake_cuda_reset()

    def fail_next(self, name: str, code: int, count: int = 1) -> None:
        """The next `count` calls of driver function `name` return `code`."""
        if self.lib.fake_cuda_fail_next(name.encode(), code, count) != 0:
            raise ValueError(f"the fake CUDA driver has no function named {name!r}")

    def clear_faults(self) -> None:
        self.lib.fake_cuda_clear_faults()

    def launch_count(self) -> int:
        return self.lib.fake_cuda_launch_count()

    def clear_launches(self) -> None:
        self.lib.fake_cuda_clear_launches()

    def launch(self, back: int = 0) -> Launch | None:
        """The launch `back` launches before the last one (0: the last), or None."""
        name = ctypes.create_string_buffer(512)
        grid, block = (c_uint * 3)(), (c_uint * 3)()
        shared, stream, size = c_uint(), handle(), c_size_t(0)
        if (
            self.lib.fake_cuda_get_launch(
                back, name, len(name), grid, block, byref(shared), byref(stream), None, byref(size)
            )
            != 0
        ):
            return None
        params = ctypes.create_string_buffer(max(size.value, 1))
        self.lib.fake_cuda_get_launch(back, None, 0, None, None, None, None, params, byref(size))
        return Launch(
            name.value.decode(),
            tuple(grid),
            tuple(block),
            shared.value,
            stream.value or 0,
            params.raw[: size.value],
        )

    def last_launch(self) -> Launch | None:
        return self.launch(0)

    def live_allocations(self) -> int:
        return self.lib.fake_cuda_live_allocations()

    def live_host_allocations(self) -> int:
        return self.lib.fake_cuda_live_host_allocations()

    def device_bytes_in_use(self, device: int = 0) -> int:
        return self.lib.fake_cuda_device_bytes_in_use(device)

    def set_peer_access(self, enabled: bool = True) -> None:
        """Whether distinct devices can access each other's memory (cuDeviceCanAccessPeer); off,
        cuCtxEnablePeerAccess fails with CUDA_ERROR_PEER_ACCESS_UNSUPPORTED. On by default."""
        self.lib.fake_cuda_set_peer_access(int(enabled))

    def peer_enabled(self, context: int, peer: int) -> bool:
        """Whether cuCtxEnablePeerAccess(peer) was called with `context` current."""
        return bool(self.lib.fake_cuda_peer_enabled(context, peer))

    def set_ipc_in_process(self, enabled: bool = True) -> None:
        """Let cuIpcOpenMemHandle / cuIpcOpenEventHandle open this process's own handles, which
        the real driver refuses (CUDA_ERROR_INVALID_CONTEXT); off by default."""
        self.lib.fake_cuda_set_ipc_in_process(int(enabled))

    def reuse_context_handles(self, enabled: bool = True) -> None:
        """Give a new context the handle of the context destroyed last, as the real driver often
        does; off by default (destroyed handles stay unused, so late uses are caught)."""
        self.lib.fake_cuda_reuse_context_handles(int(enabled))

    def take_undefined_behaviour(self) -> list[str]:
        """Calls since the last take that a real driver would not survive (destroyed or made-up
        handles, device addresses used as host memory), one message each; clears them."""
        buffer = ctypes.create_string_buffer(1 << 16)
        count = self.lib.fake_cuda_take_undefined_behaviour(buffer, len(buffer))
        return buffer.value.decode().splitlines()[:count]

    def context_alive(self, context: int) -> bool:
        """Whether a context handle is live (asking the driver about a destroyed one is
        undefined behaviour, and reported as such)."""
        return bool(self.lib.fake_cuda_context_alive(context))

    def context_stack_depth(self) -> int:
        """Depth of the calling thread's context stack."""
        return self.lib.fake_cuda_context_stack_depth()


def candidate_paths(repo_root: pathlib.Path = REPO_ROOT) -> list[pathlib.Path]:
    """Where the fake driver may have been built, most specific first."""
    paths = []
    if os.environ.get("CUPLUG_FAKE_DRIVER"):
        paths.append(pathlib.Path(os.environ["CUPLUG_FAKE_DRIVER"]))
    if os.environ.get("CUPLUG_BUILD_DIR"):
        build = pathlib.Path(os.environ["CUPLUG_BUILD_DIR"])
        paths.append(build / "tests/fake_driver" / LIBRARY_NAME)
    builds = sorted(
        repo_root.glob(f"build*/tests/fake_driver/{LIBRARY_NAME}"),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    return paths + builds


def find_fake_driver(repo_root: pathlib.Path = REPO_ROOT) -> pathlib.Path | None:
    """The fake driver library: $CUPLUG_FAKE_DRIVER, $CUPLUG_BUILD_DIR, or the newest build*/."""
    for path in candidate_paths(repo_root):
        if path.is_file():
            return path.resolve()
    return None


def fake_driver_or_skip() -> str:
    """The fake driver library's path, or the calling test skips (it is not built)."""
    import pytest

    path = find_fake_driver()
    if path is None:
        pytest.skip("the fake driver is not built (target cuplug_fake_cuda)")
    return str(path)


def real_driver_usable(library: str = "libcuda.so.1") -> tuple[bool, str]:
    """Whether a real CUDA driver with at least one device can be used, and why not."""
    try:
        lib = ctypes.CDLL(library)
    except OSError as e:
        return False, f"{library} cannot be loaded ({e})"
    try:
        cu_init, get_count = lib.cuInit, lib.cuDeviceGetCount
    except AttributeError as e:
        return False, f"{library} is not a CUDA driver ({e})"
    cu_init.argtypes, get_count.argtypes = [c_uint], [int_p]
    result = cu_init(0)
    if result != CUDA_SUCCESS:
        return False, f"cuInit failed with CUresult {result}"
    count = c_int(0)
    result = get_count(byref(count))
    if result != CUDA_SUCCESS or count.value <= 0:
        return False, "no CUDA device"
    return True, f"{count.value} device(s)"
