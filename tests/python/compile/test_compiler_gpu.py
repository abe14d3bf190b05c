"""cuplug.compiler on a real GPU: the seed's kernel gives the same results whichever backend
compiled it (chosen by API, environment or config file), constant-memory globals, templates and
dynamic parallelism run. The compile-only tests are test_compiler.py's."""

import numpy as np
import pytest
from test_compiler import BACKENDS, DOUBLE_ARRAY, TEMPLATES, run_python, usable_or_skip

import cuplug.driver as drv
from cuplug import compiler

pytestmark = pytest.mark.real_gpu


SEED_RUN = (
    "import numpy as np\n"
    "import cuplug.autoinit\n"
    "import cuplug.driver as cuda\n"
    "from cuplug.compiler import SourceModule\n"
    "src = '''" + DOUBLE_ARRAY + "'''\n"
    "a = np.arange(1000, dtype=np.float32) * 0.5\n"
    "mod = SourceModule(src)\n"
    "f = mod.get_function('double_array')\n"
    "f(cuda.InOut(a), np.int32(a.size), block=(256, 1, 1), grid=(4, 1))\n"
    "print(mod.backend, a.tobytes().hex())\n"
)


def double_on_gpu(backend):
    a = np.arange(1000, dtype=np.float32) * 0.5
    mod = compiler.SourceModule(DOUBLE_ARRAY, backend=backend)
    f = mod.get_function("double_array")
    block = 256
    f(drv.InOut(a), np.int32(a.size), block=(block, 1, 1), grid=((a.size + block - 1) // block, 1))
    return mod.backend, a


def test_seed_double_array_gives_identical_results_on_every_backend(ctx, tmp_path):
    usable_or_skip("nvcc")
    expected = np.arange(1000, dtype=np.float32)
    results = {}
    for backend in BACKENDS:  # chosen through the API
        name, a = double_on_gpu(backend)
        assert name == backend
        results["api-" + backend] = a
    for backend in BACKENDS:  # through the environment
        out = run_python(SEED_RUN, CUPLUG_COMPILER=backend, CUPLUG_CONFIG="")
        name, data = out.stdout.split()
        assert name == backend, out.stderr
        results["env-" + backend] = np.frombuffer(bytes.fromhex(data), np.float32)
    config = tmp_path / "cuplug.toml"
    config.write_text('[backends]\ncompiler = "nvcc"\n')
    out = run_python(SEED_RUN, CUPLUG_COMPILER=None, CUPLUG_CONFIG=str(config))
    name, data = out.stdout.split()
    assert name == "nvcc", out.stderr
    results["config-nvcc"] = np.frombuffer(bytes.fromhex(data), np.float32)
    for how, a in results.items():
        assert np.array_equal(a, expected), how


@pytest.mark.parametrize("backend", BACKENDS)
def test_get_global_on_constant_memory(ctx, backend):
    usable_or_skip(backend)
    mod = compiler.SourceModule(
        """
        __constant__ float coeffs[4];
        __global__ void apply(float *out) { out[threadIdx.x] = coeffs[threadIdx.x] * 10.0f; }
        """,
        backend=backend,
        cache_dir=False,
    )
    ptr, size = mod.get_global("coeffs")
    assert size == 16
    drv.memcpy_htod(ptr, np.array([1, 2, 3, 4], np.float32))
    out = np.zeros(4, np.float32)
    mod.get_function("apply")(drv.Out(out), block=(4, 1, 1), grid=(1, 1))
    assert np.array_equal(out, [10, 20, 30, 40])


@pytest.mark.parametrize("backend", BACKENDS)
def test_templates_run(ctx, backend):
    usable_or_skip(backend)
    mod = compiler.SourceModule(
        TEMPLATES,
        no_extern_c=True,
        backend=backend,
        name_expressions=["scale<float>", "scale<double>"],
    )
    f32 = np.arange(100, dtype=np.float32)
    f64 = np.arange(100, dtype=np.float64)
    mod.get_function("scale<float>")(
        drv.InOut(f32), np.float32(3), np.int32(100), block=(128, 1, 1), grid=(1, 1)
    )
    mod.get_function("scale<double>")(
        drv.InOut(f64), np.float64(0.5), np.int32(100), block=(128, 1, 1), grid=(1, 1)
    )
    assert np.array_equal(f32, np.arange(100, dtype=np.float32) * 3)
    assert np.array_equal(f64, np.arange(100, dtype=np.float64) * 0.5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_parallelism(ctx, backend):
    usable_or_skip(backend)
    mod = compiler.DynamicSourceModule(
        """
        __global__ void child(int *out, int base) { out[base + threadIdx.x] = base + threadIdx.x; }
        __global__ void parent(int *out) {
          child<<<1, 32>>>(out, 32 * threadIdx.x);
        }
        """,
        backend=backend,
    )
    out = np.zeros(128, np.int32)
    mod.get_function("parent")(drv.Out(out), block=(4, 1, 1), grid=(1, 1))
    assert np.array_equal(out, np.arange(128, dtype=np.int32))
