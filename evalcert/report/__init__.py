"""One self-contained HTML page per run, rendered from the result objects.

A page puts the verdict in the first screen, then the figures and tables, then the inputs
read (file, format, counts, what was dropped and why), the versions and the exact command
that reproduces it. It is one file: CSS inline, figures as ``data:`` URIs, no script, no
font and nothing else fetched, so it opens offline and can be mailed as is.

``evalcert fit|audit|irt fit|irt cat|compare|rank|curl|bench --html FILE`` writes it; in Python,
``result.to_html()`` returns it and a notebook shows it (``_repr_html_``). :func:`page_for`
picks the page function for a result; each job has one small ``page_from_...`` function
(:mod:`evalcert.report.fit`, :mod:`~evalcert.report.audit`, :mod:`~evalcert.report.irt`,
:mod:`~evalcert.report.curl`, :mod:`~evalcert.report.bench`, :mod:`~evalcert.report.compare`
for ``compare`` and ``rank``, :mod:`~evalcert.report.cat`) that builds a generic
:class:`~evalcert.report.page.Page` (title, verdict, sections of tables, figures and text,
provenance) for :func:`~evalcert.report.rendering.render`.

A page for another result: write ``page_from_<job>(result, *, source=None, command=None) ->
Page`` in ``evalcert/report/<job>.py`` from the blocks of :mod:`evalcert.report.page`
(verdict first), add the result class name to :data:`PAGES`, mix
:class:`~evalcert.results.PageMixin` into the result, and in the verb add
:func:`~evalcert.commands._args.add_html_option`, ``"--html"`` to its ``check_outputs`` call
and end with :func:`evalcert.commands._finish.finish` (it writes ``--json``, ``--plot`` and
``--html``); ``tests/report/conftest.py`` then gets one run of the verb.

Examples
--------
>>> import numpy as np
>>> from evalcert import ClippedLinear, ScoreMatrix
>>> S = ScoreMatrix.from_array(np.array([[0.9, 0.5, np.nan], [0.1, -0.3, 0.0],
...                                      [1.0, 1.0, 0.8]]))
>>> html = to_html(ClippedLinear().fit(S).result_)
>>> "Certificate PASSED" in html, "<script" in html
(True, False)
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from evalcert.report.page import (Facts, Figure, Page, Provenance, Section, Table, Text,
                                  Verdict)
from evalcert.report.rendering import render, render_fragment, write_html

__all__ = ["Page", "Verdict", "Section", "Table", "Figure", "Text", "Facts", "Provenance",
           "page_for", "to_html", "repr_html", "render", "render_fragment", "write_html",
           "write_page", "PAGES"]

#: result class name -> "module:function" building its page (imported when used)
PAGES = {
    "ClippedLinearResult": "evalcert.report.fit:page_from_fit",
    "AuditReport": "evalcert.report.audit:page_from_audit",
    "AlarmResult": "evalcert.report.audit:page_from_audit",
    "IRTResult": "evalcert.report.irt:page_from_irt",
    "CurlResult": "evalcert.report.curl:page_from_curl",
    "BenchmarkResult": "evalcert.report.bench:page_from_bench",
    "CompareResult": "evalcert.report.compare:page_from_compare",
    "RankResult": "evalcert.report.compare:page_from_rank",
    "CATResult": "evalcert.report.cat:page_from_cat",
}


def page_for(result: Any, **context: Any) -> Page:
    """The :class:`Page` of ``result``; ``context`` goes to its ``page_from_...`` function
    (``source=`` the file read, ``command=`` the command line, ...).

    Raises
    ------
    TypeError
        No page is defined for this kind of result.

    Examples
    --------
    >>> from evalcert import alarm
    >>> page_for(alarm({"a": {"x": 3, "y": 1}}, "1/2"), command="python me.py").provenance.command
    'python me.py'
    >>> page_for(3)
    Traceback (most recent call last):
    TypeError: no HTML page for int; pages exist for AlarmResult, AuditReport, ...
    """
    for cls in type(result).__mro__:
        target = PAGES.get(cls.__name__)
        if target is not None:
            module, name = target.split(":")
            return getattr(importlib.import_module(module), name)(result, **context)
    raise TypeError(f"no HTML page for {type(result).__name__}; pages exist for "
                    f"{', '.join(sorted(PAGES))}")


def to_html(result: Any, path: str | os.PathLike[str] | None = None, **context: Any) -> str:
    """The page of ``result`` as one HTML document; also written to ``path`` if given.

    Examples
    --------
    >>> from evalcert import alarm
    >>> to_html(alarm({"a": {"x": 3, "y": 1}}, "1/2"))[:15]
    '<!DOCTYPE html>'
    """
    page = page_for(result, **context)
    if path is not None:
        write_html(page, path)
    return render(page)


def repr_html(result: Any) -> str:
    """The page as a ``<div>`` for a notebook (``_repr_html_``).

    Examples
    --------
    >>> from evalcert import alarm
    >>> repr_html(alarm({"a": {"x": 3, "y": 1}}, "1/2")).startswith('<div class="evalcert-page">')
    True
    """
    return render_fragment(page_for(result))


def write_page(result: Any, path: str | os.PathLike[str], **context: Any) -> Path:
    """Write the page of ``result`` to ``path`` (checked beforehand by the caller).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from evalcert import alarm
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_page(alarm({"a": {"x": 3, "y": 1}}, "1/2"), Path(tmp) / "a.html",
    ...                      source="counts.json")
    ...     "counts.json" in out.read_text(encoding="utf-8")
    True
    """
    return write_html(page_for(result, **context), path)
