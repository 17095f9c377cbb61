"""The end every result-writing verb shares: ``--json``, ``--plot`` and ``--html``, one
``wrote PATH`` line each, in that order.

The paths were checked before any work ran (:func:`evalcert.io.outputs.check_outputs`);
the figure is drawn only when ``--plot`` was given, the page only when ``--html`` was.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Mapping

__all__ = ["finish"]


def finish(args: argparse.Namespace, result: Any, *,
           plot: Callable[[str], Any] | None = None,
           page: Mapping[str, Any] | None = None) -> int:
    """Write the result as JSON (``args.json``), its figure (``plot(args.plot)``) and its
    page (``args.html``, with ``page`` as the page function's context and the command
    line); print ``wrote PATH`` for each; return the exit status 0.

    Parameters
    ----------
    args : argparse.Namespace
        The verb's arguments; ``json``, ``plot`` and ``html`` may be absent or ``None``.
    result : result object
        Has ``to_json``; with ``--html``, a page (:data:`evalcert.report.PAGES`).
    plot : callable, optional
        Draws the figure to the path it is given.
    page : mapping, optional
        Keyword arguments of the result's ``page_from_...`` function (``source=``, ...).

    Examples
    --------
    >>> import argparse, tempfile
    >>> from pathlib import Path
    >>> from evalcert import alarm
    >>> tmp = tempfile.TemporaryDirectory()
    >>> args = argparse.Namespace(json=str(Path(tmp.name) / "a.json"), plot=None,
    ...                           html=str(Path(tmp.name) / "a.html"), command_line="evalcert x")
    >>> finish(args, alarm({"a": {"x": 3, "y": 1}}, "1/2"))       # doctest: +ELLIPSIS
    wrote .../a.json
    wrote .../a.html
    0
    >>> tmp.cleanup()
    """
    if getattr(args, "json", None):
        result.to_json(args.json)
        print(f"wrote {args.json}")
    if plot is not None and getattr(args, "plot", None):
        plot(args.plot)
        print(f"wrote {args.plot}")
    if getattr(args, "html", None):
        from evalcert.report import write_page

        write_page(result, args.html, command=getattr(args, "command_line", None),
                   **dict(page or {}))
        print(f"wrote {args.html}")
    return 0
