"""Struct layouts under NVRTC equal nvcc's (issue 24): a corpus of aligned, nested, packed and
vector-typed structs, spelled as libraries built on PyCUDA write them (reikna puts its alignment
after the closing brace: ``typedef struct _x_ { ... } ALIGN(16) x;``), is compiled to PTX by both
compiler backends, and the ``sizeof`` / ``alignof`` / ``offsetof`` of every struct, recorded as
``extern "C" __device__ const`` globals, are read back from the PTX text. Both backends must give
the same numbers, and those of the NumPy record dtype the struct stands for. No GPU is needed:
nothing is loaded; nvcc runs in CI."""

from __future__ import annotations

import re
import warnings
from typing import NamedTuple

import numpy as np
import pytest

from cuplug import compiler

BACKENDS = ("nvrtc", "nvcc")


class Entry(NamedTuple):
    name: str  # the C type, also the globals' suffix
    definition: str  # C++ that defines it (and what it needs)
    fields: tuple  # offsetof designators: "b", "o.a.x" (NVRTC's offsetof takes no "v[1]")
    dtype: np.dtype  # the NumPy record dtype it stands for
    align: int  # alignof in C (NumPy's alignment cannot say more than its fields' own)
    numpy_align: bool  # True where NumPy's dtype.alignment is C's too


def rec(names, formats, offsets=None, itemsize=None, align=True):
    spec = {"names": list(names), "formats": list(formats)}
    if offsets is not None:
        spec["offsets"] = list(offsets)
    if itemsize is not None:
        spec["itemsize"] = itemsize
    return np.dtype(spec, align=align)


F4X = rec(["x"], ["f4"], itemsize=16)  # a float padded to 16 bytes: inner16
D32 = rec(["x"], ["f8"], itemsize=32)  # a double padded to 32 bytes: inner32
OUTER16 = rec(["a", "b"], [F4X, "f4"], [0, 16], 32)

PRELUDE = """\
#include <stddef.h>
#define ALIGN(bytes) __align__(bytes)  /* reikna's spelling, as its kernel prelude defines it */
#define PACKED __attribute__((packed))
#define STRUCT_ALIGN(n) ALIGN(n)       /* a macro of a macro */
"""

