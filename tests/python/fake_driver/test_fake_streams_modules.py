"""The fake CUDA driver through ctypes, without cuplug: streams, events, modules and launches.

Behaviour tests run against the fake and, where one is usable, the real driver too (`drv` is
parametrized); tests of fake-only conventions use `fake_drv`.
"""

from __future__ import annotations

from support.fake_driver import *  # noqa: F401,F403

# Streams and events ---------------------------------------------------------------------------


def test_streams(drv, ctx):
    s = c_void_p()
    drv.check("cuStreamCreateWithPriority", byref(s), 1, -100)  # NON_BLOCKING, clamped priority
    priority, flags = c_int(), c_uint()
    drv.check("cuStreamGetPriority", s, byref(priority))
    assert -10 <= priority.value < 0
    drv.check("cuStreamGetFlags", s, byref(flags))
    assert flags.value == 1
    assert drv.cuStreamQuery(s) == CUDA_SUCCESS
    drv.check("cuStreamSynchronize", None)
    drv.check("cuStreamGetPriority", None, byref(priority))
    assert priority.value == 0
    drv.check("cuStreamDestroy", s)
    assert drv.cuStreamCreate(byref(s), 0x10) == CUDA_ERROR_INVALID_VALUE


def test_stream_handles_are_checked(fake_drv):
    c, s = c_void_p(), c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    fake_drv.check("cuStreamCreate", byref(s), 0)
    fake_drv.check("cuStreamDestroy", s)
    assert fake_drv.cuStreamDestroy(s) == CUDA_ERROR_INVALID_HANDLE
    assert fake_drv.cuStreamSynchronize(s) == CUDA_ERROR_INVALID_HANDLE
    made_up = c_void_p(0xDEAD0)
    assert fake_drv.cuMemsetD8Async(alloc(fake_drv, 8), 0, 8, made_up) == CUDA_ERROR_INVALID_HANDLE
    reports = fake_drv.take_undefined_behaviour()
    assert [r.split(":")[0] for r in reports] == [
        "cuStreamDestroy",
        "cuStreamSynchronize",
        "cuMemsetD8Async",
    ]
    assert all("stream handle" in r for r in reports)


def test_event_timing(drv, ctx):
    start, end = c_void_p(), c_void_p()
    drv.check("cuEventCreate", byref(start), 0)
    drv.check("cuEventCreate", byref(end), 0)
    ms = c_float(-1)
    assert drv.cuEventElapsedTime(byref(ms), start, end) == CUDA_ERROR_INVALID_HANDLE
    assert drv.cuEventQuery(start) == CUDA_SUCCESS  # never recorded: complete
    drv.check("cuEventRecord", start, None)
    drv.check("cuEventRecord", end, None)
    drv.check("cuEventSynchronize", end)
    drv.check("cuEventElapsedTime", byref(ms), start, end)
    assert ms.value >= 0
    untimed = c_void_p()
    drv.check("cuEventCreate", byref(untimed), 2)  # DISABLE_TIMING
    drv.check("cuEventRecord", untimed, None)
    drv.check("cuEventSynchronize", untimed)
    assert drv.cuEventElapsedTime(byref(ms), start, untimed) == CUDA_ERROR_INVALID_HANDLE
    stream = c_void_p()
    drv.check("cuStreamCreate", byref(stream), 0)
    drv.check("cuStreamWaitEvent", stream, end, 0)
    drv.check("cuStreamDestroy", stream)
    for e in (start, end, untimed):
        drv.check("cuEventDestroy", e)
    assert drv.cuEventCreate(byref(start), 4) == CUDA_ERROR_INVALID_VALUE  # IPC needs no timing


def test_ipc_event_handle(drv, ctx):
    timed, ipc = c_void_p(), c_void_p()
    drv.check("cuEventCreate", byref(timed), 0)
    drv.check("cuEventCreate", byref(ipc), 6)  # INTERPROCESS | DISABLE_TIMING
    handle = fc.CUipcEventHandle()
    assert drv.cuIpcGetEventHandle(byref(handle), timed) == CUDA_ERROR_INVALID_HANDLE
    drv.check("cuIpcGetEventHandle", byref(handle), ipc)
    drv.check("cuEventDestroy", timed)
    drv.check("cuEventDestroy", ipc)


