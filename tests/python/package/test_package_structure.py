"""The Python package's structure: no import cycles between its modules, no module over 500 lines,
the C-argument parser in its own module (re-exported by cuplug.tools) and cuplug.driver's
namespace spelled out in __all__. No device needed."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pathlib
import re
import types

import numpy as np
import pytest

import cuplug._kernels.cargs as cargs
import cuplug.driver as cuda
from cuplug import _core, _log, tools

PACKAGE = pathlib.Path(__file__).resolve().parents[3] / "python" / "cuplug"


# ---- import graph ------------------------------------------------------------------------------


def _modules(package: pathlib.Path = PACKAGE) -> dict[str, pathlib.Path]:
    found = {}
    for path in package.rglob("*.py"):
        parts = ["cuplug", *path.relative_to(package).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(name: str, path: pathlib.Path, node: ast.AST, modules) -> set[str]:
    if isinstance(node, ast.Import):
        candidates = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            package = package[: len(package) - node.level + 1]
            base = ".".join(package + ([node.module] if node.module else []))
        candidates = [base] + [f"{base}.{alias.name}" for alias in node.names]
    # The package itself is initialising whenever a submodule is imported: not an edge.
    return {c for c in candidates if c in modules and c != "cuplug" and c != name}


def _type_checking_only(node: ast.AST) -> bool:
    """An ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``) block."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_graph(with_function_bodies: bool, package=PACKAGE) -> dict[str, set[str]]:
    """{module: modules it imports}: at import time, or also inside functions (run later);
    imports under ``if TYPE_CHECKING:`` are not edges (they never run)."""
    modules = _modules(package)
    graph = {}
    for name, path in modules.items():
        edges = set()

        def walk(body, name=name, path=path, edges=edges):
            for node in body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    edges |= _imported(name, path, node, modules)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if with_function_bodies:
                        walk(node.body)
                elif _type_checking_only(node):
                    # Never run: names for annotations (a routine's `-> GPUArray`, which its
                    # docstring names too), read by type checkers, which resolve cycles.
                    walk(node.orelse)
                else:
                    for field in ("body", "orelse", "finalbody", "handlers"):
                        walk(getattr(node, field, None) or [])

        walk(ast.parse(path.read_text(), str(path)).body)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


#: Rooms of one concern each: a module that grows past this is two (docs/architecture.md).
MAX_MODULE_LINES = 500


def test_no_module_is_longer_than_a_room():
    long = {
        str(path.relative_to(PACKAGE)): n
        for path in _modules().values()
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by concern): {long}"


def test_no_import_cycles_at_import_time():
    assert _cycles(_import_graph(with_function_bodies=False)) == []


def test_no_import_cycles_through_late_imports():
    """A late import (inside a function) hides a cycle from the interpreter, not from readers:
    modules form layers, every module of every subpackage counted on its own (no exemptions:
    GPUArray's routines make results of the class registered with the C++ layer instead of
    importing it back, issue 25)."""
    assert _cycles(_import_graph(with_function_bodies=True)) == [], (
        "modules importing each other (move what both need into a third module, or let the "
        "lower one make results through cuplug._kernels.results)"
    )


#: The private wings: machinery under the public facades (docs/architecture.md, issue 25).
PRIVATE_WINGS = ("_driver", "_compile", "_kernels", "_rng", "_codegen", "_array", "_auto")


def _is_facade(module: str) -> bool:
    """A public module of cuplug: no part of its name has a leading underscore (cuplug._core,
    the C++ extension at the bottom, is not one)."""
    parts = module.split(".")[1:]
    return bool(parts) and not any(p.startswith("_") for p in parts)


def _facades_imported_by_wings(graph) -> dict[str, list[str]]:
    upward = {
        name: sorted(e for e in edges if _is_facade(e))
        for name, edges in graph.items()
        if name.split(".")[1:2] and name.split(".")[1] in PRIVATE_WINGS
    }
    return {name: facades for name, facades in upward.items() if facades}


