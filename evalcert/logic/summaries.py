"""Inputs of the logic of unsupervised evaluation: label counts and aligned decisions.

Two kinds of input (paper 003, Sec. II):

* :class:`LabelCounts` -- the M=1 summaries ``(R_{l_1,i}, ..., R_{l_R,i})``: how many
  times each grader ``i`` answered each label on a test of ``Q`` items;
* :class:`Decisions` -- question-aligned decisions (a long table ``item,grader,label``),
  needed for the M=2 pair counts of App. C; they project onto :class:`LabelCounts`.

Everything is validated here, once, before any counting or solving; later modules
trust these objects. Files are read by :mod:`evalcert.io.decisions`.
"""

from __future__ import annotations

import dataclasses
import numbers
from fractions import Fraction
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from evalcert.errors import InputError
from evalcert.results import ResultMixin, format_table

__all__ = ["LabelCounts", "Decisions", "ReadReport", "label_counts", "decisions_from_frame",
           "as_label_counts", "as_threshold"]

MISSING_POLICIES = ("error", "drop", "keep")
#: more undeclared labels than this is refused as a likely misread
MAX_UNDECLARED_LABELS = 16


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

    Examples
    --------
    >>> counts = label_counts({"authors": {"a": 5, "b": 10, "tie": 10},
    ...                        "gpt4": {"a": 4, "b": 18, "tie": 3}})
    >>> counts.labels, counts.n_items, counts.array.tolist()
    (('a', 'b', 'tie'), 25, [[5, 10, 10], [4, 18, 3]])
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
class ReadReport(ResultMixin):
    """What a reader did to a decision file: nothing is dropped or changed without a count.

    Attributes
    ----------
    path, format : str
        The file and the format read (``long``, ``wide``, ``pairwise``, ``frame``).
    rows : int
        Decision rows read.
    items_read, items_used, items_dropped : int
        Items found, kept and dropped (``on_missing="drop"``).
    skipped_by_grader : dict
        ``{grader: items it did not decide}`` (before dropping).
    on_missing : str
    unparseable : dict
        ``{raw value: rows}`` of decisions that could not be read as a label (pairwise
        winners); they count as skipped, never guessed.
    whitespace_fixed : int
        Cells whose surrounding whitespace was stripped (``' a'`` -> ``'a'``).
    labels_mapped : int
        Decisions renamed by ``label_map``.

    Examples
    --------
    >>> import pandas as pd
    >>> log = pd.DataFrame({"item": ["q1", "q1", "q2"], "grader": ["x", "y", "x"],
    ...                     "label": ["a", " b", "b"]})
    >>> report = decisions_from_frame(log, on_missing="drop").report
    >>> report.items_used, report.items_dropped, report.skipped_by_grader, report.whitespace_fixed
    (1, 1, {'y': 1}, 1)
    """

    path: str
    format: str
    rows: int
    items_read: int
    items_used: int
    items_dropped: int
    skipped_by_grader: dict[str, int]
    on_missing: str
    unparseable: dict[str, int]
    whitespace_fixed: int
    labels_mapped: int

    def notes(self) -> list[str]:
        """One line per thing the user should know (for stderr)."""
        out = [f"read {self.rows} rows ({self.format}): {self.items_read} items, "
               f"{self.items_used} used, {self.items_dropped} dropped"]
        if self.skipped_by_grader:
            out.append(f"items skipped per grader: {self.skipped_by_grader} "
                       f"(on_missing={self.on_missing})")
        if self.unparseable:
            out.append(f"{sum(self.unparseable.values())} unparseable decisions counted as "
                       f"skipped: {dict(list(self.unparseable.items())[:8])}")
        if self.whitespace_fixed:
            out.append(f"{self.whitespace_fixed} cells had surrounding whitespace removed "
                       "(' a' read as 'a')")
        if self.labels_mapped:
            out.append(f"{self.labels_mapped} decisions renamed by the label map")
        return out

    def summary(self) -> str:
        return "\n".join(self.notes())


