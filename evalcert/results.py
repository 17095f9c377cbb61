"""Shared pieces of every result object: JSON conversion, timings, tables.

Every solve and every alarm in evalcert returns a frozen dataclass that mixes in
:class:`ResultMixin`, which gives it ``to_dict()`` (JSON-able) and ``to_json()``;
each result class writes its own ``summary()``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from contextlib import contextmanager
from fractions import Fraction
from typing import Any, Iterator, Sequence

import numpy as np

__all__ = ["to_jsonable", "ResultMixin", "Timings", "Stopwatch", "format_table"]


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

    Subclasses implement ``summary() -> str``.

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


def format_table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    """Format rows as a plain-text table with right-aligned numbers.

    Floats are shown with 4 significant decimals; everything else with ``str``.

    Examples
    --------
    >>> print(format_table([["a", 1.5], ["bb", 2e-5]], ["name", "value"]))
    ... # doctest: +NORMALIZE_WHITESPACE
    name  value
    ----  ---------
       a     1.5000
      bb  2.000e-05
    """
    def cell(v: Any) -> str:
        if isinstance(v, (float, np.floating)):
            if not math.isfinite(v):
                return "nan"
            return f"{v:.4f}" if v == 0 or 1e-3 <= abs(v) < 1e6 else f"{v:.3e}"
        return str(v)

    text = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[k]) for r in text]) for k, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)),
             "  ".join("-" * w for w in widths)]
    for r in text:
        lines.append("  ".join(v.rjust(w) for v, w in zip(r, widths)))
    return "\n".join(lines)