def test_ipc_event_round_trip_in_process(fake_drv):
    c, ipc, opened = c_void_p(), c_void_p(), c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    fake_drv.set_ipc_in_process(True)
    fake_drv.check("cuEventCreate", byref(ipc), 6)
    handle = fc.CUipcEventHandle()
    fake_drv.check("cuIpcGetEventHandle", byref(handle), ipc)
    fake_drv.check("cuIpcOpenEventHandle", byref(opened), handle)
    fake_drv.check("cuEventRecord", opened, None)
    fake_drv.check("cuEventSynchronize", ipc)
    fake_drv.check("cuEventDestroy", opened)


# Modules --------------------------------------------------------------------------------------


def test_ptx_parameter_layout(drv, ctx):
    m = load(drv, SAMPLE_PTX)
    f = function(drv, m, b"params_kernel")
    offset, size = c_size_t(), c_size_t()
    layout = []
    for i in range(len(SAMPLE_LAYOUT)):
        drv.check("cuFuncGetParamInfo", f, i, byref(offset), byref(size))
        layout.append((offset.value, size.value))
    assert layout == SAMPLE_LAYOUT
    assert (
        drv.cuFuncGetParamInfo(f, len(SAMPLE_LAYOUT), byref(offset), byref(size))
        == CUDA_ERROR_INVALID_VALUE
    )
    name = c_char_p()
    drv.check("cuFuncGetName", byref(name), f)
    assert name.value == b"params_kernel"
    drv.check("cuModuleUnload", m)


def test_unknown_function_and_global(drv, ctx):
    m = load(drv, SAMPLE_PTX)
    f = c_void_p()
    assert drv.cuModuleGetFunction(byref(f), m, b"no_such_kernel") == CUDA_ERROR_NOT_FOUND
    g = c_uint64()
    assert drv.cuModuleGetGlobal(byref(g), None, m, b"no_such_global") == CUDA_ERROR_NOT_FOUND
    drv.check("cuModuleUnload", m)


def test_module_globals(drv, ctx):
    m = load(drv, SAMPLE_PTX)
    g, size = c_uint64(), c_size_t()
    drv.check("cuModuleGetGlobal", byref(g), byref(size), m, b"counter")
    assert size.value == 4
    assert to_host(drv, g.value, 4) == (7).to_bytes(4, "little")
    drv.check("cuModuleGetGlobal", byref(g), byref(size), m, b"coeffs")
    assert size.value == 16
    values = (c_float * 4)()
    drv.check("cuMemcpyDtoH", values, g.value, 16)
    assert list(values) == [1.0, 2.0, 3.0, 4.5]
    drv.check("cuModuleGetGlobal", byref(g), byref(size), m, b"table")
    assert size.value == 24
    drv.check("cuMemcpyHtoD", g.value, b"x" * 24, 24)
    assert drv.cuMemcpyHtoD(g.value, b"x" * 25, 25) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuModuleUnload", m)


def test_function_attributes(drv, ctx):
    m = load(drv, SAMPLE_PTX)
    value = c_int()

    def attribute(name, attr):
        drv.check("cuFuncGetAttribute", byref(value), attr, function(drv, m, name))
        return value.value

    assert attribute(b"bounded", 0) == 128  # MAX_THREADS_PER_BLOCK from .maxntid
    assert attribute(b"empty", 0) == 1024
    assert attribute(b"with_shared", 1) == 1024  # SHARED_SIZE_BYTES
    assert attribute(b"empty", 1) == 0
    assert attribute(b"empty", 4) > 0  # NUM_REGS
    assert attribute(b"empty", 2) == 16  # CONST_SIZE_BYTES: the module's __constant__ data
    assert attribute(b"empty", 5) == 90  # PTX_VERSION: the virtual architecture (.target)
    assert attribute(b"empty", 6) == 90  # BINARY_VERSION
    assert attribute(b"empty", 8) == 49152  # MAX_DYNAMIC_SHARED_SIZE_BYTES
    f = function(drv, m, b"empty")
    assert drv.cuFuncGetAttribute(byref(value), 99, f) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuFuncSetAttribute", f, 8, 100000)
    assert attribute(b"empty", 8) == 100000
    assert drv.cuFuncSetAttribute(f, 8, 300000) == CUDA_ERROR_INVALID_VALUE
    drv.check("cuFuncSetCacheConfig", f, 1)
    drv.check("cuModuleUnload", m)


