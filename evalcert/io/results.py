"""What the tools' readers return: a :class:`ScoreMatrix` and a report of what was read.

Every results reader (lm-eval, HELM, Inspect, Every Eval Ever, py-irt) feeds one
:class:`CellCollector` with ``(model, item, score)`` cells and with the cells it could not
score (an errored sample, a null metric), then calls :meth:`CellCollector.finish`, which
builds the matrix from cells (never a models x items array) and a :class:`ReadReport`
that says how many cells are missing and errored per model and which rows were skipped
and why. Nothing is dropped without a count: a missing cell is not observed in the matrix
and is counted in ``report.missing``; an item (or model) left with no score at all is
removed from the matrix and named in ``report.notes``.

Example
-------
>>> c = CellCollector("demo", "py-irt")
>>> c.add("m1", "q1", 1.0); c.add("m1", "q2", 0.0); c.add("m2", "q1", 1.0)
>>> c.add_missing("m2", "q2", errored=True)
>>> read = c.finish()
>>> read.matrix.shape, read.matrix.n_observed, read.report.errored
((2, 2), 3, {'m1': 0, 'm2': 1})
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np

from evalcert.errors import InputError
from evalcert.results import ResultMixin

__all__ = ["ReadReport", "ResultsRead", "CellCollector"]

_LISTED = 8


@dataclasses.dataclass(frozen=True)
class ReadReport(ResultMixin):
    """What a results reader read: counts per model, skipped rows and why.

    Attributes
    ----------
    source, format : str
        The path read and the format (``lm-eval``, ``helm``, ``inspect``, ...).
    models : tuple of str
        Models in the matrix (order of first appearance).
    n_items, n_cells : int
        Items in the matrix and observed (scored) cells.
    missing : dict
        ``{model: cells read but without a score}`` (errored samples included).
    errored : dict
        ``{model: cells whose sample errored}`` (a subset of ``missing``).
    skipped : dict
        ``{reason: count}`` of what was not read as cells, the reason naming the unit
        (``"rows of filter X (not Y)"``, ``"files of older runs"``, ...).
    notes : tuple of str
        Choices made (the metric, the filter, epochs reduced) and removals.

    Examples
    --------
    >>> r = ReadReport("runs/", "inspect", ("m1", "m2"), 3, 5, {"m1": 0, "m2": 1},
    ...                {"m1": 0, "m2": 1}, {})
    >>> print(r.summary())
    read inspect from runs/: 2 models x 3 items, 5 scored cells
      m2: 1 missing cells (1 errored samples)
    """

    source: str
    format: str
    models: tuple[str, ...]
    n_items: int
    n_cells: int
    missing: dict[str, int]
    errored: dict[str, int]
    skipped: dict[str, int]
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        """A few lines: models, items, cells, then missing/errored per model and skips."""
        lines = [f"read {self.format} from {self.source}: {len(self.models)} models x "
                 f"{self.n_items} items, {self.n_cells} scored cells"]
        for model in self.models:
            if self.missing.get(model) or self.errored.get(model):
                lines.append(f"  {model}: {self.missing[model]} missing cells "
                             f"({self.errored.get(model, 0)} errored samples)")
        for reason, rows in self.skipped.items():
            lines.append(f"  skipped {rows} {reason}")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class ResultsRead(ResultMixin):
    """A score matrix read from a tool's files and the report of the reading.

    Attributes
    ----------
    matrix : ScoreMatrix
        Models (agents) x items, observed cells only.
    report : ReadReport

    Examples
    --------
    >>> c = CellCollector("demo", "eee")
    >>> c.add("m", "q1", 1.0)
    >>> c.finish().to_long().values.tolist()
    [['m', 'q1', 1.0]]
    """

    matrix: Any
    report: ReadReport

    def summary(self) -> str:
        return self.report.summary()

    def to_dict(self) -> dict:
        return {"report": self.report.to_dict(), "shape": list(self.matrix.shape)}

    def to_long(self):
        """The long table ``model, item, score`` (observed cells, row-major)."""
        frame = self.matrix.to_long()
        return frame.rename(columns={frame.columns[0]: "model"})


class CellCollector:
    """Gathers ``(model, item, score)`` cells with names coded as they come.

    Parameters
    ----------
    source, format : str
        For the report and the messages.

    Examples
    --------
    >>> c = CellCollector("demo", "helm")
    >>> c.add("m", "q1", 0.5); c.add_missing("m", "q2"); c.skip("rows of another split", 3)
    >>> read = c.finish()
    >>> read.matrix.items, read.report.missing, read.report.skipped
    (('q1',), {'m': 1}, {'rows of another split': 3})
    """

    def __init__(self, source: str, format: str) -> None:
        self.source, self.format = source, format
        self.models: dict[str, int] = {}
        self.items: dict[str, int] = {}
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.scores: list[float] = []
        self.missing: Counter = Counter()
        self.errored: Counter = Counter()
        self.missing_cells: set[tuple[int, int]] = set()
        self.skipped: Counter = Counter()
        self.notes: list[str] = []

    def _code(self, names: dict[str, int], name: str) -> int:
        code = names.get(name)
        if code is None:
            code = names[name] = len(names)
        return code

    def add(self, model: str, item: str, score: float) -> None:
        """One scored cell."""
        self.rows.append(self._code(self.models, model))
        self.cols.append(self._code(self.items, item))
        self.scores.append(score)

    def add_missing(self, model: str, item: str, *, errored: bool = False) -> None:
        """A cell read without a score (``errored``: its sample failed)."""
        cell = (self._code(self.models, model), self._code(self.items, item))
        if cell in self.missing_cells:
            raise InputError(f"{self.source}: ({model}, {item}) appears twice; each model "
                             "scores each item once (pick one run, filter or epoch)")
        self.missing_cells.add(cell)
        self.missing[model] += 1
        if errored:
            self.errored[model] += 1

    def skip(self, reason: str, rows: int = 1) -> None:
        """Rows or files not read as cells; ``reason`` names the unit and the cause."""
        if rows:
            self.skipped[reason] += rows

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def finish(self, bounds: tuple[float, float] | None = None) -> ResultsRead:
        """The matrix (cells only) and the report.

        ``bounds`` defaults to ``(-1, 1)`` widened to the range of the scores read.
        Duplicate (model, item) cells are refused, naming a few.
        """
        from evalcert.data import ScoreMatrix

        rows = np.asarray(self.rows, dtype=np.int64)
        cols = np.asarray(self.cols, dtype=np.int64)
        scores = np.asarray(self.scores, dtype=float)
        models, items = list(self.models), list(self.items)
        if not len(scores):
            raise InputError(f"{self.source}: no scored cells in this {self.format} data "
                             f"({sum(self.missing.values())} cells without a score, "
                             f"{sum(self.skipped.values())} rows skipped); check the options")
        bad = ~np.isfinite(scores)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise InputError(f"{self.source}: {int(bad.sum())} scores are not finite (first "
                             f"({models[rows[k]]}, {items[cols[k]]}) = {scores[k]}); "
                             "fix or drop them")
        key = rows * len(items) + cols
        order = np.argsort(key, kind="stable")
        dup = np.flatnonzero(key[order][1:] == key[order][:-1])
        if len(dup):
            shown = ", ".join(f"({models[rows[order[k]]]}, {items[cols[order[k]]]})"
                              for k in dup[:_LISTED])
            raise InputError(f"{self.source}: {len(dup)} (model, item) cells appear twice: "
                             f"{shown}; each model scores each item once (pick one run, "
                             "filter or epoch)")
        if self.missing_cells:
            scored = set(key.tolist())
            both = [c for c in self.missing_cells if c[0] * len(items) + c[1] in scored]
            if both:
                m, i = both[0]
                raise InputError(f"{self.source}: ({models[m]}, {items[i]}) is both scored and "
                                 "missing; each model scores each item once")
        # models or items with no score at all are not in the matrix: said, never silent
        used_rows = np.bincount(rows, minlength=len(models)) > 0
        used_cols = np.bincount(cols, minlength=len(items)) > 0
        if not used_cols.all():
            gone = [items[j] for j in np.flatnonzero(~used_cols)]
            self.note(f"{len(gone)} items have no score from any model and are left out: "
                      + ", ".join(gone[:_LISTED]) + (" ..." if len(gone) > _LISTED else ""))
        if not used_rows.all():
            gone = [models[k] for k in np.flatnonzero(~used_rows)]
            self.note(f"{len(gone)} models have no score at all and are left out: "
                      + ", ".join(gone[:_LISTED]))
        row_map = np.cumsum(used_rows) - 1
        col_map = np.cumsum(used_cols) - 1
        rows, cols = row_map[rows], col_map[cols]
        kept_models = [m for m, u in zip(models, used_rows) if u]
        kept_items = [i for i, u in zip(items, used_cols) if u]
        if bounds is None:
            bounds = (min(-1.0, float(scores.min())), max(1.0, float(scores.max())))
        n_missing = sum(self.missing.values())
        matrix = ScoreMatrix.from_cells(rows, cols, scores, kept_models, kept_items,
                                        bounds=bounds, n_missing=n_missing)
        report = ReadReport(
            source=self.source, format=self.format, models=tuple(kept_models),
            n_items=len(kept_items), n_cells=int(len(scores)),
            missing={m: int(self.missing.get(m, 0)) for m in models},
            errored={m: int(self.errored.get(m, 0)) for m in models},
            skipped=dict(self.skipped), notes=tuple(self.notes))
        return ResultsRead(matrix, report)
