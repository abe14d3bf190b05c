"""Arguments of compiler.compile / SourceModule (issue 26, low): a string where a list of
strings belongs (``options='-DFOO'``) was split into characters; now a TypeError says what is
wanted, as for other non-lists. PyCUDA takes no string either (its ``options[:]`` then
``.extend`` fails with an AttributeError). No GPU needed."""

import pathlib

import pytest

from cuplug import compiler

KERNEL = "__global__ void k(float *a) { a[0] = FOO; }\n"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"options": "-DFOO=1"}, r"options must be a list of strings, e.g. \['-DFOO=1'\], not "),
        ({"options": b"-DFOO=1"}, r"options must be a list of strings"),
        ({"options": 5}, r"options must be a list of strings, not int 5"),
        ({"options": ["-DFOO=1", 2]}, r"options must be a list of strings, but it holds int 2"),
        ({"include_dirs": "/usr/include"}, r"include_dirs must be a list of strings, e.g."),
    ],
)
def test_a_string_where_a_list_belongs_is_a_type_error(kwargs, message):
    with pytest.raises(TypeError, match=message):
        compiler.compile(KERNEL, arch="sm_90", target="ptx", cache_dir=False, **kwargs)


def test_lists_tuples_and_paths_are_taken(tmp_path):
    (tmp_path / "foo.h").write_text("#define FOO 1.0f\n")
    ptx = compiler.compile(
        '#include "foo.h"\n' + KERNEL,
        arch="sm_90",
        target="ptx",
        cache_dir=False,
        options=("-DBAR=1",),
        include_dirs=[pathlib.Path(tmp_path)],
    )
    assert b".entry k" in ptx


def test_compile_plain_refuses_a_string_too():
    with pytest.raises(TypeError, match="options must be a list of strings"):
        compiler.compile_plain(KERNEL, "-DFOO=1", False, "nvcc", False, target="ptx")