@dataclasses.dataclass(frozen=True)
class Decisions(ResultMixin):
    """Question-aligned decisions: ``codes[k][i]`` is the label index grader ``i`` gave item ``k``.

    Attributes
    ----------
    items, graders, labels : tuple of str
    codes : tuple of tuple of int
        ``(Q, N)`` label indices into ``labels``; ``-1`` where the grader skipped the item
        (only with ``on_missing="keep"``).
    report : ReadReport or None
        What the reader did (counts of dropped, skipped, unparseable, normalised cells).

    Examples
    --------
    >>> import pandas as pd
    >>> log = pd.DataFrame({"item": ["q1", "q1", "q2", "q2", "q3"], "grader": ["x", "y", "x", "y", "x"],
    ...                     "label": ["a", "b", "b", "b", "a"]})
    >>> d = decisions_from_frame(log, on_missing="drop")  # y skipped q3: q3 is dropped, and counted
    >>> d.items, d.graders, d.codes, d.report.items_dropped
    (('q1', 'q2'), ('x', 'y'), ((0, 1), (1, 1)), 1)
    >>> d.label_counts().counts  # the M=1 summaries
    ((1, 1), (0, 2))
    """

    items: tuple[str, ...]
    graders: tuple[str, ...]
    labels: tuple[str, ...]
    codes: tuple[tuple[int, ...], ...]
    report: ReadReport | None = None

    @property
    def array(self) -> np.ndarray:
        """Label indices as a ``(Q, N)`` int64 array (``-1`` = skipped)."""
        return np.array(self.codes, dtype=np.int64).reshape(len(self.items), len(self.graders))

    @property
    def complete(self) -> bool:
        """True when every grader decided every item."""
        return bool((self.array >= 0).all())

    def _require_complete(self, what: str) -> np.ndarray:
        arr = self.array
        if (arr < 0).any():
            skipped = {g: int((arr[:, i] < 0).sum()) for i, g in enumerate(self.graders)
                       if (arr[:, i] < 0).any()}
            raise InputError(f"{what} needs every grader on every item, but graders skipped "
                             f"items {skipped}; use --on-missing drop, or the full-joint "
                             "alarm (--m full), which judges each grader on its own items")
        return arr

    def label_counts(self) -> LabelCounts:
        """Project onto the M=1 summaries (paper Sec. II)."""
        arr = self._require_complete("M=1 (label counts)")
        counts = tuple(tuple(int(v) for v in np.bincount(arr[:, i], minlength=len(self.labels)))
                       for i in range(len(self.graders)))
        return LabelCounts(self.labels, self.graders, counts)

    def pair_counts(self, i: int, j: int) -> np.ndarray:
        """Observed M=2 counts ``R_{(l_a)_i,(l_b)_j}`` as an ``(R, R)`` array (App. C, Eq. 14)."""
        r = len(self.labels)
        arr = self._require_complete("M=2 (pair counts)")
        return np.bincount(arr[:, i] * r + arr[:, j], minlength=r * r).reshape(r, r)

    def summary(self) -> str:
        head = (f"{len(self.items)} items x {len(self.graders)} graders, labels "
                f"{', '.join(self.labels)}")
        return head + ("\n" + self.label_counts().summary() if self.complete else
                       " (some decisions skipped)")


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


def _in_order(column: pd.Series) -> list[str]:
    """Distinct values in order of first appearance (in C: iterating pandas' Arrow-backed
    strings one by one took 20 s on 10^6 rows)."""
    return pd.unique(column.to_numpy(dtype=object)).tolist()