def test_private_wings_import_no_public_facade():
    """The wings import only downward: a facade (cuplug.driver, cuplug.compiler, cuplug.tools,
    cuplug.gpuarray, ...) is made of the wings, so a wing that imports one runs upward (late
    imports included)."""
    graph = _import_graph(with_function_bodies=True)
    assert "cuplug._kernels.engine" in graph and "cuplug._array.core" in graph
    upward = _facades_imported_by_wings(graph)
    assert upward == {}, "private modules importing public facades: {module: [facades]}"


def test_the_kernels_wing_does_not_import_the_array_layer():
    """_kernels sits below _array (the engines make results through cuplug._kernels.results)."""
    graph = _import_graph(with_function_bodies=True)
    into_array = {
        name: sorted(e for e in edges if e.startswith("cuplug._array"))
        for name, edges in graph.items()
        if name.startswith("cuplug._kernels")
    }
    assert {name: found for name, found in into_array.items() if found} == {}


def test_the_layer_checks_see_what_they_must_refuse(tmp_path):
    """The checks above find a cycle hidden in a function body and a wing importing a facade
    late, in a made-up package laid out as cuplug is."""
    (tmp_path / "_array").mkdir()
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "_core.py").write_text("")
    (tmp_path / "compiler.py").write_text("from cuplug import _core\n")
    (tmp_path / "_array" / "__init__.py").write_text("")
    (tmp_path / "_array" / "core.py").write_text("from .methods import Mixin\n")
    (tmp_path / "_array" / "methods.py").write_text(
        "from cuplug import _core\n\n"
        "class Mixin:\n"
        "    def copy(self):\n"
        "        from .core import GPUArray\n\n"
        "        from cuplug.compiler import SourceModule\n"
    )
    assert _cycles(_import_graph(False, tmp_path)) == []
    graph = _import_graph(True, tmp_path)
    assert _cycles(graph) == [["cuplug._array.core", "cuplug._array.methods"]]
    assert _facades_imported_by_wings(graph) == {"cuplug._array.methods": ["cuplug.compiler"]}
    assert _is_facade("cuplug.gl.window") and not _is_facade("cuplug._core")
    assert not _is_facade("cuplug._array.core") and not _is_facade("cuplug")


def test_compiler_and_linking_are_layers():
    graph = _import_graph(with_function_bodies=True)
    assert "cuplug._compile.linking" in graph["cuplug._compile.source_module"]
    assert "cuplug._compile.source_module" not in graph["cuplug._compile.linking"]
    from cuplug import compiler
    from cuplug._compile import linking

    assert issubclass(compiler.DynamicSourceModule, compiler.DynamicModule)
    assert issubclass(compiler.DynamicModule, linking.LinkedModule)


# ---- the C-argument parser ---------------------------------------------------------------------

CARGS_NAMES = ["Argument", "ScalarArg", "VectorArg", "get_arg_type", "parse_c_arg"]


def test_c_argument_parser_has_its_own_module():
    assert sorted(cargs.__all__) == CARGS_NAMES
    for name in CARGS_NAMES:
        assert getattr(tools, name) is getattr(cargs, name), name
        assert getattr(cargs, name).__module__ == "cuplug._kernels.cargs"
    tree = ast.parse((PACKAGE / "tools.py").read_text())
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    assert defined.isdisjoint(CARGS_NAMES), "tools.py defines the parser again"


def test_c_argument_parser_uses_the_registry():
    """A type registered through cuplug.tools is one parse_c_arg knows."""
    # A dtype no other test registers: the registry is process-wide.
    point = np.dtype([("cargs_x", np.int16), ("cargs_y", np.float64)])
    tools.get_or_register_dtype("test_cargs_point", point)
    arg = cargs.parse_c_arg("const test_cargs_point *p")
    assert isinstance(arg, cargs.VectorArg) and arg.dtype == point
    assert arg.declarator() == "test_cargs_point *p"
    with pytest.raises(ValueError, match="unknown type 'test_cargs_unknown'"):
        cargs.parse_c_arg("test_cargs_unknown q")


