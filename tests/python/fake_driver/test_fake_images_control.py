"""The fake CUDA driver through ctypes, without cuplug: binary images (cubin/fatbin), control API.

Behaviour tests run against the fake and, where one is usable, the real driver too (`drv` is
parametrized); tests of fake-only conventions use `fake_drv`.
"""

from __future__ import annotations

from support.fake_driver import *  # noqa: F401,F403

# Binary images (need the CUDA toolkit's ptxas / nvcc) ------------------------------------------

TOOLKIT_BIN = pathlib.Path("/usr/local/cuda/bin")


def tool(name: str) -> str:
    bundled = TOOLKIT_BIN / name
    path = shutil.which(name) or (str(bundled) if bundled.exists() else None)
    if path is None:
        pytest.skip(f"{name} is not installed")
    return path


@pytest.fixture(scope="module")
def sample_cubin(tmp_path_factory) -> bytes:
    work = tmp_path_factory.mktemp("cubin")
    (work / "sample.ptx").write_bytes(SAMPLE_PTX)
    subprocess.run(
        [tool("ptxas"), "-arch=sm_90", "-o", str(work / "sample.cubin"), str(work / "sample.ptx")],
        check=True,
    )
    return (work / "sample.cubin").read_bytes()


CUDA_SOURCE = r"""
struct S { double a; char b; };
__constant__ float coeffs[4] = {1.0f, 2.0f, 3.0f, 4.5f};
__device__ int counter = 7;
extern "C" __global__ void __launch_bounds__(128) add(float *x, const float *y, int n, S s, char c,
                                                      double d) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = y[i];
  __syncthreads();
  if (i < n) x[i] += tile[threadIdx.x ^ 1] * coeffs[i % 4] + s.a + c + d + counter;
}
"""
ADD_LAYOUT = [(0, 8), (8, 8), (16, 4), (24, 16), (40, 1), (48, 8)]


@pytest.fixture(scope="module")
def nvcc_images(tmp_path_factory) -> dict[str, bytes]:
    work = tmp_path_factory.mktemp("nvcc")
    (work / "k.cu").write_text(CUDA_SOURCE)
    images = {}
    for kind, flags in (("ptx", ["-ptx"]), ("cubin", ["-cubin"]), ("fatbin", ["-fatbin"])):
        out = work / f"k.{kind}"
        subprocess.run(
            [tool("nvcc"), "-arch=sm_90", *flags, "-o", str(out), str(work / "k.cu")], check=True
        )
        images[kind] = out.read_bytes() + (b"\0" if kind == "ptx" else b"")
    return images


def describe_module(d, image: bytes, kernel: bytes, layout_len: int):
    m = load(d, image)
    f = function(d, m, kernel)
    layout = []
    offset, size = c_size_t(), c_size_t()
    for i in range(layout_len):
        d.check("cuFuncGetParamInfo", f, i, byref(offset), byref(size))
        layout.append((offset.value, size.value))
    attrs = []
    value = c_int()
    for attribute in (0, 1):  # MAX_THREADS_PER_BLOCK, SHARED_SIZE_BYTES
        d.check("cuFuncGetAttribute", byref(value), attribute, f)
        attrs.append(value.value)
    d.check("cuModuleUnload", m)
    return layout, attrs


def test_cubin_from_ptxas_matches_the_ptx(drv, ctx, sample_cubin):
    assert describe_module(drv, sample_cubin, b"params_kernel", 6)[0] == SAMPLE_LAYOUT
    assert describe_module(drv, sample_cubin, b"bounded", 0)[1] == [128, 0]
    assert describe_module(drv, sample_cubin, b"with_shared", 0)[1] == [1024, 1024]
    m = load(drv, sample_cubin)
    g, size = c_uint64(), c_size_t()
    drv.check("cuModuleGetGlobal", byref(g), byref(size), m, b"counter")
    assert to_host(drv, g.value, 4) == (7).to_bytes(4, "little")
    drv.check("cuModuleUnload", m)


@pytest.mark.parametrize("kind", ["ptx", "cubin", "fatbin"])
def test_nvcc_images(drv, ctx, nvcc_images, kind):
    layout, attrs = describe_module(drv, nvcc_images[kind], b"add", 6)
    assert layout == ADD_LAYOUT
    assert attrs == [128, 1024]
    m = load(drv, nvcc_images[kind])
    g, size = c_uint64(), c_size_t()
    drv.check("cuModuleGetGlobal", byref(g), byref(size), m, b"coeffs")
    values = (c_float * 4)()
    drv.check("cuMemcpyDtoH", values, g.value, 16)
    assert (size.value, list(values)) == (16, [1.0, 2.0, 3.0, 4.5])
    drv.check("cuModuleUnload", m)


def test_cubin_for_another_gpu_is_refused(fake_drv, tmp_path):
    (tmp_path / "s.ptx").write_bytes(SAMPLE_PTX.replace(b"sm_90", b"sm_80"))
    subprocess.run(
        [tool("ptxas"), "-arch=sm_80", "-o", str(tmp_path / "s.cubin"), str(tmp_path / "s.ptx")],
        check=True,
    )
    c, m = c_void_p(), c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    image = (tmp_path / "s.cubin").read_bytes()
    assert fake_drv.cuModuleLoadData(byref(m), image) == fc.CUDA_ERROR_NO_BINARY_FOR_GPU


# Control API ----------------------------------------------------------------------------------


