"""Sphinx configuration for cuplug's documentation site (bash tools/build_docs.sh builds it).

The pages are the Markdown files of docs/ (MyST); the API reference (docs/api/) is autodoc over
the built extension, imported from $CUPLUG_BUILD_DIR/python (default build/python), so a build
must exist first. Modules that make a context when imported (cuplug.autoinit and its kin) are
described from their source with the `moduledoc` directive below, without importing them.
"""

from __future__ import annotations

import ast
import os
import pathlib
import re
import sys

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.domains.python import PythonDomain
from sphinx.util.docutils import SphinxDirective

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
build = pathlib.Path(os.environ.get("CUPLUG_BUILD_DIR", ROOT / "build"))
if not build.is_absolute():
    build = ROOT / build
sys.path.insert(0, str(build / "python"))
sys.path.insert(0, str(DOCS / "_ext"))  # api_pages: one page per public name

project = "cuplug"
author = "the cuplug developers"
copyright = "2026, the cuplug developers"
try:
    import cuplug

    release = version = cuplug.__version__
except ImportError as e:  # the API pages then fail the build with autodoc's message
    release = version = "unknown"
    print(f"docs/conf.py: cannot import cuplug from {build / 'python'}: {e}", file=sys.stderr)

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.intersphinx", "api_pages"]
# api_pages writes docs/api/generated/ (one page per exported class, function and constant);
# autosummary's own generation is not used.
autosummary_generate = False
api_pages_class_options = {"cuplug.gpuarray.GPUArray": [":inherited-members:"]}
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "img/*.md", "_inventories"]

# intersphinx: names of Python's and NumPy's (os.PathLike, numpy.ndarray, numpy.dtype, ...) in
# signatures and docstrings link to their documentation. The inventories are fetched at build
# time; where one cannot be (no network), the build must not fail under -W. Sphinx (8, 9) warns
# "failed to reach any of the inventories" only when every location of a project fails, and
# that warning has no type that suppress_warnings could select; so each project's last location
# is an empty inventory in the tree: offline, its names stay plain text (Sphinx logs the failed
# fetch as information) and the build passes.
_NO_INVENTORY = "_inventories/empty.inv"
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", (None, _NO_INVENTORY)),
    "numpy": ("https://numpy.org/doc/stable", (None, _NO_INVENTORY)),
}
intersphinx_timeout = 10  # seconds per inventory: an unreachable host does not hold the build

myst_heading_anchors = 3  # #anchor links to headings, as GitHub makes them
myst_enable_extensions = ["colon_fence"]
html_theme = "furo"  # wide API pages and tables; alabaster squeezed them
html_title = f"cuplug {release}"
html_static_path: list[str] = []

# autodoc: members in source order; the signatures pybind11 writes on a docstring's first line
# are used as the signature (autodoc_docstring_signature, the default).
autodoc_member_order = "bysource"
# No "members" by default: a module page shows the module's docstring and its api-pages table,
# and each class's own page asks for its members (docs/_ext/api_pages.py).
autodoc_default_options = {"undoc-members": False, "show-inheritance": True}
autodoc_typehints = "signature"
# NumPy-style sections (Parameters, Returns, Raises, ...) become field lists through napoleon's
# NumpyDocstring, applied here only to docstrings that have such a section: napoleon as an
# extension would also read a property's "(width, height) of ...: ..." as "type: description".
_SECTION = re.compile(
    r"^\s*(Parameters|Returns|Yields|Raises|Warns|Other Parameters|Attributes|Examples|Notes"
    r"|See Also)\s*\n\s*-{3,}\s*$",
    re.M,
)


def _numpy_sections(app, what, name, obj, options, lines):
    if what not in ("function", "method", "class", "module", "exception") or not lines:
        return
    if not _SECTION.search("\n".join(lines)):
        return
    from sphinx.ext.napoleon import Config
    from sphinx.ext.napoleon.docstring import NumpyDocstring

    config = Config(napoleon_use_param=True, napoleon_use_rtype=True)
    converted = NumpyDocstring(lines, config, app, what, name, obj, options).lines()
    lines[:] = converted


class ModuleDoc(SphinxDirective):
    """``moduledoc cuplug.autoinit``: the module's docstring, read from its source file without
    importing it (importing cuplug.autoinit makes a context: no GPU, no import)."""

    required_arguments = 1

    def run(self):
        name = self.arguments[0]
        path = ROOT / "python" / (name.replace(".", "/") + ".py")
        if not path.is_file():
            raise self.error(f"moduledoc: no source file {path} for {name}")
        self.env.note_dependency(str(path))
        text = ast.get_docstring(ast.parse(path.read_text())) or ""
        if not text:
            raise self.error(f"moduledoc: {name} ({path}) has no docstring")
        section = nodes.container()
        self.state.nested_parse(StringList(text.splitlines(), str(path)), 0, section)
        return section.children


# ---- docstrings written as plain text -------------------------------------------------------
# The docstrings are read as reStructuredText, but many are plain text: "f(x, *args)",
# "float *z", "then_ where criterion ..." (a name ending in "_" is an RST link, a lone "*" starts
# emphasis), which docutils reports as errors. Outside ``literals``, `roles`, literal blocks (after
# "::") and doctest lines, such "*" and trailing "_" are escaped, so the text shows as written.
_LITERAL = re.compile(r"(``.+?``|:[\w:]+:`[^`]*`|`[^`]*`_{0,2})")
_TRAILING_UNDERSCORE = re.compile(r"(?<=\w)_(?=[^\w`]|$)")


def _escape_plain(text: str) -> str:
    parts = _LITERAL.split(text)
    for i in range(0, len(parts), 2):
        parts[i] = _TRAILING_UNDERSCORE.sub(r"\_", parts[i].replace("*", r"\*"))
    return "".join(parts)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def escape_plain_docstring(app, what, name, obj, options, lines):
    literal_indent = None  # inside a literal block: the indent of the paragraph that opened it
    for i, line in enumerate(lines):
        if literal_indent is not None:
            if not line.strip() or _indent(line) > literal_indent:
                continue
            literal_indent = None
        if line.lstrip().startswith(">>>"):
            continue
        lines[i] = _escape_plain(line)
        if line.rstrip().endswith("::"):
            literal_indent = _indent(line)


# ---- names exported by two public modules --------------------------------------------------
# cuplug.driver re-exports cuplug._core's classes (CompileError, ...), and so do
# cuplug.compiler, cuplug.elementwise, cuplug.reduction: each page documents the object under its
# own name, and each also registers the canonical name (in cuplug._core) as an alias. Two aliases
# of one object are not two descriptions: the first is kept, without the "duplicate object
# description" warning (which suppress_warnings cannot select). Real duplicates (two non-alias
# descriptions of one name) still warn.
_note_object = PythonDomain.note_object


def _note_object_once(self, name, objtype, node_id, aliased=False, location=None):
    other = self.objects.get(name)
    if aliased and other is not None and other.aliased:
        return
    _note_object(self, name, objtype, node_id, aliased=aliased, location=location)


PythonDomain.note_object = _note_object_once


def setup(app):
    app.add_directive("moduledoc", ModuleDoc)
    app.connect("autodoc-process-docstring", escape_plain_docstring)
    app.connect("autodoc-process-docstring", _numpy_sections)  # after the escaping