# ---- cuplug.driver's namespace -----------------------------------------------------------------

# Every public name cuplug.driver had when it was built by `from cuplug._core import *` (PyCUDA's
# pycuda.driver names cuplug implements, plus cuplug's own); none may go.
DRIVER_NAMES_BEFORE_ALL = """
AlignedHostAllocation ArgumentHandler CUDA_DEBUGGING CompileError ConfigError Context Device
DeviceAllocation DeviceMemoryPool Error Event Function HostAllocation HostPointer IPCMemoryHandle
In InOut LaunchError Linker LogicError ManagedAllocation Memcpy2D Memcpy3D Memcpy3DPeer MemoryError
Module NotSupportedError Out PageLockedAllocator PageLockedMemoryPool PagelockedHostAllocation
PluginError PointerHolderBase PooledDeviceAllocation PooledHostAllocation RegisteredHostMemory
RuntimeError Stream TRSA_OVERRIDE_FORMAT TRSF_NORMALIZED_COORDINATES TRSF_READ_AS_INTEGER
TR_DEFAULT address_mode aligned_empty aligned_empty_like aligned_zeros aligned_zeros_like
array3d_flags array_cubemap_face array_format bitlog2 compute_mode ctx_flags device_attribute
event_flags filter_mode from_device from_device_like func_cache function_attribute
get_driver_version get_version graphics_register_flags host_alloc_flags init ipc_mem_flags
jit_fallback jit_input_type jit_option jit_target limit managed_empty managed_empty_like
managed_zeros managed_zeros_like mem_alloc mem_alloc_like mem_alloc_managed mem_alloc_pitch
mem_attach_flags mem_get_address_range mem_get_info mem_get_ipc_handle mem_host_register_flags
memcpy_dtod memcpy_dtod_async memcpy_dtoh memcpy_dtoh_async memcpy_htod memcpy_htod_async
memcpy_peer memcpy_peer_async memory_type memset_d16 memset_d16_async memset_d2d16
memset_d2d16_async memset_d2d32 memset_d2d32_async memset_d2d8 memset_d2d8_async memset_d32
memset_d32_async memset_d8 memset_d8_async module_from_buffer module_from_file pagelocked_empty
pagelocked_empty_like pagelocked_zeros pagelocked_zeros_like pointer_attribute
profiler_output_mode register_host_memory set_debugging shared_config to_device
""".split()

# Public names of the extension that are not driver API, and where they belong.
CORE_NAMES_ELSEWHERE = {
    "allocators": "cuplug.memory (allocator backends)",
    "backends": "cuplug.plugins / cuplug.config (the backend registry)",
    "rng": "cuplug.random / cuplug.curandom (the rng backends)",
    "gl": "cuplug.gl (the interop backend)",
}


def test_driver_all_is_explicit_and_complete():
    assert len(cuda.__all__) == len(set(cuda.__all__)), "a name listed twice in __all__"
    missing = [name for name in cuda.__all__ if not hasattr(cuda, name)]
    assert missing == []
    namespace = {}
    exec("from cuplug.driver import *", namespace)
    assert sorted(set(namespace) - {"__builtins__"}) == sorted(cuda.__all__)
    assert sorted(set(DRIVER_NAMES_BEFORE_ALL) - set(cuda.__all__)) == []
    tree = ast.parse((PACKAGE / "driver.py").read_text())
    star = [
        n.module
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
    ]
    assert star == [], "cuplug.driver builds its namespace by star-import"


def test_every_public_extension_name_has_a_home():
    """A name added to the extension must be listed in cuplug.driver.__all__ or said to belong
    elsewhere (CORE_NAMES_ELSEWHERE), so it is neither lost nor leaked into PyCUDA's namespace."""
    public = {n for n in dir(_core) if not n.startswith("_")}
    unplaced = sorted(public - set(cuda.__all__) - set(CORE_NAMES_ELSEWHERE))
    assert unplaced == [], (
        f"cuplug._core names {unplaced} are in no namespace: add them to python/cuplug/driver.py "
        "(import and __all__) or to CORE_NAMES_ELSEWHERE in this test"
    )
    for name in CORE_NAMES_ELSEWHERE:
        assert isinstance(getattr(_core, name), types.ModuleType)
        assert not hasattr(cuda, name), f"cuplug.driver.{name} is not PyCUDA's driver API"