def test_fault_injection(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    fake_drv.fail_next("cuMemAlloc", fc.CUDA_ERROR_OUT_OF_MEMORY, 2)
    p = c_uint64()
    assert fake_drv.cuMemAlloc(byref(p), 16) == fc.CUDA_ERROR_OUT_OF_MEMORY
    assert fake_drv.cuMemAlloc(byref(p), 16) == fc.CUDA_ERROR_OUT_OF_MEMORY
    assert fake_drv.live_allocations() == 0  # a failed call has no effect
    assert fake_drv.cuMemAlloc(byref(p), 16) == CUDA_SUCCESS
    fake_drv.fail_next("cuCtxSynchronize", fc.CUDA_ERROR_UNKNOWN)
    fake_drv.fail_next("cuCtxSynchronize", 719, 0)  # count 0 removes it again
    assert fake_drv.cuCtxSynchronize(None) == CUDA_SUCCESS
    fake_drv.fail_next("cuInit", fc.CUDA_ERROR_NO_DEVICE)
    assert fake_drv.cuInit(0) == fc.CUDA_ERROR_NO_DEVICE
    fake_drv.fail_next("cuStreamQuery", fc.CUDA_ERROR_NOT_READY, 5)
    fake_drv.clear_faults()
    assert fake_drv.cuStreamQuery(None) == CUDA_SUCCESS
    with pytest.raises(ValueError, match="cuNoSuchCall"):
        fake_drv.fail_next("cuNoSuchCall", 1)


def test_live_allocations_and_bytes_in_use(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    assert fake_drv.live_allocations() == 0
    p = alloc(fake_drv, 1000)
    managed = c_uint64()
    fake_drv.check("cuMemAllocManaged", byref(managed), 64, 1)
    host = c_void_p()
    fake_drv.check("cuMemHostAlloc", byref(host), 64, 0)
    assert fake_drv.live_allocations() == 2
    assert fake_drv.live_host_allocations() == 1
    assert fake_drv.device_bytes_in_use(0) == 1024  # rounded to the allocation granularity
    assert fake_drv.device_bytes_in_use(1) == 0
    fake_drv.check("cuMemFree", p)
    fake_drv.check("cuMemFree", managed)
    fake_drv.check("cuMemFreeHost", host)
    assert fake_drv.live_allocations() == fake_drv.live_host_allocations() == 0


def test_destroying_a_context_frees_its_resources(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    alloc(fake_drv, 4096)
    host = c_void_p()
    fake_drv.check("cuMemHostAlloc", byref(host), 64, 0)
    s = c_void_p()
    fake_drv.check("cuStreamCreate", byref(s), 0)
    fake_drv.check("cuCtxDestroy", c)
    assert fake_drv.live_allocations() == fake_drv.live_host_allocations() == 0
    assert fake_drv.device_bytes_in_use(0) == 0
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    assert fake_drv.cuStreamQuery(s) == CUDA_ERROR_INVALID_HANDLE  # destroyed with its context
    assert len(fake_drv.take_undefined_behaviour()) == 1


def test_context_stack_depth_and_reset(fake_drv):
    assert fake_drv.context_stack_depth() == 0
    a, b = c_void_p(), c_void_p()
    fake_drv.check("cuCtxCreate", byref(a), None, 0, 0)
    fake_drv.check("cuDevicePrimaryCtxRetain", byref(b), 1)
    fake_drv.check("cuCtxPushCurrent", b)
    assert fake_drv.context_stack_depth() == 2
    assert in_fresh_thread(fake_drv.context_stack_depth) == 0
    assert fake_drv.context_alive(a.value) and fake_drv.context_alive(b.value)
    fake_drv.check("cuCtxPopCurrent", None)
    fake_drv.check("cuDevicePrimaryCtxRelease", 1)
    assert not fake_drv.context_alive(b.value)  # released primary context
    fake_drv.check("cuDevicePrimaryCtxRetain", byref(b), 1)
    fake_drv.check("cuCtxPushCurrent", b)
    alloc(fake_drv, 64)
    fake_drv.reset()
    assert fake_drv.context_stack_depth() == 0
    assert fake_drv.live_allocations() == 0
    assert not fake_drv.context_alive(a.value)
    assert fake_drv.cuCtxPushCurrent(a) == fc.CUDA_ERROR_NOT_INITIALIZED
    fake_drv.check("cuInit", 0)
    assert fake_drv.cuCtxPushCurrent(a) == CUDA_ERROR_INVALID_CONTEXT
    assert len(fake_drv.take_undefined_behaviour()) == 1


def test_device_pointers_are_not_host_addresses(fake_drv):
    """Device memory lives at addresses the host cannot touch, as on a GPU: passing one where a
    host buffer belongs is an error, not silent success."""
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    p = alloc(fake_drv, 64)
    q = alloc(fake_drv, 64)
    assert fake_drv.cuMemcpyHtoD(q, p, 64) == CUDA_ERROR_INVALID_VALUE
    assert fake_drv.cuMemcpyDtoH(p, q, 64) == CUDA_ERROR_INVALID_VALUE
    reports = fake_drv.take_undefined_behaviour()
    assert len(reports) == 2 and all("passed as host memory" in r for r in reports)
    fake_drv.check("cuMemFree", p)
    # A freed device address is not mistaken for pageable host memory by unified copies.
    assert fake_drv.cuMemcpy(q, p, 64) == CUDA_ERROR_INVALID_VALUE


def test_threads_share_the_driver(fake_drv):
    c = c_void_p()
    fake_drv.check("cuCtxCreate", byref(c), None, 0, 0)
    errors = []

    def worker():
        try:
            fake_drv.check("cuCtxPushCurrent", c)
            for _ in range(200):
                p = alloc(fake_drv, 4096)
                fake_drv.check("cuMemsetD8", p, 1, 4096)
                fake_drv.check("cuMemFree", p)
            fake_drv.check("cuCtxPopCurrent", None)
        except Exception as e:  # collected for the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert fake_drv.live_allocations() == 0
