"""One page per public class, function and constant of the API reference.

``api-pages cuplug.gpuarray`` (on the module's page, docs/api/gpuarray.md) shows a table of every
name the module exports (its ``__all__``), each with its summary line and a link to a page of its
own, docs/api/generated/<module>.<name>.md, which this extension writes when the build starts
(autodoc's ``autoclass`` / ``autofunction`` / ``autodata`` of that one name). Names the module
page documents by hand are listed in ``:skip:``; exported modules have pages of their own.
``api_pages_class_options`` (conf.py) adds options to a class's ``autoclass``
(``:inherited-members:`` for GPUArray, whose members come from its mixins).

The generated folder is build output (.gitignore); a page is rewritten only when its text changes,
so that Sphinx's incremental builds keep the others.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib

from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.ext.autosummary import Autosummary

GENERATED = "generated"


def exported(module: str) -> list[tuple[str, str]]:
    """``[(name, kind)]`` of what ``module`` exports, kind "class", "function" or "data";
    exported modules are left out (each has a page of its own)."""
    mod = importlib.import_module(module)
    out = []
    for name in getattr(mod, "__all__", []):
        obj = getattr(mod, name)
        if inspect.ismodule(obj) or type(obj).__name__ == "_ConfigModule":
            continue
        kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else "data"
        out.append((name, kind))
    return out


def page_text(module: str, name: str, kind: str, class_options: list[str]) -> str:
    directive = {"class": "autoclass", "function": "autofunction", "data": "autodata"}[kind]
    options = "".join(f"   {o}\n" for o in [":members:", *class_options]) if kind == "class" else ""
    return (
        f"# `{module}.{name}`\n\n"
        f"```{{eval-rst}}\n.. currentmodule:: {module}\n\n.. {directive}:: {name}\n{options}```\n"
    )


class ApiPages(Autosummary):
    """``api-pages MODULE`` with an optional ``:skip: NAME NAME ...``: the autosummary table of
    MODULE's exports, each linked to its generated page."""

    required_arguments = 1
    has_content = False
    option_spec = {"skip": directives.unchanged}

    def run(self):
        module = self.arguments[0]
        skip = set((self.options.get("skip") or "").split())
        names = [name for name, _ in exported(module) if name not in skip]
        self.arguments = []
        self.options = {"toctree": GENERATED, "nosignatures": True}
        # Relative to the module the page's automodule made current: autosummary links each to
        # generated/<module>.<name>.
        self.env.ref_context["py:module"] = module
        self.content = StringList(names, self.get_source_info()[0])
        return super().run()


def _skips(page: pathlib.Path, module: str) -> set[str]:
    """The names a module page's ``api-pages MODULE`` directive skips."""
    lines = page.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.strip() == f".. api-pages:: {module}":
            for option in lines[i + 1 : i + 4]:
                if option.strip().startswith(":skip:"):
                    return set(option.split(":skip:", 1)[1].split())
            return set()
    return set()


def write_pages(app) -> None:
    """Writes docs/api/generated/<module>.<name>.md for every module page's api-pages directive
    and removes pages no module exports any more."""
    api = pathlib.Path(app.srcdir) / "api"
    out = api / GENERATED
    out.mkdir(exist_ok=True)
    class_options = app.config.api_pages_class_options
    wanted = {}
    for page in sorted(api.glob("*.md")):
        for line in page.read_text().splitlines():
            if line.strip().startswith(".. api-pages:: "):
                module = line.split("::", 1)[1].strip()
                skip = _skips(page, module)
                for name, kind in exported(module):
                    if name not in skip:
                        full = f"{module}.{name}"
                        wanted[f"{full}.md"] = page_text(
                            module, name, kind, class_options.get(full, [])
                        )
    for stale in out.glob("*.md"):
        if stale.name not in wanted:
            stale.unlink()
    for file, text in wanted.items():
        path = out / file
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)


def setup(app):
    app.setup_extension("sphinx.ext.autosummary")
    app.add_config_value("api_pages_class_options", {}, "env")
    app.add_directive("api-pages", ApiPages)
    app.connect("builder-inited", write_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
