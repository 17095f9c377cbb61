"""Sphinx directive ``.. evalcert-public-names::``: the table of ``evalcert.__all__``.

Each top-level name links to the page where it is documented: the nearest module at or
above the one that defines it (``evalcert._PUBLIC``) that an ``.. automodule::`` in
``docs/api/*.rst`` documents and whose ``__all__`` lists the name. A public name with no
such page fails the build, so the API reference cannot fall behind ``evalcert.__all__``.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

_AUTOMODULE = re.compile(r"^\.\. automodule:: (\S+)", re.MULTILINE)


def documented_modules(api_dir: Path) -> set[str]:
    """Modules named by an ``.. automodule::`` in ``api_dir/*.rst``."""
    return {m for page in api_dir.glob("*.rst") for m in _AUTOMODULE.findall(page.read_text())}


def documented_target(name: str, defining: str, documented: set[str]) -> str:
    """Fully qualified name under which ``name`` is documented, or raise."""
    parts = defining.split(".")
    for n in range(len(parts), 0, -1):
        module = ".".join(parts[:n])
        if module in documented and name in getattr(importlib.import_module(module),
                                                    "__all__", ()):
            return f"{module}.{name}"
    raise ExtensionError(f"evalcert.{name} is public but no docs/api page documents it: add "
                         f"an automodule of {defining} (or a parent exporting it) to docs/api/")


def _summary(obj: object) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return doc.split("\n\n")[0].replace("\n", " ") if doc else ""


class PublicNames(SphinxDirective):
    """A two-column table: public name (linked) and the first paragraph of its docstring."""

    def run(self) -> list[nodes.Node]:
        import evalcert

        api_dir = Path(self.env.srcdir) / "api"
        documented = documented_modules(api_dir)
        table = nodes.table(classes=["public-names"])
        group = nodes.tgroup(cols=2)
        table += group
        group += nodes.colspec(colwidth=30)
        group += nodes.colspec(colwidth=70)
        body = nodes.tbody()
        for name, defining in evalcert._PUBLIC.items():
            target = documented_target(name, defining, documented)
            ref = addnodes.pending_xref("", refdomain="py", reftype="obj", reftarget=target,
                                        refexplicit=True, refwarn=True)
            ref += nodes.literal(name, name)
            row = nodes.row()
            row += nodes.entry("", nodes.paragraph("", "", ref))
            entry = nodes.entry()
            self.state.nested_parse(StringList([_summary(getattr(evalcert, name))],
                                               source=f"evalcert.{name}"), 0, entry)
            row += entry
            body += row
        group += body
        return [table]


def setup(app):  # noqa: D103 - Sphinx entry point
    app.add_directive("evalcert-public-names", PublicNames)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
