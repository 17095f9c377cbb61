"""Inputs of the logic of unsupervised evaluation: label counts and aligned decisions.

Two kinds of input (paper 003, Sec. II):

* :class:`LabelCounts` -- the M=1 summaries ``(R_{l_1,i}, ..., R_{l_R,i})``: how many
  times each grader ``i`` answered each label on a test of ``Q`` items;
* :class:`Decisions` -- question-aligned decisions (a long table ``item,grader,label``),
  needed for the M=2 pair counts of App. C; they project onto :class:`LabelCounts`.

Everything is validated here, once, before any counting or solving; later modules
trust these objects. Files are parsed as data only (pandas CSV reader, :mod:`json`).
"""

from __future__ import annotations

import dataclasses
import json
import numbers
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from evalcert.errors import InputError
from evalcert.results import ResultMixin, format_table

__all__ = ["LabelCounts", "Decisions", "label_counts", "decisions_from_frame",
           "read_decisions", "read_label_counts", "load_audit_input", "as_label_counts",
           "as_threshold"]

MISSING_POLICIES = ("error", "drop")


def _declared_labels(labels: Sequence[str] | str | None) -> tuple[str, ...] | None:
    if labels is None:
        return None
    if isinstance(labels, str):
        labels = [s for s in labels.split(",")]
    out = tuple(str(s).strip() for s in labels)
    if any(not s for s in out):
        raise InputError(f"empty label name in declared labels {list(out)}; "
                         "give non-empty, comma-separated names")
    dup = sorted({s for s in out if out.count(s) > 1})
    if dup:
        raise InputError(f"labels {dup} are declared more than once; declare each label once")
    return out


def _check_label_set(labels: tuple[str, ...]) -> None:
    if len(labels) < 2:
        raise InputError(f"the logic needs R >= 2 labels but got {list(labels)}; declare the "
                         "full label set (e.g. labels=['a', 'b', 'tie'] or --labels a,b,tie)")


@dataclasses.dataclass(frozen=True)
class LabelCounts(ResultMixin):
    """M=1 summaries: label counts ``R_{l,i}`` of each grader on a common test.

    Attributes
    ----------
    labels : tuple of str
        The R >= 2 labels, in a fixed order used by every array below.
    graders : tuple of str
        The N >= 1 graders.
    counts : tuple of tuple of int
        ``counts[i][l]`` = number of items grader ``i`` labelled ``labels[l]``.
    """

    labels: tuple[str, ...]
    graders: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]

    @property
    def n_items(self) -> int:
        """Test size Q (every grader's counts sum to it)."""
        return sum(self.counts[0])

    @property
    def array(self) -> np.ndarray:
        """Counts as an ``(N, R)`` int64 array."""
        return np.array(self.counts, dtype=np.int64)

    def summary(self) -> str:
        rows = [[g, *c, sum(c)] for g, c in zip(self.graders, self.counts)]
        return format_table(rows, ["grader", *self.labels, "Q"])


@dataclasses.dataclass(frozen=True)
class Decisions(ResultMixin):
    """Question-aligned decisions: ``codes[k][i]`` is the label index grader ``i`` gave item ``k``.

    Attributes
    ----------
    items, graders, labels : tuple of str
    codes : tuple of tuple of int
        ``(Q, N)`` label indices into ``labels``.
    """

    items: tuple[str, ...]
    graders: tuple[str, ...]
    labels: tuple[str, ...]
    codes: tuple[tuple[int, ...], ...]

    @property
    def array(self) -> np.ndarray:
        """Label indices as a ``(Q, N)`` int64 array."""
        return np.array(self.codes, dtype=np.int64).reshape(len(self.items), len(self.graders))

    def label_counts(self) -> LabelCounts:
        """Project onto the M=1 summaries (paper Sec. II)."""
        arr = self.array
        counts = tuple(tuple(int(v) for v in np.bincount(arr[:, i], minlength=len(self.labels)))
                       for i in range(len(self.graders)))
        return LabelCounts(self.labels, self.graders, counts)

    def pair_counts(self, i: int, j: int) -> np.ndarray:
        """Observed M=2 counts ``R_{(l_a)_i,(l_b)_j}`` as an ``(R, R)`` array (App. C, Eq. 14)."""
        r = len(self.labels)
        arr = self.array
        return np.bincount(arr[:, i] * r + arr[:, j], minlength=r * r).reshape(r, r)

    def summary(self) -> str:
        return (f"{len(self.items)} items x {len(self.graders)} graders, labels "
                f"{', '.join(self.labels)}\n" + self.label_counts().summary())