def _strip(df: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Strip surrounding whitespace of every cell; return the frame and the cells changed."""
    out = df.apply(lambda s: s.str.strip())
    return out, int((out != df).to_numpy().sum())


def _likely_misread(df: pd.DataFrame, found: list[str]) -> None:
    """Refuse undeclared label sets that look like a misread table (ids taken as labels)."""
    by_grader = {g: set(v) for g, v in df.groupby("grader", sort=False)["label"]}
    if len(by_grader) >= 2:
        alone = [g for g, labs in by_grader.items() if len(labs) >= 3
                 and not any(labs & other for h, other in by_grader.items() if h != g)]
        if alone:
            raise InputError(
                f"graders {alone[:6]} share no label with any other grader (e.g. "
                f"{sorted(by_grader[alone[0]])[:4]}): these columns are probably not graders; "
                "choose the grader columns with --graders (graders=...), or --format pairwise "
                "for question_id/model_a/model_b/winner logs")
    if len(found) > MAX_UNDECLARED_LABELS:
        raise InputError(f"{len(found)} distinct labels (e.g. {found[:5]}) on "
                         f"{df['item'].nunique()} items: probably ids or free text read as "
                         "labels; declare the label set with --labels (labels=...) to confirm")


def decisions_from_frame(frame: pd.DataFrame, labels: Sequence[str] | str | None = None,
                         on_missing: str = "error", *, graders: Sequence[str] | None = None,
                         label_map: Mapping[str, str] | None = None,
                         source: Mapping[str, Any] | None = None) -> Decisions:
    """Validate a long table with columns ``item, grader, label`` into :class:`Decisions`.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per (item, grader) decision; extra columns are ignored. Cells are
        stripped of surrounding whitespace (``' a'`` -> ``'a'``), and the number of cells
        changed is reported in ``Decisions.report``.
    labels : sequence of str, optional
        Declared label set (order kept); default: labels in order of first appearance
        (more than 16 undeclared labels, or a grader sharing no label with any other, is
        refused as a likely misread, as is a grader using 3 or more labels that no other
        grader uses).
    on_missing : {"error", "drop", "keep"}
        Items some grader skipped: raise; drop those items for every grader; or keep them
        with the skipped decisions coded ``-1`` (only the full-joint alarm accepts those).
    graders : sequence of str, optional
        Keep only these graders (unknown names are refused).
    label_map : mapping, optional
        Rename labels after stripping, e.g. ``{"0": "tie"}``.
    source : mapping, optional
        Facts from the file reader for the report (path, format, rows, unparseable).

    Examples
    --------
    >>> df = pd.DataFrame({"item": [1, 1, 2, 2], "grader": ["x", "y", "x", "y"],
    ...                    "label": ["a", " a", "b", "a"]})
    >>> d = decisions_from_frame(df)
    >>> d.label_counts().counts, d.report.whitespace_fixed
    (((1, 1), (2, 0)), 1)
    """
    if on_missing not in MISSING_POLICIES:
        raise InputError(f"on_missing={on_missing!r}; use one of {MISSING_POLICIES}")
    missing_cols = [c for c in ("item", "grader", "label") if c not in frame.columns]
    if missing_cols:
        raise InputError(f"decision table lacks columns {missing_cols}; give a long table "
                         "with columns item,grader,label")
    df = frame[["item", "grader", "label"]].copy()
    empty = df.isna() | (df.astype(str).apply(lambda s: s.str.strip()) == "")
    if empty.any().any():
        rows = [int(k) for k in np.flatnonzero(empty.any(axis=1).to_numpy())[:10]]
        raise InputError(f"{int(empty.any(axis=1).sum())} decision rows have empty cells "
                         f"(rows {rows}); a skipped decision is a missing row, not an empty "
                         "label (mixed formats?)")
    df, fixed = _strip(df.astype(str))
    if df.empty:
        raise InputError("empty test: the decision table has no rows")
    n_rows = len(df)
    mapped = 0
    if label_map:
        hit = df["label"].isin(list(label_map))
        mapped = int(hit.sum())
        df.loc[hit, "label"] = df.loc[hit, "label"].map(dict(label_map))
    if graders is not None:
        known = _in_order(df["grader"])
        unknown = [g for g in graders if g not in known]
        if unknown:
            raise InputError(f"unknown graders {unknown}; the file has {known[:20]}")
        df = df[df["grader"].isin(list(graders))]
    dup = df[df.duplicated(["item", "grader"], keep=False)]
    if not dup.empty:
        pairs = sorted(set(zip(dup["item"], dup["grader"])))[:10]
        raise InputError(f"(item, grader) pairs decided more than once: {pairs}; keep one "
                         "decision per grader and item")
    declared = _declared_labels(labels)
    found = _in_order(df["label"])
    if declared is not None:
        bad = sorted(set(found) - set(declared))
        if bad:
            where = df[df["label"].isin(bad)].head(10)
            raise InputError(f"labels {bad[:10]} are outside the declared set {list(declared)} "
                             f"(e.g. items {list(where['item'])}, graders "
                             f"{sorted(set(where['grader']))}); fix them, map them with "
                             "--label-map or declare them")
    else:
        _likely_misread(df, found)
    lab = declared if declared is not None else tuple(found)
    _check_label_set(lab)
    index = {name: k for k, name in enumerate(lab)}
    item_names = _in_order(df["item"])
    grader_names = _in_order(df["grader"])
    rows_ix = pd.Index(item_names).get_indexer(df["item"])
    cols_ix = pd.Index(grader_names).get_indexer(df["grader"])
    arr = np.full((len(item_names), len(grader_names)), -1, dtype=np.int64)
    arr[rows_ix, cols_ix] = df["label"].map(index).to_numpy(dtype=np.int64)
    holes = arr < 0
    skipped = {g: int(holes[:, i].sum()) for i, g in enumerate(grader_names)
               if holes[:, i].any()}
    absent = [g for g, k in skipped.items() if k == len(item_names)]
    if absent:
        raise InputError(f"graders {absent} decided none of the {len(item_names)} items; "
                         "drop them (--graders) or fix the file")
    keep = np.ones(len(item_names), dtype=bool)
    if skipped and on_missing == "error":
        show = {g: [item_names[k] for k in np.flatnonzero(holes[:, i])[:5]]
                for i, g in enumerate(grader_names) if holes[:, i].any()}
        unp = dict((source or {}).get("unparseable", {}))
        raise InputError(f"graders skipped items: {show} (items skipped per grader: "
                         f"{skipped}{'; unparseable decisions ' + str(unp) if unp else ''}); "
                         "pass --on-missing drop to drop those items for every grader, or "
                         "--on-missing keep with --m full to judge each grader on the items "
                         "it decided")
    if skipped and on_missing == "drop":
        keep = ~holes.any(axis=1)
        if not keep.any():
            raise InputError(f"empty test: no item was decided by every grader (of "
                             f"{len(item_names)} items; skipped per grader {skipped}); use "
                             "--on-missing keep with --m full, or choose --graders")
    src = dict(source or {})
    report = ReadReport(
        path=str(src.get("path", "")), format=str(src.get("format", "frame")),
        rows=int(src.get("rows", n_rows)), items_read=len(item_names),
        items_used=int(keep.sum()), items_dropped=int((~keep).sum()),
        skipped_by_grader=skipped, on_missing=on_missing,
        unparseable=dict(src.get("unparseable", {})), whitespace_fixed=fixed,
        labels_mapped=mapped)
    arr = arr[keep]
    items = tuple(n for n, k in zip(item_names, keep) if k)
    return Decisions(items, tuple(grader_names), lab, tuple(map(tuple, arr.tolist())), report)


def as_label_counts(data: LabelCounts | Decisions | Mapping[str, Mapping[str, Any]],
                    labels: Sequence[str] | str | None = None) -> LabelCounts:
    """Accept any supported input and return validated :class:`LabelCounts`.

    Examples
    --------
    >>> as_label_counts({"x": {"a": 2, "b": 1}, "y": {"a": 1, "b": 2}}).counts
    ((2, 1), (1, 2))
    """
    if isinstance(data, LabelCounts):
        return data
    if isinstance(data, Decisions):
        return data.label_counts()
    return label_counts(data, labels=labels)


def as_threshold(x: Any) -> Fraction:
    """An accuracy threshold in [0, 1] as an exact ``Fraction`` (floats read as typed: 0.1 -> 1/10).

    Examples
    --------
    >>> as_threshold(0.1), as_threshold("5/8"), as_threshold(1)
    (Fraction(1, 10), Fraction(5, 8), Fraction(1, 1))
    """
    if isinstance(x, bool):
        raise InputError(f"threshold {x!r} is not a number in [0, 1]")
    try:
        frac = Fraction(repr(x)) if isinstance(x, float) else Fraction(x)
    except (TypeError, ValueError, ZeroDivisionError) as exc:
        raise InputError(f"threshold {x!r} is not a number in [0, 1]") from exc
    if not 0 <= frac <= 1:
        raise InputError(f"threshold {x!r} is outside [0, 1]; give an accuracy like 0.5")
    return frac
