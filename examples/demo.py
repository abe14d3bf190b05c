"""cuplug demo: with a GPU, show the device, copy memory there and back, compile PyCUDA's
double_array kernel, launch and time it; without one, show what works anyway (backends,
plugins, compiling to PTX with NVRTC) and what running needs. Exits 0 in both cases.

Run it with `bash tools/demo.sh` (builds cuplug first when needed).
"""
# example-test: without-gpu, real-gpu

import sys
import time

import numpy as np

import cuplug

KERNEL = """
__global__ void double_array(float *a, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) {
        a[idx] = a[idx] * 2.0f;
    }
}
"""


def check(ok, problem):
    if not ok:
        raise SystemExit(f"demo: {problem}")


def heading(title):
    print(f"\n== {title}")


def show_backends():
    heading(f"cuplug {cuplug.__version__}: backends in use (and why)")
    print(cuplug.config)
    heading("plugins")
    for c in cuplug.plugins.diagnostics():
        print(f"  {c.state:<9} {c.kind or '?':<9} {c.name or '?':<8} {c.path}")
        if c.reason:
            print(f"            {c.reason}")


def why_no_gpu():
    """None when a GPU is usable, else the reason."""
    if cuplug.is_available():
        return None
    try:
        cuplug.driver.init()  # raises the error that says why: no driver library, no device
    except cuplug.driver.Error as e:
        return str(e)
    return "the driver reports no CUDA device"


def run_on_gpu():
    import cuplug.driver as cuda
    from cuplug.compiler import SourceModule

    device = cuda.Device(0)
    # The device's primary context, the one CuPy, PyTorch and the runtime API share (what
    # cuplug.autoprimaryctx makes current), rather than a private one only this script could use.
    context = device.retain_primary_context()
    context.push()
    try:
        major, minor = device.compute_capability()
        free, total = cuda.mem_get_info()
        heading("device")
        print(
            f"  {device.name()}, compute capability {major}.{minor}, "
            f"{total / 2**30:.1f} GiB ({free / 2**30:.1f} GiB free), "
            f"{device.multiprocessor_count} multiprocessors"
        )

        n = 1 << 24
        a = np.random.default_rng(0).random(n, dtype=np.float32)
        heading(f"copy {a.nbytes >> 20} MiB there and back")
        a_gpu = cuda.mem_alloc(a.nbytes)
        t0 = time.perf_counter()
        cuda.memcpy_htod(a_gpu, a)
        t1 = time.perf_counter()
        back = np.empty_like(a)
        cuda.memcpy_dtoh(back, a_gpu)
        t2 = time.perf_counter()
        check(np.array_equal(back, a), "the round trip changed the data")
        print(
            f"  host to device {a.nbytes / (t1 - t0) / 1e9:.1f} GB/s, device to host "
            f"{a.nbytes / (t2 - t1) / 1e9:.1f} GB/s (pageable memory), data intact"
        )

        heading(f"compile double_array with the '{cuplug.config.compiler.name}' compiler")
        t0 = time.perf_counter()
        module = SourceModule(KERNEL)
        print(f"  compiled and loaded in {(time.perf_counter() - t0) * 1e3:.1f} ms")
        double_array = module.get_function("double_array")

        block = 256
        grid = (n + block - 1) // block
        double_array(a_gpu, np.int32(n), block=(block, 1, 1), grid=(grid, 1))  # warm-up
        start, end = cuda.Event(), cuda.Event()
        start.record()
        double_array(a_gpu, np.int32(n), block=(block, 1, 1), grid=(grid, 1))
        end.record()
        end.synchronize()
        ms = start.time_till(end)
        cuda.memcpy_dtoh(back, a_gpu)
        check(np.allclose(back, a * 4), "double_array gave wrong results")
        heading("launch")
        print(
            f"  double_array over {n} floats: {ms * 1e3:.1f} us, "
            f"{2 * a.nbytes / (ms * 1e-3) / 1e9:.0f} GB/s; results checked"
        )
    finally:
        context.pop()


def run_without_gpu(reason):
    heading("no GPU here")
    print(f"  {reason}")
    from cuplug.compiler import CompileError, compile

    arch = "compute_90"
    heading(f"compile double_array to PTX for {arch} with NVRTC (no GPU needed)")
    try:
        ptx = compile(KERNEL, arch=arch, target="ptx", backend="nvrtc")
    except (CompileError, cuplug.config.ConfigError) as e:
        print(f"  NVRTC is not usable here either: {e}")
    else:
        text = ptx.decode() if isinstance(ptx, bytes) else ptx
        lines = [line for line in text.splitlines() if line.startswith((".version", ".target"))]
        print(f"  {len(ptx)} bytes of PTX ({', '.join(lines)}), entry double_array")
    heading("what a GPU would add")
    print(
        "  Running the kernel needs an NVIDIA GPU and its driver (libcuda.so.1, or set\n"
        "  CUPLUG_CUDA_DRIVER). There this demo copies memory, launches double_array and\n"
        "  times it. `python -m cuplug info` shows what cuplug finds on a machine."
    )


def main():
    show_backends()
    reason = why_no_gpu()
    if reason is None:
        run_on_gpu()
    else:
        run_without_gpu(reason)
    return 0


if __name__ == "__main__":
    sys.exit(main())
