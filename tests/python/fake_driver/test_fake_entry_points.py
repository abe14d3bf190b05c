"""The fake CUDA driver through ctypes, without cuplug: entry points, init, versions, errors.

Behaviour tests run against the fake and, where one is usable, the real driver too (`drv` is
parametrized); tests of fake-only conventions use `fake_drv`.
"""

from __future__ import annotations

from support.fake_driver import *  # noqa: F401,F403

# Entry points ---------------------------------------------------------------------------------


def driver_api_names() -> list[str]:
    header = (fc.REPO_ROOT / "core/include/cuplug/driver_api.hpp").read_text()
    start = header.index("#define CUPLUG_DRIVER_FUNCTIONS")
    table = header[start : header.index("struct driver_api")]
    # X(name) and, for entry points typed by their CUDA 13 form, X(name, versioned_name).
    return re.findall(r"X\((cu\w+)(?:,\s*\w+)?\)", table)


def test_every_entry_point_cuplug_uses_is_provided(drv):
    names = driver_api_names()
    assert len(names) > 100
    missing = [n for n in names if drv.proc_address(n)[0] != CUDA_SUCCESS]
    assert not missing
    assert set(names) <= set(fc.PROTOTYPES), "fakecuda.PROTOTYPES lags behind driver_api.hpp"


def test_unknown_entry_point_is_not_found(drv):
    # Documented (and what driver 580 does): success, a null pointer, and the status says why.
    result, address, status = drv.proc_address("cuNoSuchFunction")
    assert (result, address, status) == (CUDA_SUCCESS, 0, fc.CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)


def test_entry_points_follow_the_requested_cuda_version(drv, ctx):
    # CUDA 13.0 gave cuCtxSynchronize and cuCtxGetDevice a context argument (their _v2); callers
    # asking for 12.x get the old forms.
    for name in ("cuCtxSynchronize", "cuCtxGetDevice"):
        new, old = drv.proc_address(name, 13000), drv.proc_address(name, 12080)
        assert new[0] == old[0] == CUDA_SUCCESS and new[1] and old[1] and new[1] != old[1]
    synchronize_v1 = ctypes.CFUNCTYPE(c_int)(drv.proc_address("cuCtxSynchronize", 12080)[1])
    assert synchronize_v1() == CUDA_SUCCESS
    get_device_v1 = ctypes.CFUNCTYPE(c_int, ctypes.POINTER(c_int))(
        drv.proc_address("cuCtxGetDevice", 12080)[1]
    )
    dev = c_int(-1)
    assert get_device_v1(byref(dev)) == CUDA_SUCCESS and dev.value == 0
    dev = c_int(-1)
    drv.check("cuCtxGetDevice", byref(dev), ctx)  # an explicit context, current or not
    drv.check("cuCtxSynchronize", ctx)
    assert dev.value == 0
    assert drv.proc_address("cuMemAlloc", 13010)[0] == CUDA_ERROR_INVALID_VALUE  # newer than it


def test_entry_points_newer_than_the_requested_version(drv, ctx):
    # What a CUDA 12.2 driver has (cuplug asks for the driver's own version): no cuFuncGetName
    # (12.3) or cuFuncGetParamInfo (12.4), and the forms of cuGraphAddDependencies and
    # cuStreamGetCaptureInfo before their 12.3 edge data; the fake poses as such a driver with
    # FAKE_CUDA_DRIVER_VERSION (tests/cpp/core/test_driver_versions.cpp).
    for name in ("cuFuncGetName", "cuFuncGetParamInfo"):
        assert drv.proc_address(name, 12020) == (
            CUDA_SUCCESS,
            0,
            fc.CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
        )
        assert drv.proc_address(name, 12040)[1]
    for name in ("cuGraphAddDependencies", "cuStreamGetCaptureInfo"):
        new, old = drv.proc_address(name, 12030), drv.proc_address(name, 12020)
        assert new[0] == old[0] == CUDA_SUCCESS and new[1] and old[1] and new[1] != old[1]
    graph, a, b = c_void_p(), c_void_p(), c_void_p()
    drv.check("cuGraphCreate", byref(graph), 0)
    for node in (a, b):
        drv.check("cuGraphAddEmptyNode", byref(node), graph, None, 0)
    add_dependencies_v1 = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, c_size_t)(
        drv.proc_address("cuGraphAddDependencies", 12020)[1]
    )
    assert add_dependencies_v1(graph, byref(a), byref(b), 1) == CUDA_SUCCESS
    count = c_size_t(0)
    drv.check("cuGraphGetRootNodes", graph, None, byref(count))
    assert count.value == 1  # b now depends on a
    drv.check("cuGraphDestroy", graph)
    stream, status = c_void_p(), c_int(-1)
    drv.check("cuStreamCreate", byref(stream), 1)
    get_capture_info_v2 = ctypes.CFUNCTYPE(
        c_int, c_void_p, ctypes.POINTER(c_int), c_void_p, c_void_p, c_void_p, c_void_p
    )(drv.proc_address("cuStreamGetCaptureInfo", 12020)[1])
    assert get_capture_info_v2(stream, byref(status), None, None, None, None) == CUDA_SUCCESS
    assert status.value == 0  # CU_STREAM_CAPTURE_STATUS_NONE
    drv.check("cuStreamDestroy", stream)


