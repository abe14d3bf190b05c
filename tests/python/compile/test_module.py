"""Modules: module_from_buffer / module_from_file, JIT options and message handlers, globals,
functions and their lifetime, Linker, texture references (gone in CUDA 12)."""

import ctypes
import gc

import numpy as np
import pytest
from support import fakecuda

import cuplug.driver as drv

pytestmark = pytest.mark.gpu

PTX = """
.version 8.0
.target sm_90
.address_size 64

.visible .global .align 4 .u32 counter = 7;
.visible .global .align 8 .f64 table[4];
.visible .entry scale(.param .u64 data, .param .f32 factor, .param .u32 n) { ret; }
.visible .entry nothing() { ret; }
"""

BROKEN_PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry broken( { ret; }
"""


def test_load_from_bytes_and_str(ctx):
    for image in (PTX.encode(), PTX, bytearray(PTX.encode()), memoryview(PTX.encode())):
        mod = drv.module_from_buffer(image)
        f = mod.get_function("scale")
        assert isinstance(f, drv.Function)
        assert f.param_layout == [(0, 8), (8, 4), (12, 4)]


def test_get_function_makes_new_functions(ctx):
    mod = drv.module_from_buffer(PTX)
    a, b = mod.get_function("scale"), mod.get_function("scale")
    assert a is not b and a.handle == b.handle
    a.arg_format = "Pfi"
    with pytest.raises(AttributeError):
        b.arg_format  # noqa: B018 - prepared state is per Function object, as in PyCUDA
    with pytest.raises(drv.LogicError, match="cuModuleGetFunction failed: named symbol not found"):
        mod.get_function("missing")


def test_get_global(ctx):
    mod = drv.module_from_buffer(PTX)
    ptr, size = mod.get_global("counter")
    assert isinstance(ptr, int) and size == 4
    assert drv.from_device(ptr, (1,), np.uint32)[0] == 7
    ptr, size = mod.get_global("table")
    assert size == 32
    drv.memcpy_htod(ptr, np.arange(4, dtype=np.float64))
    assert np.array_equal(drv.from_device(ptr, (4,), np.float64), np.arange(4))
    with pytest.raises(drv.LogicError, match="cuModuleGetGlobal failed"):
        mod.get_global("missing")


def test_message_handler_on_success(ctx):
    calls = []
    drv.module_from_buffer(PTX, message_handler=lambda *args: calls.append(args))
    assert len(calls) == 1
    success, info, error = calls[0]
    assert success is True and isinstance(info, str) and error == ""


def test_jit_error_reaches_handler_and_exception(ctx):
    calls = []
    with pytest.raises(drv.LogicError) as raised:
        drv.module_from_buffer(BROKEN_PTX, message_handler=lambda *args: calls.append(args))
    assert "cuModuleLoadDataEx failed" in str(raised.value)
    assert len(calls) == 1
    success, _, error = calls[0]
    assert success is False and error and error in str(raised.value)


def test_jit_options(ctx):
    mod = drv.module_from_buffer(
        PTX, options=[(drv.jit_option.MAX_REGISTERS, 32), (drv.jit_option.OPTIMIZATION_LEVEL, 2)]
    )
    assert mod.get_function("nothing").num_params == 0
    with pytest.raises(ValueError, match="message_handler"):
        drv.module_from_buffer(PTX, options=[(drv.jit_option.INFO_LOG_BUFFER, 0)])
    with pytest.raises(TypeError, match=r"\(jit_option, value\) pairs"):
        drv.module_from_buffer(PTX, options=[drv.jit_option.MAX_REGISTERS])
    with pytest.raises(TypeError, match="jit_option must be an int-like enum"):
        drv.module_from_buffer(PTX, options=[("MAX_REGISTERS", 32)])


def test_bad_images(ctx):
    with pytest.raises(ValueError, match="empty"):
        drv.module_from_buffer(b"")
    with pytest.raises(TypeError, match="module image must be bytes"):
        drv.module_from_buffer(12345)
    with pytest.raises(drv.LogicError, match="cuModuleLoadDataEx failed"):
        drv.module_from_buffer(b"not a module")


def test_no_context_is_an_error(driver_mode):
    drv.init()
    if drv.Context.get_current() is not None:
        pytest.skip("a context is current in this thread")
    with pytest.raises(drv.LogicError, match="no currently active context"):
        drv.module_from_buffer(PTX)


def test_module_from_file(ctx, tmp_path):
    path = tmp_path / "kernels.ptx"
    path.write_text(PTX)
    mod = drv.module_from_file(str(path))
    assert mod.get_function("scale").num_params == 3
    with pytest.raises(drv.RuntimeError, match="cuModuleLoad failed: file not found"):
        drv.module_from_file(str(tmp_path / "missing.ptx"))


def test_module_unloads_with_its_last_reference(ctx, fake):
    mod = drv.module_from_buffer(PTX)
    handle = ctypes.c_void_p(mod.handle)
    f = mod.get_function("nothing")
    del mod
    gc.collect()
    out = ctypes.c_void_p()
    # The function still holds the module: it is loaded.
    assert fake.cuModuleGetFunction(ctypes.byref(out), handle, b"nothing") == 0
    f(block=(1,))
    del f
    gc.collect()
    assert (
        fake.cuModuleGetFunction(ctypes.byref(out), handle, b"nothing")
        == fakecuda.CUDA_ERROR_INVALID_HANDLE
    )
    # Asking about an unloaded module on purpose: only the fake can answer that safely.
    assert any("was destroyed" in r for r in fake.take_undefined_behaviour())


def test_module_records_its_launcher(ctx):
    mod = drv.module_from_buffer(PTX)
    assert mod.launcher == "driver"
    mod.user_attribute = 1  # SourceModule-like wrappers may store their own
    assert mod.user_attribute == 1


def test_texture_references_are_gone(ctx):
    mod = drv.module_from_buffer(PTX)
    for method in (mod.get_texref, mod.get_surfref):
        with pytest.raises(drv.NotSupportedError, match="removed in CUDA 12"):
            method("tex")


def test_modules_of_a_detached_context_never_reach_the_driver(ctx, fake):
    other = drv.Device(0).make_context()
    mod = drv.module_from_buffer(PTX)
    f = mod.get_function("scale").prepare("Pfi")
    never_asked = mod.get_function("scale")  # has not asked for its parameters yet
    alloc = drv.mem_alloc(16)
    drv.Context.pop()
    other.detach()  # destroys the module and its functions with the context
    gone = "invalid device context - the module's context was detached"
    calls = {
        "module::get_function": lambda: mod.get_function("scale"),
        "module::get_global": lambda: mod.get_global("counter"),
        "module::get_texref": lambda: mod.get_texref("tex"),
        "Function.__call__": lambda: f(alloc, np.float32(1), np.uint32(1), block=(1,)),
        "cuLaunchKernel": lambda: f.prepared_call((1,), (1,), alloc, 1.0, 1),
        "prepared_timed_call": lambda: f.prepared_timed_call((1,), (1,), alloc, 1.0, 1),
        "cuFuncGetAttribute": lambda: f.num_regs,
        "cuFuncSetAttribute": lambda: f.set_attribute(
            drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 0
        ),
        "cuFuncSetCacheConfig": lambda: f.set_cache_config(drv.func_cache.PREFER_L1),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor": (
            lambda: f.max_active_blocks_per_multiprocessor(32)
        ),
        "cuFuncGetParamInfo": lambda: never_asked.param_layout,
    }
    # The launches pass `alloc`, made in the same detached context: the argument check may
    # refuse it first (its memory went with the context), which reaches no driver either.
    dead_memory = "DeviceAllocation failed: context is destroyed - the allocation's context"
    launches = {"Function.__call__", "cuLaunchKernel", "prepared_timed_call"}
    for routine, call in calls.items():
        refused = f"{routine} failed: {gone}"
        if routine in launches:
            refused = f"({refused}|{dead_memory})"
        with pytest.raises(drv.LogicError, match=refused):
            call()
    assert fake.launch_count() == 0
    # The autouse fixture fails the test if any destroyed handle reached the fake driver.


def test_module_calls_work_from_a_thread_without_a_context(ctx, fake):
    import threading

    mod = drv.module_from_buffer(PTX)
    results = {}

    def worker():
        results["current"] = drv.Context.get_current()
        results["global"] = mod.get_global("counter")[1]
        results["params"] = mod.get_function("scale").param_layout
        results["after"] = drv.Context.get_current()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert results == {
        "current": None,
        "global": 4,
        "params": [(0, 8), (8, 4), (12, 4)],
        "after": None,
    }


def test_module_images_holding_objects_are_refused(ctx):
    with pytest.raises(TypeError, match="module image: the buffer holds Python objects"):
        drv.module_from_buffer(np.array([object()] * 8, dtype=object))


# ---- Linker -------------------------------------------------------------------------------------


def test_linker_links_ptx(ctx, tmp_path):
    calls = []
    linker = drv.Linker(message_handler=lambda *args: calls.append(args), log_verbose=True)
    linker.add_data(PTX.encode(), drv.jit_input_type.PTX, "kernels.ptx")
    mod = linker.link_module()
    assert mod.get_function("scale").num_params == 3
    assert calls and calls[-1][0] is True
    path = tmp_path / "k.ptx"
    path.write_text(PTX)
    other = drv.Linker(options={drv.jit_option.MAX_REGISTERS: 64})
    other.add_file(str(path), drv.jit_input_type.PTX)
    assert other.link_module().get_global("counter")[1] == 4


def test_linker_errors_reach_handler(ctx, tmp_path):
    calls = []
    linker = drv.Linker(message_handler=lambda *args: calls.append(args))
    with pytest.raises(drv.Error, match="cuLinkAddData failed"):
        linker.add_data(BROKEN_PTX.encode(), drv.jit_input_type.PTX)
    assert calls and calls[-1][0] is False
    with pytest.raises(drv.Error, match="cuLinkAddFile failed"):
        linker.add_file(str(tmp_path / "missing.ptx"), drv.jit_input_type.PTX)
    linker.close()
    with pytest.raises(drv.LogicError, match="closed"):
        linker.link_module()


def test_a_linker_of_a_detached_context_never_reaches_the_driver(ctx, fake):
    # The context took its link session with it: found when a DynamicModule that was never
    # linked outlived its test's context and cuLinkDestroy reached the dead state at collection.
    other = drv.Device(0).make_context()
    linker = drv.Linker()
    linker.add_data(PTX.encode(), drv.jit_input_type.PTX, "kernels.ptx")
    drv.Context.pop()
    other.detach()
    with pytest.raises(drv.LogicError, match="Linker failed: .*the linker's context was detached"):
        linker.link_module()
    with pytest.raises(drv.LogicError, match="the linker's context was detached"):
        linker.add_data(PTX.encode(), drv.jit_input_type.PTX, "kernels.ptx")
    linker.close()  # nothing to destroy: nothing reaches the driver
    del linker
    # The autouse fixture fails the test if any destroyed handle reached the fake driver.
