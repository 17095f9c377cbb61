"""Shared pieces of every result object: JSON conversion, timings, tables.

Every solve and every alarm in evalcert returns a frozen dataclass that mixes in
:class:`ResultMixin`, which gives it ``to_dict()`` (JSON-able) and ``to_json()``;
each result class writes its own ``summary()``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import textwrap
import time
from contextlib import contextmanager
from fractions import Fraction
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

__all__ = ["to_jsonable", "ResultMixin", "PageMixin", "Timings", "Stopwatch", "format_table", "list_names",
           "wrap_lines", "MAX_LISTED", "MAX_WIDTH"]

#: names shown in a message or summary before "... and N more" (:func:`list_names`)
MAX_LISTED = 8
#: longest line of a summary (:func:`wrap_lines`, :func:`format_table`); wider is clipped on
#: the documentation's pages and wraps badly in a terminal
MAX_WIDTH = 100


def list_names(names: Iterable[Any], total: int | None = None, *, limit: int = MAX_LISTED,
               quote: bool = False) -> str:
    """``"a, b, c, ... and 597 more"``: the first ``limit`` names, then how many more.

    Every listing of names in evalcert's messages and summaries goes through this, so a
    5000-agent fit names 8 agents and the count, never 600 names on one line.

    Parameters
    ----------
    names : iterable
        The names (or the first of them, with ``total``).
    total : int, optional
        How many there are in all, when ``names`` holds only the first ones.
    limit : int
        Names shown.
    quote : bool
        Show each with ``repr`` (names that could be mistaken for numbers or blanks).

    Examples
    --------
    >>> list_names(["a", "b", "c"], limit=2)
    'a, b, ... and 1 more'
    >>> list_names(["q1", " "], quote=True)
    "'q1', ' '"
    >>> list_names(["m1"], total=600)
    'm1, ... and 599 more'
    """
    shown = [repr(str(n)) if quote else str(n) for n in itertools.islice(iter(names), limit)]
    if total is None:
        total = len(names) if hasattr(names, "__len__") else len(shown)  # type: ignore[arg-type]
    more = int(total) - len(shown)
    return ", ".join(shown) + (f", ... and {more} more" if more > 0 else "")


def wrap_lines(text: str, width: int = MAX_WIDTH) -> str:
    """Wrap every line of ``text`` longer than ``width`` (continuations indented 4 more).

    Shorter lines (tables from :func:`format_table`, which fit) are left as they are.

    Examples
    --------
    >>> print(wrap_lines("short\\n  " + "word " * 6, width=16))
    short
      word word word
          word word
          word
    """
    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip())]
        out += textwrap.wrap(line.strip(), width=width, initial_indent=indent,
                             subsequent_indent=indent + "    ", break_long_words=True,
                             break_on_hyphens=False) or [line[:width]]
    return "\n".join(out)


def to_jsonable(obj: Any) -> Any:
    """Convert ``obj`` recursively into plain JSON types.

    numpy arrays become (nested) lists, numpy scalars Python scalars, NaN and
    infinities ``None``, ``Fraction`` a string ``"p/q"``, dataclasses dicts,
    tuples and sets lists, and dict keys strings.

    Examples
    --------
    >>> from fractions import Fraction
    >>> to_jsonable({"T": Fraction(2, 3), "x": np.array([1.0, np.nan]), 1: (np.int64(2),)})
    {'T': '2/3', 'x': [1.0, None], '1': [2]}
    """
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if hasattr(obj, "to_dict") and not isinstance(obj, ResultMixin):
            return to_jsonable(obj.to_dict())
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if f.repr}
    if isinstance(obj, Fraction):
        return f"{obj.numerator}/{obj.denominator}"
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if hasattr(obj, "to_dict"):
        return to_jsonable(obj.to_dict())
    return obj


class ResultMixin:
    """Mixin for frozen result dataclasses: ``to_dict()``, ``to_json()``, ``__str__``.

    Subclasses implement ``summary() -> str``; its lines are wrapped at :data:`MAX_WIDTH`.

    Examples
    --------
    >>> import dataclasses
    >>> @dataclasses.dataclass(frozen=True)
    ... class Answer(ResultMixin):
    ...     value: float
    ...     def summary(self) -> str:
    ...         return f"answer {self.value}"
    >>> Answer(np.float64(0.5)).to_dict(), str(Answer(2.0))
    ({'value': 0.5}, 'answer 2.0')
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # every summary() a subclass writes comes back with lines of at most MAX_WIDTH
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("summary")
        if own is not None and not getattr(own, "_wraps_lines", False):
            @functools.wraps(own)
            def summary(self: Any, *args: Any, **kw: Any) -> str:
                return wrap_lines(own(self, *args, **kw))

            summary._wraps_lines = True  # type: ignore[attr-defined]
            cls.summary = summary  # type: ignore[method-assign]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-able dict of every field (arrays as lists)."""
        return {f.name: to_jsonable(getattr(self, f.name))
                for f in dataclasses.fields(self)  # type: ignore[arg-type]
                if f.repr}

    def to_json(self, path: str | None = None, *, indent: int = 2) -> str:
        """Serialise :meth:`to_dict` to JSON; also write it to ``path`` if given."""
        text = json.dumps(self.to_dict(), indent=indent)
        if path is not None:
            from evalcert.io.outputs import writing
            with writing(path) as tmp:
                tmp.write_text(text + "\n", encoding="utf-8")
        return text

    def summary(self) -> str:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def __str__(self) -> str:
        return self.summary()