def test_cuplug_driver_table_has_the_cuda_13_prototypes():
    """core/include/cuplug/driver_api.hpp types each entry point as decltype(&::name); that must
    be the prototype cuGetProcAddress(name, 13000) returns, i.e. cudaTypedefs.h's newest
    PFN_<name>_v<N> with N <= 13000."""
    compiler = shutil.which("g++") or shutil.which("c++")
    typedefs = pathlib.Path("/usr/local/cuda/include/cudaTypedefs.h")
    if compiler is None or not typedefs.is_file():
        pytest.skip("needs g++ and the CUDA toolkit headers in /usr/local/cuda/include")
    text = typedefs.read_text() + (typedefs.parent / "cudaProfilerTypedefs.h").read_text()
    # cudaGL.h's registration entry points have their typedefs in cudaGLTypedefs.h, which needs
    # GL's header: checked where there is one.
    gl_text = (typedefs.parent / "cudaGLTypedefs.h").read_text()
    text += gl_text
    checks, gl_checks = [], []
    for name in driver_api_names():
        versions = [int(v) for v in re.findall(rf"PFN_{name}_v(\d+)\)", text)]
        version = max(v for v in versions if v <= 13000)
        pfn = f"PFN_{name}_v{version}"
        (gl_checks if f"PFN_{name}_v" in gl_text else checks).append(
            f"static_assert(std::is_same_v<{pfn}, "
            f'decltype(::cuplug::driver_api::{name})>, "{name}: {pfn}");'
        )
    source = "\n".join(
        [
            "#include <cuplug/driver_api.hpp>",
            "#include <cudaTypedefs.h>",
            "#include <cudaProfilerTypedefs.h>",
            "#include <type_traits>",
            *checks,
            "#if __has_include(<GL/gl.h>)",
            "#include <cudaGLTypedefs.h>",
            *gl_checks,
            "#endif",
        ]
    )
    result = subprocess.run(
        [
            compiler,
            "-std=c++17",
            "-fsyntax-only",
            "-x",
            "c++",
            "-",
            "-I",
            str(fc.REPO_ROOT / "core/include"),
            "-I",
            str(typedefs.parent),
        ],
        input=source,
        capture_output=True,
        text=True,
    )
    mismatches = re.findall(r"static assertion failed: (.*)", result.stderr)
    assert result.returncode == 0, mismatches or result.stderr


def test_only_the_lookup_and_control_api_are_exported(fake_library):
    symbols = subprocess.run(
        ["nm", "-D", "--defined-only", str(fake_library)], capture_output=True, text=True
    )
    if symbols.returncode != 0:
        pytest.skip("nm is not available")
    names = {line.split()[-1] for line in symbols.stdout.splitlines() if line.strip()}
    assert "cuGetProcAddress_v2" in names
    assert all(n == "cuGetProcAddress_v2" or n.startswith("fake_cuda_") for n in names), names


# Initialisation, versions, errors -------------------------------------------------------------


def test_calls_before_cuinit_fail(fake_instance):
    fake_instance.reset()
    count = c_int()
    assert fake_instance.cuDeviceGetCount(byref(count)) == fc.CUDA_ERROR_NOT_INITIALIZED
    version = c_int()
    assert fake_instance.cuDriverGetVersion(byref(version)) == CUDA_SUCCESS
    assert fake_instance.error_string(CUDA_ERROR_INVALID_VALUE) == "invalid argument"
    assert fake_instance.cuInit(1) == CUDA_ERROR_INVALID_VALUE
    assert fake_instance.cuInit(0) == CUDA_SUCCESS
    assert fake_instance.cuDeviceGetCount(byref(count)) == CUDA_SUCCESS


def test_driver_version(drv):
    version = c_int()
    drv.check("cuDriverGetVersion", byref(version))
    assert version.value >= 13000


def test_fake_driver_version_is_13000(fake_drv):
    version = c_int()
    fake_drv.check("cuDriverGetVersion", byref(version))
    assert version.value == 13000


@pytest.mark.parametrize(
    "code, name, text",
    [
        (0, "CUDA_SUCCESS", "no error"),
        (1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"),
        (2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
        (3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"),
        (100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"),
        (201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"),
        (400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"),
        (500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"),
        (600, "CUDA_ERROR_NOT_READY", "device not ready"),
        (719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"),
        (999, "CUDA_ERROR_UNKNOWN", "unknown error"),
    ],
)
def test_error_names_and_strings(drv, code, name, text):
    assert drv.error_name(code) == name
    assert drv.error_string(code) == text


def test_unknown_error_code(drv):
    text = c_char_p()
    assert drv.cuGetErrorString(12345, byref(text)) == CUDA_ERROR_INVALID_VALUE
    assert drv.cuGetErrorName(12345, byref(text)) == CUDA_ERROR_INVALID_VALUE


def cuda_h_error_codes() -> list[int]:
    header = pathlib.Path("/usr/local/cuda/include/cuda.h")
    if not header.is_file():
        pytest.skip("cuda.h is not at /usr/local/cuda/include")
    text = header.read_text()
    body = text[text.index("typedef enum cudaError_enum") : text.index("} CUresult;")]
    return [int(v) for v in re.findall(r"CUDA_\w+\s*=\s*(\d+)", body)]


def test_every_cuda_h_error_code_has_a_name_and_text(fake_drv):
    for code in cuda_h_error_codes():
        assert fake_drv.error_name(code), code
        assert fake_drv.error_string(code), code


def test_error_texts_match_the_real_driver(fake_drv, real_instance):
    real_instance.check("cuInit", 0)
    differences = {}
    for code in cuda_h_error_codes():
        for what in ("error_name", "error_string"):
            fake_text = getattr(fake_drv, what)(code)
            real_text = getattr(real_instance, what)(code)
            if real_text is not None and fake_text != real_text:
                differences[(code, what)] = (fake_text, real_text)
    assert not differences