def test_fake_function_registers(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    m = load(fake_drv, SAMPLE_PTX)
    value = c_int()
    fake_drv.check("cuFuncGetAttribute", byref(value), 4, function(fake_drv, m, b"empty"))
    assert value.value == 16


def test_invalid_images(drv, ctx):
    m = c_void_p()
    assert drv.cuModuleLoadData(byref(m), b"this is not a module\0") == fc.CUDA_ERROR_INVALID_IMAGE
    log = ctypes.create_string_buffer(4096)
    options = (c_int * 2)(fc.CU_JIT_ERROR_LOG_BUFFER, fc.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
    values = (c_void_p * 2)(ctypes.addressof(log), 4096)
    broken = SAMPLE_PTX.replace(b"ret;", b"this is not an instruction;", 1)
    result = drv.cuModuleLoadDataEx(byref(m), broken, 2, options, values)
    assert result == fc.CUDA_ERROR_INVALID_PTX
    assert b"error" in log.value
    assert 0 < values[1] < 4096  # the log's length is written back


def test_ptx_for_a_newer_gpu_is_refused(drv, ctx):
    m = c_void_p()
    newer = SAMPLE_PTX.replace(b".target sm_90", b".target sm_100")
    assert drv.cuModuleLoadData(byref(m), newer) == fc.CUDA_ERROR_INVALID_PTX


def test_module_from_file(drv, ctx, tmp_path):
    path = tmp_path / "sample.ptx"
    path.write_bytes(SAMPLE_PTX)
    m = c_void_p()
    drv.check("cuModuleLoad", byref(m), str(path).encode())
    function(drv, m, b"empty")
    drv.check("cuModuleUnload", m)
    missing = str(tmp_path / "missing.ptx").encode()
    assert drv.cuModuleLoad(byref(m), missing) == fc.CUDA_ERROR_FILE_NOT_FOUND


def test_unloaded_module_handles_are_invalid(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    m = load(fake_drv, SAMPLE_PTX)
    f = function(fake_drv, m, b"empty")
    fake_drv.check("cuModuleUnload", m)
    value = c_int()
    assert fake_drv.cuFuncGetAttribute(byref(value), 0, f) == CUDA_ERROR_INVALID_HANDLE
    assert fake_drv.cuModuleUnload(m) == CUDA_ERROR_INVALID_HANDLE
    assert len(fake_drv.take_undefined_behaviour()) == 2


def test_linker(drv, ctx):
    log = ctypes.create_string_buffer(4096)
    options = (c_int * 2)(fc.CU_JIT_ERROR_LOG_BUFFER, fc.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
    values = (c_void_p * 2)(ctypes.addressof(log), 4096)
    link = c_void_p()
    drv.check("cuLinkCreate", 2, options, values, byref(link))
    drv.check(
        "cuLinkAddData",
        link,
        fc.CU_JIT_INPUT_PTX,
        SAMPLE_PTX,
        len(SAMPLE_PTX),
        b"a.ptx",
        0,
        None,
        None,
    )
    drv.check(
        "cuLinkAddData",
        link,
        fc.CU_JIT_INPUT_PTX,
        SECOND_PTX,
        len(SECOND_PTX),
        b"b.ptx",
        0,
        None,
        None,
    )
    image, size = c_void_p(), c_size_t()
    drv.check("cuLinkComplete", link, byref(image), byref(size))
    assert size.value > 0
    m = c_void_p()
    drv.check("cuModuleLoadData", byref(m), image)
    f = function(drv, m, b"second_kernel")
    offset, psize = c_size_t(), c_size_t()
    drv.check("cuFuncGetParamInfo", f, 0, byref(offset), byref(psize))
    assert (offset.value, psize.value) == (0, 4)
    function(drv, m, b"params_kernel")
    drv.check("cuLinkDestroy", link)
    drv.check("cuModuleUnload", m)


def test_empty_link(drv, ctx):
    link = c_void_p()
    drv.check("cuLinkCreate", 0, None, None, byref(link))
    image, size = c_void_p(), c_size_t()
    drv.check("cuLinkComplete", link, byref(image), byref(size))
    drv.check("cuLinkDestroy", link)


def test_linker_rejects_bad_ptx(drv, ctx):
    link = c_void_p()
    drv.check("cuLinkCreate", 0, None, None, byref(link))
    bad = b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { nonsense; }\n"
    assert (
        drv.cuLinkAddData(link, fc.CU_JIT_INPUT_PTX, bad, len(bad), b"bad.ptx", 0, None, None)
        == fc.CUDA_ERROR_INVALID_PTX
    )
    drv.check("cuLinkDestroy", link)


# Launches -------------------------------------------------------------------------------------


def params_kernel_buffer() -> bytes:
    buf = bytearray(58)
    buf[0:8] = (0x1122334455667788).to_bytes(8, "little")
    buf[8:12] = (42).to_bytes(4, "little")
    buf[16:40] = bytes(range(24))
    buf[40] = 0x7F
    buf[48:56] = bytes.fromhex("000000000000f03f")  # 1.0
    buf[56:58] = (513).to_bytes(2, "little")
    return bytes(buf)


def launch(
    d,
    f,
    grid=(1, 1, 1),
    block=(1, 1, 1),
    shared=0,
    stream=None,
    kernel_params=None,
    buffer: bytes | None = None,
) -> int:
    extra = None
    if buffer is not None:
        raw = ctypes.create_string_buffer(buffer, len(buffer))
        size = c_size_t(len(buffer))
        extra = (c_void_p * 5)(
            fc.CU_LAUNCH_PARAM_BUFFER_POINTER,
            ctypes.addressof(raw),
            fc.CU_LAUNCH_PARAM_BUFFER_SIZE,
            ctypes.addressof(size),
            fc.CU_LAUNCH_PARAM_END,
        )
    return d.cuLaunchKernel(f, *grid, *block, shared, stream, kernel_params, extra)


def test_launch_checks_like_the_driver(drv, ctx):
    m = load(drv, SAMPLE_PTX)
    empty = function(drv, m, b"empty")
    bounded = function(drv, m, b"bounded")
    assert launch(drv, empty, (4, 2, 1), (256, 4, 1)) == CUDA_SUCCESS
    assert launch(drv, empty, block=(1025, 1, 1)) == CUDA_ERROR_INVALID_VALUE
    assert launch(drv, empty, block=(1, 1, 65)) == CUDA_ERROR_INVALID_VALUE
    assert launch(drv, empty, block=(64, 32, 1)) == CUDA_ERROR_INVALID_VALUE  # 2048 threads
    assert launch(drv, empty, grid=(1, 65536, 1)) == CUDA_ERROR_INVALID_VALUE
    assert launch(drv, empty, grid=(0, 1, 1)) == CUDA_ERROR_INVALID_VALUE
    assert launch(drv, empty, shared=49153) == CUDA_ERROR_INVALID_VALUE
    assert launch(drv, empty, shared=49152) == CUDA_SUCCESS
    drv.check("cuFuncSetAttribute", empty, 8, 100000)
    assert launch(drv, empty, shared=100000) == CUDA_SUCCESS
    assert launch(drv, bounded, block=(128, 1, 1)) == CUDA_SUCCESS
    drv.check("cuCtxSynchronize", None)
    drv.check("cuModuleUnload", m)


def test_launch_parameters(drv, ctx):
    m = load(drv, SAMPLE_PTX)
    f = function(drv, m, b"params_kernel")
    buffer = params_kernel_buffer()
    assert launch(drv, f, buffer=buffer) == CUDA_SUCCESS
    values = [ctypes.create_string_buffer(buffer[o : o + s], s) for o, s in SAMPLE_LAYOUT]
    pointers = (c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    assert launch(drv, f, kernel_params=pointers) == CUDA_SUCCESS
    raw = ctypes.create_string_buffer(buffer, len(buffer))
    size = c_size_t(len(buffer))
    extra = (c_void_p * 5)(
        fc.CU_LAUNCH_PARAM_BUFFER_POINTER,
        ctypes.addressof(raw),
        fc.CU_LAUNCH_PARAM_BUFFER_SIZE,
        ctypes.addressof(size),
        fc.CU_LAUNCH_PARAM_END,
    )
    both = drv.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, None, pointers, extra)
    assert both == CUDA_ERROR_INVALID_VALUE
    assert launch(drv, f, buffer=buffer[:40]) == CUDA_SUCCESS  # the rest is left undefined
    assert launch(drv, f, buffer=buffer + bytes(6)) == fc.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    assert launch(drv, f, buffer=b"") == CUDA_ERROR_INVALID_VALUE
    assert launch(drv, f) == CUDA_ERROR_INVALID_VALUE  # parameters missing
    drv.check("cuCtxSynchronize", None)
    drv.check("cuModuleUnload", m)


def test_launches_are_recorded(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    m = load(fake_drv, SAMPLE_PTX)
    f = function(fake_drv, m, b"params_kernel")
    stream = c_void_p()
    fake_drv.check("cuStreamCreate", byref(stream), 0)
    assert fake_drv.launch_count() == 0 and fake_drv.last_launch() is None
    buffer = params_kernel_buffer()
    assert launch(fake_drv, f, (3, 2, 1), (32, 4, 2), 128, stream, buffer=buffer) == CUDA_SUCCESS
    rec = fake_drv.last_launch()
    assert rec == fc.Launch("params_kernel", (3, 2, 1), (32, 4, 2), 128, stream.value, buffer)
    values = [ctypes.create_string_buffer(buffer[o : o + s], s) for o, s in SAMPLE_LAYOUT]
    pointers = (c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    assert launch(fake_drv, f, kernel_params=pointers) == CUDA_SUCCESS
    rec = fake_drv.last_launch()
    # From kernelParams the buffer is laid out by the kernel's parameter layout (padding zero).
    expected = bytearray(58)
    for o, s in SAMPLE_LAYOUT:
        expected[o : o + s] = buffer[o : o + s]
    assert rec.params == bytes(expected)
    assert fake_drv.launch(1).grid == (3, 2, 1)
    assert fake_drv.launch_count() == 2
    assert launch(fake_drv, f, block=(2048, 1, 1), buffer=buffer) == CUDA_ERROR_INVALID_VALUE
    assert fake_drv.launch_count() == 2  # failed launches are not recorded
    assert fake_drv.launch(2) is None
    assert launch(fake_drv, f, buffer=buffer[:40]) == CUDA_SUCCESS
    assert fake_drv.last_launch().params == buffer[:40] + bytes(18)  # padded to the layout
    fake_drv.clear_launches()
    assert fake_drv.launch_count() == 0


def test_launch_needs_the_functions_context(fake_drv):
    a, b = c_void_p(), c_void_p()
    fake_drv.check("cuCtxCreate", byref(a), None, 0, 0)
    m = load(fake_drv, SAMPLE_PTX)
    f = function(fake_drv, m, b"empty")
    fake_drv.check("cuCtxCreate", byref(b), None, 0, 0)
    assert launch(fake_drv, f) == CUDA_ERROR_INVALID_HANDLE


def test_occupancy(drv, ctx):
    m = load(drv, SAMPLE_PTX)
    f = function(drv, m, b"empty")
    blocks = c_int()
    drv.check("cuOccupancyMaxActiveBlocksPerMultiprocessor", byref(blocks), f, 256, 0)
    assert blocks.value == 8  # 2048 threads per SM
    drv.check("cuOccupancyMaxActiveBlocksPerMultiprocessor", byref(blocks), f, 32, 0)
    assert blocks.value == 32  # at most 32 blocks per SM
    drv.check("cuOccupancyMaxActiveBlocksPerMultiprocessor", byref(blocks), f, 1024, 200000)
    assert blocks.value == 0  # more dynamic shared memory than the function may use
    drv.check("cuFuncSetAttribute", f, 8, 200000)  # MAX_DYNAMIC_SHARED_SIZE_BYTES
    drv.check("cuOccupancyMaxActiveBlocksPerMultiprocessor", byref(blocks), f, 1024, 200000)
    assert blocks.value == 1
    min_grid, block = c_int(), c_int()
    drv.check("cuOccupancyMaxPotentialBlockSize", byref(min_grid), byref(block), f, None, 0, 0)
    sms = device_attribute(drv, MULTIPROCESSOR_COUNT)
    assert block.value * (min_grid.value // sms) == 2048
    bounded = function(drv, m, b"bounded")
    drv.check(
        "cuOccupancyMaxPotentialBlockSize", byref(min_grid), byref(block), bounded, None, 0, 0
    )
    assert block.value == 128
    drv.check("cuModuleUnload", m)