class PageMixin:
    """``to_html()`` and ``_repr_html_`` for results that have a report page.

    Thin: both call :mod:`evalcert.report` (imported on first use), so a notebook shows the
    page that ``evalcert VERB --html FILE`` writes.

    Examples
    --------
    >>> from evalcert import alarm
    >>> res = alarm({"a": {"x": 3, "y": 1}}, "1/2")
    >>> res.to_html().startswith("<!DOCTYPE html>"), "<html" in res._repr_html_()
    (True, False)
    """

    def to_html(self, path: str | None = None, **context: Any) -> str:
        """The self-contained HTML page of this result (also written to ``path`` if given).

        ``context`` goes to the page function: ``source=`` (the file read), ``command=``
        (the command line that reproduces it), and per result what it knows about (see
        :mod:`evalcert.report`).
        """
        from evalcert.report import to_html

        return to_html(self, path, **context)

    def _repr_html_(self) -> str:
        from evalcert.report import repr_html

        return repr_html(self)


@dataclasses.dataclass(frozen=True)
class Timings(ResultMixin):
    """Wall-clock seconds spent in each phase of a solve.

    Attributes
    ----------
    build : float
        Building the model (validation excluded).
    compile : float
        Canonicalisation / matrix assembly (CVXPY compile, KKT setup).
    solve : float
        Time inside the solver.
    certify : float
        Recomputing the certificate.

    Examples
    --------
    >>> t = Timings(build=0.5, solve=1.25)
    >>> t.total, t.summary()
    (1.75, 'build 0.5000s, compile 0.0000s, solve 1.2500s, certify 0.0000s')
    """

    build: float = 0.0
    compile: float = 0.0
    solve: float = 0.0
    certify: float = 0.0

    @property
    def total(self) -> float:
        return self.build + self.compile + self.solve + self.certify

    def summary(self) -> str:
        return (f"build {self.build:.4f}s, compile {self.compile:.4f}s, "
                f"solve {self.solve:.4f}s, certify {self.certify:.4f}s")


class Stopwatch:
    """Accumulate named phase times: ``with sw("solve"): ...`` then ``sw.timings()``.

    Examples
    --------
    >>> sw = Stopwatch()
    >>> with sw("solve"):
    ...     _ = sum(range(1000))
    >>> list(sw.seconds), sw.timings().solve > 0
    (['solve'], True)
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - start

    def timings(self) -> Timings:
        return Timings(**{k: v for k, v in self.seconds.items()
                          if k in {"build", "compile", "solve", "certify"}})


def format_table(rows: Sequence[Sequence[Any]], headers: Sequence[str],
                 width: int = MAX_WIDTH) -> str:
    """Format rows as a plain-text table with right-aligned numbers.

    Floats are shown with 4 significant decimals; everything else with ``str``. A table
    wider than ``width`` narrows its widest columns (not below 12 characters or the
    header) and wraps their long cells onto continuation lines.

    Examples
    --------
    >>> print(format_table([["a", 1.5], ["bb", 2e-5]], ["name", "value"]))
    ... # doctest: +NORMALIZE_WHITESPACE
    name  value
    ----  ---------
       a     1.5000
      bb  2.000e-05
    >>> print(format_table([["solver", "newton (conditional likelihood)"]], ["field", "value"],
    ...                    width=24))  # doctest: +NORMALIZE_WHITESPACE
    field   value
    ------  ----------------
    solver  newton
            (conditional
             likelihood)
    """
    def cell(v: Any) -> str:
        if isinstance(v, (float, np.floating)):
            if not math.isfinite(v):
                return "nan"
            return f"{v:.4f}" if v == 0 or 1e-3 <= abs(v) < 1e6 else f"{v:.3e}"
        return str(v)

    text = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[k]) for r in text]) for k, h in enumerate(headers)]
    floors = [max(len(h), 12) for h in headers]
    while sum(widths) + 2 * (len(widths) - 1) > width:
        k = max(range(len(widths)), key=lambda j: widths[j] - floors[j])
        if widths[k] <= floors[k]:
            break
        widths[k] -= 1
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)),
             "  ".join("-" * w for w in widths)]
    for r in text:
        parts = [textwrap.wrap(v, w, break_on_hyphens=False) or [""] if len(v) > w else [v]
                 for v, w in zip(r, widths)]
        for n in range(max(len(p) for p in parts)):
            lines.append("  ".join((p[n] if n < len(p) else "").rjust(w)
                                   for p, w in zip(parts, widths)))
    return "\n".join(lines)
