"""Option text and the shell nvcc runs its steps through (issue 26): with the default NVRTC
backend (in process, no shell) a host header made cuplug fall back to nvcc, whose /bin/sh then
ran "$(...)" from a -D option. The nvcc backend now refuses text that shell would act on, naming
it; what nvcc quotes safely still compiles. No GPU needed (nvcc compiles to PTX)."""

import shutil

import pytest

import cuplug.driver as drv
from cuplug import compiler

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")

KERNEL = "__global__ void k(float *a) { a[0] = 1.0f; }\n"


def test_the_fallback_from_nvrtc_runs_no_shell_text(tmp_path):
    marker = tmp_path / "ran"
    source = "#include <vector>\n" + KERNEL  # a host header: NVRTC fails, nvcc takes over
    option = f"-DFOO=$(touch {marker})"
    with pytest.raises(drv.ConfigError) as e:
        compiler.compile(source, arch="sm_90", target="ptx", options=[option], cache_dir=False)
    assert not marker.exists(), "nvcc's shell ran the option's command"
    message = str(e.value)
    assert "NVRTC cannot compile this source (it includes <vector>" in message
    assert f"nvcc cannot be given the option '{option}': it holds '$'" in message


@pytest.mark.parametrize(
    "options",
    [
        ["-DFOO=`touch {marker}`"],
        ["-Xcompiler", "-DX=1;touch {marker}"],
        ["-Xcompiler=-DX=1|touch {marker}"],
        ["-Xcompiler", "-DX=1&&touch {marker}"],
        ["-D", "FOO=$(touch {marker})"],
        ["-Xcompiler", "-DX=1>{marker}"],
    ],
)
def test_the_nvcc_backend_refuses_shell_text_naming_it(tmp_path, options):
    marker = tmp_path / "ran"
    options = [o.format(marker=marker) for o in options]
    with pytest.raises(drv.ConfigError, match="nvcc cannot be given the option") as e:
        compiler.compile(
            KERNEL, arch="sm_90", target="ptx", options=options, backend="nvcc", cache_dir=False
        )
    assert not marker.exists(), "nvcc's shell ran the option's command"
    assert "nvrtc backend, which runs no shell" in str(e.value)


def test_an_include_dir_with_a_command_substitution_is_refused(tmp_path):
    weird = tmp_path / "$(touch ran)"
    weird.mkdir()
    with pytest.raises(drv.ConfigError, match=r"the include directory '.*\$\(touch ran\)'"):
        compiler.compile(
            KERNEL,
            arch="sm_90",
            target="ptx",
            include_dirs=[str(weird)],
            backend="nvcc",
            cache_dir=False,
        )


def test_what_nvcc_quotes_itself_still_compiles():
    # -D values go to nvcc's steps inside double quotes: < > ; & ( ) and quotes are safe there.
    source = "#include <cstdio>\n__global__ void k(int *a) { a[0] = LESS + sizeof(GREETING); }\n"
    ptx = compiler.compile(
        source,
        arch="sm_90",
        target="ptx",
        options=["-DLESS=(1<2)", '-DGREETING="a;b&c>d|e"'],
        backend="nvcc",
        no_extern_c=True,
        cache_dir=False,
    )
    assert b".entry" in ptx