CORPUS = [
    Entry(
        "plain",
        "struct plain { char c; int i; double d; short s; };",
        ("c", "i", "d", "s"),
        np.dtype([("c", "i1"), ("i", "i4"), ("d", "f8"), ("s", "i2")], align=True),
        8,
        True,
    ),
    Entry(
        "before_name16",
        "struct __align__(16) before_name16 { float x; int y; };",
        ("x", "y"),
        rec(["x", "y"], ["f4", "i4"], itemsize=16),
        16,
        False,
    ),
    Entry(
        "after_brace16",
        "typedef struct _after_brace16_ { float x; int y; } ALIGN(16) after_brace16;",
        ("x", "y"),
        rec(["x", "y"], ["f4", "i4"], itemsize=16),
        16,
        False,
    ),
    Entry(
        "after_brace8",
        "typedef struct _after_brace8_ {\n  short s;\n}\nALIGN(8) after_brace8;",
        ("s",),
        rec(["s"], ["i2"], itemsize=8),
        8,
        False,
    ),
    Entry(
        "after_brace32",
        "typedef struct _after_brace32_ { double d; int i; } STRUCT_ALIGN(32) after_brace32;",
        ("d", "i"),
        rec(["d", "i"], ["f8", "i4"], itemsize=32),
        32,
        False,
    ),
    Entry(
        "spelled16",
        "struct spelled16 { char c; } __attribute__((aligned(16)));",
        ("c",),
        rec(["c"], ["i1"], itemsize=16),
        16,
        False,
    ),
    # The two cases: an aligned struct nested in another aligned struct (16 vs 32 and
    # 32 vs 64 under NVRTC before the fix).
    Entry(
        "inner16",
        "typedef struct _inner16_ { float x; } ALIGN(16) inner16;",
        ("x",),
        F4X,
        16,
        False,
    ),
    Entry(
        "outer16",
        "typedef struct _outer16_ { inner16 a; float b; } ALIGN(16) outer16;",
        ("a", "a.x", "b"),
        OUTER16,
        16,
        False,
    ),
    Entry(
        "inner32",
        "typedef struct _inner32_ { double x; } ALIGN(32) inner32;",
        ("x",),
        D32,
        32,
        False,
    ),
    Entry(
        "outer32",
        "typedef struct _outer32_ { inner32 a; double b; } ALIGN(32) outer32;",
        ("a", "b"),
        rec(["a", "b"], [D32, "f8"], [0, 32], 64),
        32,
        False,
    ),
    Entry(
        "twice",
        "typedef struct _twice_ { int k; outer16 o; } ALIGN(16) twice;",
        ("k", "o", "o.a.x", "o.b"),
        rec(["k", "o"], ["i4", OUTER16], [0, 16], 48),
        16,
        False,
    ),
    Entry(
        "mixed",
        "struct __align__(32) mixed { char c; inner16 v; };",
        ("c", "v"),
        rec(["c", "v"], ["i1", F4X], [0, 16], 32),
        32,
        False,
    ),
    # reikna's per-field alignment: "${type} ALIGN(n) name;"
    Entry(
        "field_aligned",
        "typedef struct _field_aligned_ {\n"
        "  int a;\n  float ALIGN(16) b;\n  double ALIGN(32) c;\n} ALIGN(32) field_aligned;",
        ("a", "b", "c"),
        rec(["a", "b", "c"], ["i4", "f4", "f8"], [0, 16, 32], 64),
        32,
        False,
    ),
    Entry(
        "array_of_aligned",
        "typedef struct _array_of_aligned_ { inner16 v[3]; int n; } ALIGN(16) array_of_aligned;",
        ("v", "n"),
        rec(["v", "n"], [(F4X, (3,)), "i4"], [0, 48], 64),
        16,
        False,
    ),
    Entry(
        "inner16_x3",
        "typedef inner16 inner16_x3[3];",
        (),
        np.dtype((F4X, (3,))),
        16,
        False,
    ),
    Entry(
        "vectors",
        "struct vectors { float x; float4 f; double2 d; char c; };",
        ("x", "f", "d", "c"),
        rec(["x", "f", "d", "c"], ["f4", ("f4", (4,)), ("f8", (2,)), "i1"], [0, 16, 32, 48], 64),
        16,
        False,
    ),
    Entry(
        "anonymous16",
        "typedef struct { char c; float f; } ALIGN(16) anonymous16;",
        ("c", "f"),
        rec(["c", "f"], ["i1", "f4"], itemsize=16),
        16,
        False,
    ),
    Entry(
        "anonymous_before16",
        "typedef struct __align__(16) { char c; float f; } anonymous_before16;",
        ("c", "f"),
        rec(["c", "f"], ["i1", "f4"], itemsize=16),
        16,
        False,
    ),
    # After the typedef's name the attribute aligns the typedef only: sizeof stays 4 (GCC's
    # rule, and nvcc's and NVRTC's alike).
    Entry(
        "typedef_aligned",
        "typedef struct _typedef_aligned_ { float x; } typedef_aligned __align__(16);",
        ("x",),
        rec(["x"], ["f4"]),
        16,
        False,
    ),
    # A struct defined where a member is declared: the attribute is the struct's.
    Entry(
        "nested_definition",
        "struct nested_definition {\n"
        "  struct nested_inner { float x; } ALIGN(16) member; /* } ALIGN(64) in a comment */\n"
        "  int n;\n};",
        ("member", "member.x", "n"),
        rec(["member", "n"], [F4X, "i4"], [0, 16], 32),
        16,
        False,
    ),
    Entry(
        "packed",
        "typedef struct _packed_ { char c; int i; } PACKED packed;",
        ("c", "i"),
        np.dtype([("c", "i1"), ("i", "i4")], align=False),
        1,
        True,
    ),
    Entry(
        "union8",
        "union union8 { char c; float f; } ALIGN(8);",
        ("c", "f"),
        rec(["c", "f"], ["i1", "f4"], [0, 0], 8),
        8,
        False,
    ),
    Entry(
        "class16",
        "class class16 { public: char c; } __attribute__((__aligned__(16)));",
        ("c",),
        rec(["c"], ["i1"], itemsize=16),
        16,
        False,
    ),
    Entry(
        "small_enum",
        "typedef enum { small_a, small_b } PACKED small_enum;",
        (),
        np.dtype("u1"),
        1,
        True,
    ),
    Entry(
        "templated_float",
        "template <typename T> struct templated { T x; } ALIGN(16);\n"
        "typedef templated<float> templated_float;",
        ("x",),
        F4X,
        16,
        False,
    ),
]


def c_ident(designator):
    return re.sub(r"\W", "_", designator)


def corpus_source():
    """The corpus, then a global per number: size_T, align_T, off_T_<field>."""
    lines = [PRELUDE]
    for e in CORPUS:
        lines.append(e.definition)
        record = [f"size_{e.name} = sizeof({e.name})", f"align_{e.name} = alignof({e.name})"]
        record += [f"off_{e.name}_{c_ident(f)} = offsetof({e.name}, {f})" for f in e.fields]
        lines.append('extern "C" __device__ const unsigned int ' + ", ".join(record) + ";\n")
    return "\n".join(lines)


