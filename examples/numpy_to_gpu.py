"""From NumPy to the GPU and back: a short walkthrough of cuplug.gpuarray for NumPy users.

Each step does something on the GPU, brings the result back and checks it against NumPy doing
the same on the host, so what is printed is also what is verified:

1. copy an array to the GPU and back;
2. arithmetic, with NumPy's dtype rules (int / int gives float64, float32 stays float32);
3. broadcasting a row against a matrix, as NumPy does;
4. views: slices with steps and transposes share memory, and operations on them need no copy;
5. math functions (cuplug.cumath, NumPy's names);
6. your own elementwise kernel, one line of C;
7. back to NumPy with .get() or np.asarray().

Run it: ``PYTHONPATH=build/python python examples/numpy_to_gpu.py`` (needs an NVIDIA GPU).
"""
# example-test: real-gpu

import numpy as np

import cuplug.autoinit  # noqa: F401  (a context on device 0, popped at exit)
from cuplug import cumath, gpuarray
from cuplug.elementwise import ElementwiseKernel


def step(title, on_gpu, expected):
    """Prints a step's result and stops the walkthrough if the GPU disagrees with NumPy."""
    got = on_gpu.get() if hasattr(on_gpu, "get") else np.asarray(on_gpu)
    same = got.dtype == expected.dtype and got.shape == expected.shape
    same = same and np.allclose(got, expected, rtol=1e-6)
    print(
        f"\n== {title}\n{got}\n   dtype {got.dtype}, shape {got.shape}: "
        f"{'same as NumPy' if same else 'DIFFERENT from NumPy'}"
    )
    if not same:
        raise SystemExit(f"numpy_to_gpu: step '{title}' gave\n{got}\nNumPy gives\n{expected}")


host = np.arange(12, dtype=np.float32).reshape(3, 4)

# 1. to_gpu copies to device memory; get() copies back into a new NumPy array.
a = gpuarray.to_gpu(host)
step("1. a = to_gpu(host); a.get()", a, host)

# 2. Operators run as kernels on the GPU; result dtypes follow NumPy.
step("2. a * 2 + 1", a * 2 + 1, host * 2 + 1)
ints = gpuarray.to_gpu(np.arange(6, dtype=np.int32))
step("2. int32 / int32 gives float64", ints / (ints + 1), np.arange(6) / (np.arange(6) + 1))

# 3. Shapes broadcast as in NumPy: (3, 4) + (4,) adds the row to every row.
row_host = np.array([10, 20, 30, 40], dtype=np.float32)
row = gpuarray.to_gpu(row_host)
step("3. a + row (broadcast)", a + row, host + row_host)

# 4. Views share the array's memory; the kernels read them through their strides.
step("4. a[:, ::2] * 10 (a strided view)", a[:, ::2] * 10, host[:, ::2] * 10)
step("4. a.T - a.T[0] (a transpose)", a.T - a.T[0], host.T - host.T[0])

# 5. cumath has NumPy's math functions for every float and complex dtype.
step(
    "5. cumath.sqrt(a) + cumath.sin(a)",
    cumath.sqrt(a) + cumath.sin(a),
    np.sqrt(host) + np.sin(host),
)

# 6. An ElementwiseKernel runs one line of C for every i.
axpb = ElementwiseKernel("float *y, const float *x, float a, float b", "y[i] = a * x[i] + b")
y = gpuarray.empty_like(a)
axpb(y, a, np.float32(3), np.float32(0.5))
step("6. ElementwiseKernel: y[i] = a * x[i] + b", y, 3 * host + np.float32(0.5))

# 7. np.asarray() works too (it calls get()); the GPU array stays where it is.
step("7. np.asarray(a)", np.asarray(a), host)
print("\nAll steps agree with NumPy.")