def _as_count(value: Any, grader: str, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise InputError(f"count of grader {grader!r} for label {label!r} is {value!r}, "
                             "not an integer; give whole numbers of items")
    if value < 0:
        raise InputError(f"count of grader {grader!r} for label {label!r} is negative "
                         f"({value}); counts are numbers of items, >= 0")
    return int(value)


def label_counts(data: Mapping[str, Mapping[str, Any]],
                 labels: Sequence[str] | str | None = None) -> LabelCounts:
    """Validate a ``{grader: {label: count}}`` mapping into :class:`LabelCounts`.

    Labels a grader never used may be omitted (count 0) when ``labels`` declares them.

    Examples
    --------
    >>> label_counts({"gpt4": {"a": 4, "b": 18, "tie": 3}}).n_items
    25
    """
    declared = _declared_labels(labels)
    if not isinstance(data, Mapping) or not data:
        raise InputError("no graders given: pass a non-empty {grader: {label: count}} mapping")
    seen: list[str] = []
    for grader, row in data.items():
        if not isinstance(row, Mapping):
            raise InputError(f"counts of grader {grader!r} must be a {{label: count}} mapping, "
                             f"got {type(row).__name__}")
        seen.extend(str(k) for k in row if str(k) not in seen)
    if declared is not None:
        bad = {str(g): sorted(str(k) for k in row if str(k) not in declared)
               for g, row in data.items()}
        bad = {g: v for g, v in bad.items() if v}
        if bad:
            raise InputError(f"labels outside the declared set {list(declared)}: {bad}; "
                             "fix the labels or declare them")
    lab = declared if declared is not None else tuple(seen)
    _check_label_set(lab)
    counts = tuple(tuple(_as_count(row.get(label, 0), str(g), label) for label in lab)
                   for g, row in data.items())
    return _finish_counts(lab, tuple(str(g) for g in data), counts)


def _finish_counts(lab: tuple[str, ...], graders: tuple[str, ...],
                   counts: tuple[tuple[int, ...], ...]) -> LabelCounts:
    totals = {g: sum(c) for g, c in zip(graders, counts)}
    if len(set(totals.values())) > 1:
        raise InputError(f"graders' counts sum to different test sizes Q: {totals}; every "
                         "grader must label the same items (fix or drop the short graders)")
    if next(iter(totals.values())) == 0:
        raise InputError("empty test: every grader has zero labelled items")
    return LabelCounts(lab, graders, counts)


def decisions_from_frame(frame: pd.DataFrame, labels: Sequence[str] | str | None = None,
                         on_missing: str = "error") -> Decisions:
    """Validate a long table with columns ``item, grader, label`` into :class:`Decisions`.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per (item, grader) decision; extra columns are ignored.
    labels : sequence of str, optional
        Declared label set (order kept); default: labels in order of first appearance.
    on_missing : {"error", "drop"}
        What to do with items some grader skipped: raise, or drop those items for everyone.
    """
    if on_missing not in MISSING_POLICIES:
        raise InputError(f"on_missing={on_missing!r}; use one of {MISSING_POLICIES}")
    missing_cols = [c for c in ("item", "grader", "label") if c not in frame.columns]
    if missing_cols:
        raise InputError(f"decision table lacks columns {missing_cols}; give a long table "
                         "with columns item,grader,label")
    df = frame[["item", "grader", "label"]].copy()
    if df.isna().any().any():
        rows = [int(k) for k in np.flatnonzero(df.isna().any(axis=1).to_numpy())[:10]]
        raise InputError(f"empty cells in decision rows {rows}; a skipped decision is a "
                         "missing row, not an empty label")
    df = df.astype(str).apply(lambda s: s.str.strip())
    if df.empty:
        raise InputError("empty test: the decision table has no rows")
    dup = df[df.duplicated(["item", "grader"], keep=False)]
    if not dup.empty:
        pairs = sorted(set(zip(dup["item"], dup["grader"])))[:10]
        raise InputError(f"(item, grader) pairs decided more than once: {pairs}; keep one "
                         "decision per grader and item")
    declared = _declared_labels(labels)
    found = list(dict.fromkeys(df["label"]))
    if declared is not None:
        bad = sorted(set(found) - set(declared))
        if bad:
            where = df[df["label"].isin(bad)].head(10)
            raise InputError(f"labels {bad} are outside the declared set {list(declared)} "
                             f"(e.g. items {list(where['item'])}, graders "
                             f"{sorted(set(where['grader']))}); fix them or declare them")
    lab = declared if declared is not None else tuple(found)
    _check_label_set(lab)
    wide = df.pivot(index="item", columns="grader", values="label")
    wide = wide.reindex(index=list(dict.fromkeys(df["item"])),
                        columns=list(dict.fromkeys(df["grader"])))
    holes = wide.isna()
    if holes.any().any():
        if on_missing == "error":
            skipped = {g: list(wide.index[holes[g]][:10]) for g in wide.columns
                       if holes[g].any()}
            raise InputError(f"graders skipped items: {skipped}; pass on_missing='drop' "
                             "(--on-missing drop) to drop those items for every grader")
        wide = wide[~holes.any(axis=1)]
        if wide.empty:
            raise InputError("empty test: no item was decided by every grader")
    index = {name: k for k, name in enumerate(lab)}
    codes = tuple(tuple(index[v] for v in row) for row in wide.itertuples(index=False))
    return Decisions(tuple(wide.index), tuple(wide.columns), lab, codes)


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read decisions CSV {path}: {exc}") from exc


def read_decisions(path: str | Path, labels: Sequence[str] | str | None = None,
                   on_missing: str = "error", graders: Sequence[str] | None = None) -> Decisions:
    """Read decisions from CSV: long (``item,grader,label``) or wide (``item`` + one column
    per grader; ``graders`` picks the columns, default all others)."""
    path = Path(path)
    frame = _read_csv(path)
    if "grader" not in frame.columns and "item" in frame.columns:
        cols = list(graders) if graders is not None else [c for c in frame.columns
                                                          if c != "item"]
        absent = [c for c in cols if c not in frame.columns]
        if absent or not cols:
            raise InputError(f"wide decision table {path} lacks grader columns {absent or cols}")
        frame = frame.melt(id_vars="item", value_vars=cols, var_name="grader",
                           value_name="label").dropna(subset=["label"])
    return decisions_from_frame(frame, labels=labels, on_missing=on_missing)


def read_label_counts(path: str | Path, labels: Sequence[str] | str | None = None) -> LabelCounts:
    """Read a JSON summary: ``{grader: {label: count}}`` or
    ``{"labels": [...], "counts": {grader: {label: count}}}``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read label-count JSON {path}: {exc}") from exc
    if isinstance(data, dict) and "counts" in data:
        labels = labels if labels is not None else data.get("labels")
        data = data["counts"]
    return label_counts(data, labels=labels)


def load_audit_input(path: str | Path, labels: Sequence[str] | str | None = None,
                     on_missing: str = "error", graders: Sequence[str] | None = None
                     ) -> LabelCounts | Decisions:
    """Read ``.json`` as label counts, anything else as a decisions CSV."""
    if Path(path).suffix.lower() == ".json":
        return read_label_counts(path, labels=labels)
    return read_decisions(path, labels=labels, on_missing=on_missing, graders=graders)


def as_label_counts(data: LabelCounts | Decisions | Mapping[str, Mapping[str, Any]],
                    labels: Sequence[str] | str | None = None) -> LabelCounts:
    """Accept any supported input and return validated :class:`LabelCounts`."""
    if isinstance(data, LabelCounts):
        return data
    if isinstance(data, Decisions):
        return data.label_counts()
    return label_counts(data, labels=labels)


def as_threshold(x: Any) -> Fraction:
    """An accuracy threshold in [0, 1] as an exact ``Fraction`` (floats read as typed: 0.1 -> 1/10)."""
    if isinstance(x, bool):
        raise InputError(f"threshold {x!r} is not a number in [0, 1]")
    try:
        frac = Fraction(repr(x)) if isinstance(x, float) else Fraction(x)
    except (TypeError, ValueError, ZeroDivisionError) as exc:
        raise InputError(f"threshold {x!r} is not a number in [0, 1]") from exc
    if not 0 <= frac <= 1:
        raise InputError(f"threshold {x!r} is outside [0, 1]; give an accuracy like 0.5")
    return frac