# `.global .align 4 .u32 size_T = 32;`, and without "= 0" where the value is 0.
_GLOBAL = re.compile(r"\.(?:global|const)\s+\.align\s+\d+\s+\.[ub]32\s+(\w+)(?:\s*=\s*(\d+))?\s*;")


@pytest.fixture(scope="module")
def layouts():
    """{backend: ({global name: value}, [compiler warnings])} from each backend's PTX of the
    corpus."""
    source = corpus_source()
    out = {}
    for backend in BACKENDS:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", compiler.CompilerWarning)
            ptx = compiler.compile(
                source,
                arch="sm_90",
                target="ptx",
                no_extern_c=True,
                backend=backend,
                cache_dir=False,
            )
        text = ptx.decode() if isinstance(ptx, bytes) else ptx
        values = {name: int(value or 0) for name, value in _GLOBAL.findall(text)}
        out[backend] = values, [str(w.message) for w in said]
    return out


def numbers(values, e):
    return {
        "sizeof": values[f"size_{e.name}"],
        "alignof": values[f"align_{e.name}"],
        **{f"offsetof {f}": values[f"off_{e.name}_{c_ident(f)}"] for f in e.fields},
    }


def numpy_offset(dtype, designator):
    """The byte offset of "o.a.x" in a NumPy dtype."""
    offset = 0
    for name in designator.split("."):
        dtype, at = dtype.fields[name][:2]
        offset += at
    return offset


def numpy_numbers(e):
    return {
        "sizeof": e.dtype.itemsize,
        "alignof": e.align,
        **{f"offsetof {f}": numpy_offset(e.dtype, f) for f in e.fields},
    }


IDS = [e.name for e in CORPUS]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_number_is_read_back(layouts, backend):
    expected = 2 * len(CORPUS) + sum(len(e.fields) for e in CORPUS)
    assert len(layouts[backend][0]) == expected


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_attribute_is_ignored(layouts, backend):
    """NVRTC said "attribute does not apply to any entity" (1866) and "attribute "packed" does
    not apply here" (1835) for attributes after a closing brace; no compiler may say anything."""
    assert layouts[backend][1] == []


@pytest.mark.parametrize("entry", CORPUS, ids=IDS)
def test_nvrtc_layout_is_nvccs(layouts, entry):
    nvrtc, nvcc = layouts["nvrtc"][0], layouts["nvcc"][0]
    assert numbers(nvrtc, entry) == numbers(nvcc, entry), entry.definition


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("entry", CORPUS, ids=IDS)
def test_layout_is_numpys(layouts, backend, entry):
    assert numbers(layouts[backend][0], entry) == numpy_numbers(entry), entry.definition
    if entry.numpy_align:
        assert entry.dtype.alignment == entry.align


def test_default_extern_c_wrapping_keeps_the_layout():
    """PyCUDA's default wraps the source in extern "C" { ... }: the same numbers."""
    source = (
        PRELUDE
        + "typedef struct _in_ { float x; } ALIGN(16) in_t;\n"
        + "typedef struct _out_ { in_t a; float b; } ALIGN(16) out_t;\n"
        + "__device__ unsigned int wrapped_size = sizeof(out_t);\n"  # C linkage: the wrap's
    )
    for backend in BACKENDS:
        ptx = compiler.compile(source, arch="sm_90", target="ptx", backend=backend, cache_dir=False)
        text = ptx.decode() if isinstance(ptx, bytes) else ptx
        assert dict(_GLOBAL.findall(text)).get("wrapped_size") == "32", backend


def test_line_numbers_and_literals_stay():
    """NVRTC's copy of the source has the attributes moved (plugins/compiler_nvrtc/
    class_attributes.hpp): an error's line number is still the user's, and text in string
    literals and comments is not touched."""
    text = "struct s { float x; } ALIGN(16); /* struct c { } ALIGN(8); */"
    source = (
        PRELUDE
        + "typedef struct _moved_ {\n  float x;\n}\nALIGN(16)\nmoved;\n"
        + f'extern "C" __device__ const char literal[] = "{text}";\n'
    )
    ptx = compiler.compile(source, arch="sm_90", target="ptx", no_extern_c=True, cache_dir=False)
    data = ptx if isinstance(ptx, bytes) else ptx.encode()
    stored = ", ".join(str(b) for b in text.encode())
    assert stored.encode() in data
    error_line = source.count("\n") + 1
    with pytest.raises(
        compiler.CompileError, match=rf"kernel\.cu\({error_line}\)|line {error_line}"
    ):
        compiler.compile(
            source + "int broken = ;\n", arch="sm_90", no_extern_c=True, backend="nvrtc"
        )
