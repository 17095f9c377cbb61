"""What a report page is made of: a title, a verdict, sections of blocks, provenance.

Every page of :mod:`evalcert.report` is a :class:`Page` built from a result object by a small
``page_from_...`` function, then rendered by one Jinja2 template
(:func:`evalcert.report.rendering.render`). The blocks are data, not HTML: a :class:`Table`
keeps its numbers (each shown rounded, with the full value in the cell's ``data-value``), a
:class:`Figure` its image as a ``data:`` URI, a :class:`Text` plain text (escaped when
rendered).

Examples
--------
>>> page = Page("demo", Verdict("all good", "ok"),
...             (Section("numbers", (Table(("name", "value"), (("a", 0.5),), id="numbers"),)),),
...             Provenance())
>>> page.sections[0].blocks[0].rows
(('a', 0.5),)
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import platform
import sys
from importlib import metadata
from typing import Any, Literal, Sequence, Union

__all__ = ["Table", "Figure", "Text", "Facts", "Section", "Verdict", "Provenance", "Page",
           "Block", "versions", "table_from_frame"]

#: the libraries every page names with their versions (others per page)
CORE_LIBRARIES = ("evalcert", "numpy", "scipy", "pandas", "matplotlib", "jinja2")


@dataclasses.dataclass(frozen=True)
class Table:
    """A table: ``headers`` and ``rows`` of plain values (str, int, float, Fraction, bool).

    ``id`` names the table in the page (``<table id=...>``); ``note`` says what is not
    shown (e.g. ``"30 of 200 models shown"``). ``shade`` makes it a heat-map table: one
    level per cell, an int from -4 to 4 (the colour's direction and strength; ``None``
    leaves the cell plain), shaped like ``rows``.

    Examples
    --------
    >>> Table(("link", "median"), (("identity", 0.08),), id="links").rows[0][1]
    0.08
    >>> Table(("model", "a"), (("a", None),), shade=((None, None),)).shade[0][1] is None
    True
    """

    headers: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    caption: str = ""
    id: str = ""
    note: str = ""
    shade: tuple[tuple[int | None, ...], ...] = ()

    def __post_init__(self) -> None:
        if self.shade and ([len(r) for r in self.shade] != [len(r) for r in self.rows]):
            raise ValueError("shade must have one level per cell of rows")
        if any(v is not None and not -4 <= v <= 4 for r in self.shade for v in r):
            raise ValueError("shade levels are ints from -4 to 4")


@dataclasses.dataclass(frozen=True)
class Figure:
    """An image embedded as a ``data:`` URI (:func:`evalcert.report.figures.figure_uri`).

    Examples
    --------
    >>> Figure("data:image/png;base64,iVBORw0KGgo=", alt="a figure", half=True).half
    True
    """

    uri: str
    alt: str
    caption: str = ""
    id: str = ""
    half: bool = False          #: half the page's width (two side by side)


@dataclasses.dataclass(frozen=True)
class Text:
    """Plain text: ``"p"`` a paragraph, ``"pre"`` preformatted (the text summary), ``"note"``
    a muted remark, ``"list"`` one bullet per line.

    Examples
    --------
    >>> Text("one bullet per line", "list").kind
    'list'
    """

    text: str
    kind: Literal["p", "pre", "note", "list"] = "p"


@dataclasses.dataclass(frozen=True)
class Facts:
    """Label-value pairs shown as a definition list; ``id`` names the list.

    Examples
    --------
    >>> dict(Facts((("objective", 1.5), ("solver", "native"))).items)["solver"]
    'native'
    """

    items: tuple[tuple[str, Any], ...]
    id: str = ""


Block = Union[Table, Figure, Text, Facts]


@dataclasses.dataclass(frozen=True)
class Section:
    """A titled part of the page: blocks in order.

    Examples
    --------
    >>> Section("Notes", (Text("nothing to add", "note"),), id="notes").title
    'Notes'
    """

    title: str
    blocks: tuple[Block, ...]
    id: str = ""


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The first screen: a headline, its tone, what it means, key facts and blocks.

    ``status`` colours the headline: ``"ok"`` (passed, silent), ``"alarm"`` (fires, failed),
    ``"warn"`` (not converged, partial), ``"info"`` (no judgement).

    Examples
    --------
    >>> Verdict("Certificate PASSED", "ok", "the fit is optimal to 1e-9").status
    'ok'
    """

    headline: str
    status: Literal["ok", "alarm", "warn", "info"] = "info"
    meaning: str = ""
    facts: Facts | None = None
    blocks: tuple[Block, ...] = ()