# ---- names that messages and docs point users to -----------------------------------------------

ROOT = PACKAGE.parents[1]
# Where error messages, docstrings and docs name cuplug's Python objects.
NAMED_IN = ["python/src", "python/cuplug", "core/src", "plugins", "docs", "README.md"]
# The config file's name, and the loggers (cuplug.compile is a logger, not a module).
NOT_PYTHON_NAMES = {"cuplug.toml", *(f"cuplug.{c}" for c in _log.COMPONENTS)}


def _dotted_names() -> dict[str, str]:
    """{"cuplug.x.y": "a file naming it"} over the sources and docs."""
    pattern = re.compile(r"\bcuplug(?:\.[A-Za-z_][A-Za-z_0-9]*)+")
    found = {}
    for entry in NAMED_IN:
        base = ROOT / entry
        files = [base] if base.is_file() else sorted(base.rglob("*"))
        for path in files:
            if path.suffix not in (".py", ".cpp", ".hpp", ".h", ".md") or not path.is_file():
                continue
            for name in pattern.findall(path.read_text(errors="replace")):
                found.setdefault(name.rstrip("."), str(path.relative_to(ROOT)))
    return found


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            if importlib.util.find_spec(module) is None:
                continue
        except (ImportError, ValueError):  # ValueError: an extension's submodule has no spec
            continue
        if cut == len(parts):
            return True  # a module: found without importing it (cuplug.compat.pycuda hooks)
        obj = importlib.import_module(module)
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_named_cuplug_objects_exist():
    """An error message or doc that sends users to cuplug.x.Y names something that exists (they
    once pointed to cuplug.plugins.Allocator, which never did; it is cuplug.memory.Allocator)."""
    names = _dotted_names()
    assert "cuplug.memory.Allocator" in names
    missing = {n: where for n, where in names.items() if n not in NOT_PYTHON_NAMES}
    missing = {n: where for n, where in missing.items() if not _resolves(n)}
    # The GL window module is left out of builds with CUPLUG_GL_WINDOW=OFF: the extension says
    # whether it was built.
    from cuplug import _core

    if not _core.gl.WINDOW_BUILT:
        missing.pop("cuplug._gl_window", None)
    assert missing == {}, "names of objects that do not exist: {name: a file naming it}"


# ---- Device's PyCUDA methods are the extension's (no patching in cuplug.driver) ----------------


def test_device_methods_are_bound_in_the_extension():
    """get_attributes and the lower-case attribute names were patched onto Device by
    cuplug.driver, invisible to the stubs and to code using cuplug._core alone."""
    assert "get_attributes" in vars(_core.Device)
    assert "__getattr__" in vars(_core.Device)
    text = (PACKAGE / "driver.py").read_text()
    assert "Device.get_attributes =" not in text and "Device.__getattr__ =" not in text


@pytest.mark.gpu
def test_get_attributes_warns_about_refused_attributes(fake):
    cuda.init()
    dev = cuda.Device(0)
    every = dev.get_attributes()
    fake.fail_next("cuDeviceGetAttribute", 1, count=1)  # CUDA_ERROR_INVALID_VALUE: LogicError
    with pytest.warns(UserWarning, match=r"CUDA driver raised '.*' when querying '\w+' on "):
        attributes = dev.get_attributes()
    assert attributes.items() <= every.items() and len(attributes) >= len(every) - 1
    assert attributes[cuda.device_attribute.WARP_SIZE] == 32
    with pytest.raises(AttributeError, match=r"nor is 'NO_SUCH_THING' a device_attribute"):
        dev.no_such_thing  # noqa: B018
    assert dev.warp_size == 32