def source_inputs(source: str | None, fmt: str | None = None,
                  read: str | None = None) -> list[tuple[str, Any]]:
    """The first provenance lines of a page: the file (or "in memory"), its format and
    what the reader said it read, each only when known.

    Examples
    --------
    >>> source_inputs("s.csv", "wide")
    [('file', 's.csv'), ('format', 'wide')]
    >>> source_inputs(None)
    [('file', 'in memory (no file)')]
    """
    inputs: list[tuple[str, Any]] = [("file", source or "in memory (no file)")]
    if fmt:
        inputs.append(("format", fmt))
    if read:
        inputs.append(("read", read))
    return inputs


def versions(extra: Sequence[str] = ()) -> tuple[tuple[str, str], ...]:
    """Python and the installed versions of :data:`CORE_LIBRARIES` and ``extra``.

    Examples
    --------
    >>> dict(versions(("numpy",)))["numpy"] != ""
    True
    """
    out = [("python", platform.python_version())]
    for name in dict.fromkeys((*CORE_LIBRARIES, *extra)):
        try:
            out.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            if name == "evalcert":
                from evalcert import __version__

                out.append((name, __version__))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class Provenance:
    """How the page's numbers were made: the inputs read, what was dropped and why, the
    versions, and the exact command that reproduces them (``None`` in a Python session).

    Examples
    --------
    >>> p = Provenance((("file", "scores.csv"),), command="evalcert fit scores.csv")
    >>> p.command, dict(p.versions)["evalcert"] != ""
    ('evalcert fit scores.csv', True)
    """

    inputs: tuple[tuple[str, Any], ...] = ()
    dropped: tuple[str, ...] = ()
    command: str | None = None
    versions: tuple[tuple[str, str], ...] = dataclasses.field(default_factory=versions)
    created: str = dataclasses.field(default_factory=lambda: _dt.datetime.now(
        _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    platform: str = dataclasses.field(default_factory=lambda: f"{platform.system()} "
                                      f"{platform.machine()}, Python {sys.version.split()[0]}")


@dataclasses.dataclass(frozen=True)
class Page:
    """One self-contained page: ``title``, the :class:`Verdict`, :class:`Section` s and the
    :class:`Provenance` (rendered by :func:`evalcert.report.rendering.render`).

    Examples
    --------
    >>> page = Page("demo", Verdict("fine"), (), Provenance(), subtitle="nothing computed")
    >>> page.title, page.verdict.status
    ('demo', 'info')
    """

    title: str
    verdict: Verdict
    sections: tuple[Section, ...]
    provenance: Provenance
    subtitle: str = ""


def table_from_frame(frame: Any, *, caption: str = "", id: str = "", limit: int = 50,
                     columns: Sequence[str] | None = None) -> Table:
    """A :class:`Table` of the first ``limit`` rows of a DataFrame (the note says how many
    are not shown).

    Examples
    --------
    >>> import pandas as pd
    >>> t = table_from_frame(pd.DataFrame({"a": [1, 2, 3]}), limit=2)
    >>> t.rows, t.note
    (((1,), (2,)), 'first 2 of 3 rows shown')
    """
    if columns is not None:
        frame = frame[list(columns)]
    shown = frame.head(limit)
    rows = tuple(tuple(_plain(v) for v in row) for row in shown.itertuples(index=False))
    note = f"first {len(shown)} of {len(frame)} rows shown" if len(frame) > limit else ""
    return Table(tuple(str(c) for c in frame.columns), rows, caption=caption, id=id, note=note)


def _plain(value: Any) -> Any:
    """numpy scalars as Python scalars (the template formats them)."""
    item = getattr(value, "item", None)
    return item() if callable(item) and not isinstance(value, (str, bytes)) else value
