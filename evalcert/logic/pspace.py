"""Possible evaluations of one binary classifier in P-space (paper 003, Sec. II, Fig. 2).

An evaluation of a binary classifier on ``Q`` items is the integer point
``(Q_a, R_{a,a}, R_{b,b})`` of R-space (Fig. 1): the answer key's ``a`` count and the
correct answers on each true label. Fig. 2 draws the same set in P-space, the prevalence
and the two label accuracies::

    P_a = Q_a / Q,   P_{a,a} = R_{a,a} / Q_a,   P_{b,b} = R_{b,b} / (Q - Q_a)

(an accuracy is undefined, ``None``, on a label with no items: ``Q_a = 0`` or ``Q``).
Stages, as Sec. II filters them for a classifier that decided ``(R_a, R_b)``:

* ``"a priori"``: ``0 <= R_{a,a} <= Q_a``, ``0 <= R_{b,b} <= Q - Q_a``:
  ``(Q+1)(Q+2)(Q+3)/6`` points (286 at ``Q = 10``);
* ``"inequalities"``: also ``R_{a,a} <= R_a`` and ``R_{b,b} <= R_b`` (Eq. 8; 210 at
  ``(R_a, R_b) = (4, 6)``);
* ``"axioms"``: also the M=1 axiom ``R_{a,a} - Q_a + R_b - R_{b,b} = 0`` (Eq. 9, Fig. 4;
  35), i.e. ``R_{b,b} = R_{a,a} + R_b - Q_a`` with
  ``max(0, Q_a - R_b) <= R_{a,a} <= min(Q_a, R_a)``.

The counts equal :func:`evalcert.logic.evaluations.evaluation_counts`' tables (tested: an
evaluation table of a binary classifier is one such point). The M=1 alarm in this view:
a grader "clears" ``x`` at a point when both defined accuracies exceed ``x`` (Eq. 11; an
undefined one makes no demand), and the alarm stays silent iff some prevalence ``Q_a``
lets every grader clear ``x`` at once (tested against :func:`evalcert.logic.alarms.alarm`).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from math import comb
from typing import Any, Sequence

import numpy as np

from evalcert.errors import InputError
from evalcert.results import ResultMixin, format_table

__all__ = ["STAGES", "MAX_POINTS", "PSpace", "pspace_evaluations", "pspace_size",
           "shared_prevalences", "pspace_summary", "CLASSES"]

STAGES = ("a priori", "inequalities", "axioms")
#: most points enumerated (each is three int64)
MAX_POINTS = 5_000_000
#: the classes of an axioms-stage point at a threshold (as :func:`plot_pspace` colours them)
CLASSES = ("below x", "clears x alone", "clears x with every grader")


@dataclasses.dataclass(frozen=True)
class PSpace(ResultMixin):
    """One binary classifier's possible evaluations at one stage of Sec. II.

    Attributes
    ----------
    n_items : int
    labels : tuple of str
        The two labels, ``a`` first.
    decided : tuple of int or None
        ``(R_a, R_b)``; None a priori.
    stage : str
    q_a, r_aa, r_bb : ndarray of int64
        The R-space points (Fig. 1), ordered by ``Q_a``, then ``R_{a,a}``, ``R_{b,b}``.

    Examples
    --------
    >>> space = pspace_evaluations(10, (4, 6), stage="axioms")
    >>> len(space), space.point(0)          # Q_a = 0: P_{a,a} undefined
    (35, (Fraction(0, 1), None, Fraction(3, 5)))
    """

    n_items: int
    labels: tuple[str, str]
    decided: tuple[int, int] | None
    stage: str
    q_a: np.ndarray
    r_aa: np.ndarray
    r_bb: np.ndarray

    def __len__(self) -> int:
        return int(len(self.q_a))

    def point(self, k: int) -> tuple[Fraction, Fraction | None, Fraction | None]:
        """Exact P-space point ``(P_a, P_{a,a}, P_{b,b})`` of the k-th evaluation."""
        q, qa = self.n_items, int(self.q_a[k])
        return (Fraction(qa, q), Fraction(int(self.r_aa[k]), qa) if qa else None,
                Fraction(int(self.r_bb[k]), q - qa) if qa < q else None)

    def coordinates(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``P_a, P_{a,a}, P_{b,b}`` as floats, NaN where an accuracy is undefined."""
        q_b = self.n_items - self.q_a
        with np.errstate(invalid="ignore", divide="ignore"):
            p_aa = np.where(self.q_a > 0, self.r_aa / np.maximum(self.q_a, 1), np.nan)
            p_bb = np.where(q_b > 0, self.r_bb / np.maximum(q_b, 1), np.nan)
        return self.q_a / self.n_items, p_aa, p_bb

    def clears(self, threshold: Any) -> np.ndarray:
        """Exact: both defined accuracies ``> threshold`` (Eq. 11), as a bool array."""
        from evalcert.logic.summaries import as_threshold

        x = as_threshold(threshold)
        num, den = x.numerator, x.denominator
        q_b = self.n_items - self.q_a
        return (((self.q_a == 0) | (self.r_aa * den > num * self.q_a))
                & ((q_b == 0) | (self.r_bb * den > num * q_b)))

    def to_frame(self) -> Any:
        """One row per evaluation: the R-space point and its exact P-space coordinates."""
        import pandas as pd

        pts = [self.point(k) for k in range(len(self))]
        return pd.DataFrame({"Q_a": self.q_a, "R_aa": self.r_aa, "R_bb": self.r_bb,
                             "P_a": [str(p[0]) for p in pts],
                             "P_aa": [None if p[1] is None else str(p[1]) for p in pts],
                             "P_bb": [None if p[2] is None else str(p[2]) for p in pts]})

    def summary(self) -> str:
        undefined = int((self.q_a == 0).sum() + (self.q_a == self.n_items).sum())
        rows = [["items Q", self.n_items], ["decided (R_a, R_b)", self.decided or "-"],
                ["stage", self.stage], ["evaluations", len(self)],
                ["with an undefined label accuracy", undefined]]
        return "P-space evaluations (Fig. 2)\n" + format_table(rows, ["", ""])


def pspace_size(n_items: int, decided: Sequence[int] | None = None,
                stage: str = "a priori") -> int:
    """Number of evaluations :func:`pspace_evaluations` would enumerate (sized first).

    Examples
    --------
    >>> [pspace_size(10, (4, 6), s) for s in STAGES]
    [286, 210, 35]
    """
    q = int(n_items)
    if stage == "a priori":
        return comb(q + 3, 3)
    r_a, r_b = _decided(q, decided)
    qa = np.arange(q + 1, dtype=np.int64)
    if stage == "inequalities":
        return int(((np.minimum(qa, r_a) + 1) * (np.minimum(q - qa, r_b) + 1)).sum())
    if stage == "axioms":
        return int(np.maximum(np.minimum(qa, r_a) - np.maximum(0, qa - r_b) + 1, 0).sum())
    raise InputError(f"stage {stage!r}: one of {list(STAGES)}")


def _decided(q: int, decided: Sequence[int] | None) -> tuple[int, int]:
    if decided is None or len(decided) != 2 or min(int(v) for v in decided) < 0 \
            or sum(int(v) for v in decided) != q:
        raise InputError(f"decided counts {decided}: give (R_a, R_b) >= 0 summing to Q = {q} "
                         "(the P-space view is for two labels)")
    return int(decided[0]), int(decided[1])


def pspace_evaluations(n_items: int, decided: Sequence[int] | None = None,
                       stage: str = "axioms", labels: Sequence[str] = ("a", "b")) -> PSpace:
    """Every possible evaluation of a binary classifier at ``stage`` (Figs. 1-4 in R-space,
    Fig. 2 in P-space).

    Parameters
    ----------
    n_items : int
        Test size ``Q`` >= 1.
    decided : (R_a, R_b), optional
        The classifier's label counts; required for ``"inequalities"`` and ``"axioms"``.
    stage : one of :data:`STAGES`
    labels : the two label names

    Examples
    --------
    >>> len(pspace_evaluations(10, stage="a priori"))   # Fig. 2: (Q+1)(Q+2)(Q+3)/6
    286
    """
    q = int(n_items)
    if q < 1:
        raise InputError(f"Q = {q}: the P-space view needs at least one item")
    if stage not in STAGES:
        raise InputError(f"stage {stage!r}: one of {list(STAGES)}")
    if len(labels) != 2:
        raise InputError(f"labels {list(labels)}: the P-space view is for two labels")
    dec = None if stage == "a priori" and decided is None else _decided(q, decided)
    size = pspace_size(q, dec, stage)
    if size > MAX_POINTS:
        raise InputError(f"{size:,} evaluations at stage {stage!r} with Q = {q} (limit "
                         f"{MAX_POINTS:,}); use stage 'axioms' or a smaller test")
    qa_all = np.arange(q + 1, dtype=np.int64)
    big = q + 1
    r_a, r_b = dec if dec is not None and stage != "a priori" else (big, big)
    if stage == "axioms":
        lo, hi = np.maximum(0, qa_all - r_b), np.minimum(qa_all, r_a)
        n = np.maximum(hi - lo + 1, 0)
        q_a = np.repeat(qa_all, n)
        r_aa = np.repeat(lo, n) + (np.arange(len(q_a)) - np.repeat(np.cumsum(n) - n, n))
        r_bb = r_aa + r_b - q_a
    else:
        n_aa, n_bb = np.minimum(qa_all, r_a) + 1, np.minimum(q - qa_all, r_b) + 1
        q_a = np.repeat(qa_all, n_aa * n_bb)
        r_aa = np.concatenate([np.repeat(np.arange(a), b) for a, b in zip(n_aa, n_bb)])
        r_bb = np.concatenate([np.tile(np.arange(b), a) for a, b in zip(n_aa, n_bb)])
    return PSpace(q, (str(labels[0]), str(labels[1])), dec, stage, q_a, r_aa, r_bb)


def shared_prevalences(spaces: Sequence[PSpace], threshold: Any) -> np.ndarray:
    """The key counts ``Q_a`` at which every grader has an evaluation clearing
    ``threshold`` on both labels: empty iff the M=1 alarm fires at ``threshold``.

    Examples
    --------
    >>> s1 = pspace_evaluations(10, (4, 6))
    >>> s2 = pspace_evaluations(10, (7, 3))
    >>> shared_prevalences([s1, s2], "1/2").tolist()
    [5, 6, 7]
    """
    if not spaces:
        raise InputError("give at least one grader's evaluations")
    q = spaces[0].n_items
    ok = np.ones(q + 1, dtype=bool)
    for s in spaces:
        if s.n_items != q:
            raise InputError("every grader's evaluations must be of one test (one Q)")
        here = np.zeros(q + 1, dtype=bool)
        here[s.q_a[s.clears(threshold)]] = True
        ok &= here
    return np.flatnonzero(ok)


def _runs(values: np.ndarray, limit: int) -> tuple[list[list[int]], bool]:
    """Sorted ints as ``[[first, last], ...]`` runs of consecutive values (at most
    ``limit``; the flag says whether runs were left out)."""
    if not len(values):
        return [], False
    breaks = np.flatnonzero(np.diff(values) != 1)
    starts = np.concatenate([[values[0]], values[breaks + 1]])
    ends = np.concatenate([values[breaks], [values[-1]]])
    runs = [[int(a), int(b)] for a, b in zip(starts, ends)]
    return runs[:limit], len(runs) > limit


def _axiom_ranges(q: int, decided: Sequence[int], x: Fraction
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per prevalence ``Q_a = 0..Q``: the axioms-stage ``R_aa`` range ``[lo, hi]`` and the
    least ``R_aa`` that clears ``x`` on both labels (closed form, no enumeration)."""
    r_a, r_b = _decided(q, decided)
    num, den = x.numerator, x.denominator
    qa = np.arange(q + 1, dtype=np.int64)
    lo, hi = np.maximum(0, qa - r_b), np.minimum(qa, r_a)
    # R_aa * den > num * Q_a  and  (R_aa + R_b - Q_a) * den > num * (Q - Q_a)
    need_a = np.where(qa > 0, (num * qa) // den + 1, 0)
    need_b = np.where(qa < q, (num * (q - qa)) // den + 1 + qa - r_b, np.iinfo(np.int64).min)
    return lo, hi, np.maximum(np.maximum(need_a, need_b), lo)


def pspace_summary(n_items: int, decided: Sequence[Sequence[int]], threshold: Any,
                   graders: Sequence[str] | None = None, labels: Sequence[str] = ("a", "b"),
                   *, max_points: int = 200, max_runs: int = 50) -> dict[str, Any]:
    """Fig. 2 as numbers (JSON-able, bounded, computed in closed form per prevalence,
    without enumerating the points): per grader its decided counts ``(R_a, R_b)``, the size
    of each stage of Sec. II (:func:`pspace_size`), how many axioms-stage points fall in
    each of :data:`CLASSES` at ``threshold``, the prevalences ``Q_a`` where it can clear
    ``x`` (runs ``[first, last]``), and at most ``max_points`` of its points
    ``[Q_a, R_aa, R_bb, class]`` (evenly spaced in :func:`pspace_evaluations`' order,
    first and last kept; ``max_points`` >= 2); and the prevalences where every grader can clear ``x`` (empty
    iff the M=1 alarm fires).

    Every point follows from ``n_items``, ``decided`` and ``threshold``
    (:func:`pspace_evaluations` with stage ``"axioms"``); the listed points are a sample
    of them, the class counts are exact over all of them.

    Examples
    --------
    >>> s = pspace_summary(10, [(4, 6), (7, 3)], "1/2", ["i", "j"], max_points=3)
    >>> s["shared_prevalences"], s["graders"][0]["stages"], s["graders"][0]["classes"]
    ([[5, 7]], {'a priori': 286, 'inequalities': 210, 'axioms': 35}, {'below x': 24, \
'clears x alone': 7, 'clears x with every grader': 4})
    >>> s["graders"][0]["points"]
    [[0, 0, 6, 'clears x alone'], [5, 2, 3, 'below x'], [10, 4, 0, 'below x']]
    """
    from evalcert.logic.summaries import as_threshold

    q = int(n_items)
    if q < 1 or not len(decided):
        raise InputError("pspace_summary needs Q >= 1 and each grader's decided counts")
    if len(labels) != 2:
        raise InputError(f"labels {list(labels)}: the P-space view is for two labels")
    names = list(graders) if graders is not None else [f"grader {k + 1}"
                                                        for k in range(len(decided))]
    x = as_threshold(threshold)
    max_points = max(int(max_points), 2)                # both ends kept
    ranges = [_axiom_ranges(q, d, x) for d in decided]
    can = [hi >= least for _, hi, least in ranges]          # grader can clear x at Q_a
    shared = np.flatnonzero(np.logical_and.reduce(can))
    rows = []
    for d, name, (lo, hi, least), ok in zip(decided, names, ranges, can):
        size = np.maximum(hi - lo + 1, 0)
        n_clear = np.maximum(hi - least + 1, 0)
        on_shared = np.zeros(q + 1, dtype=bool)
        on_shared[shared] = True
        n = int(size.sum())
        ks = (np.unique(np.linspace(0, n - 1, max_points).round().astype(np.int64))
              if n > max_points else np.arange(n))
        start = np.cumsum(size) - size
        qa = np.searchsorted(start + size, ks, side="right")
        r_aa = lo[qa] + ks - start[qa]
        r_bb = r_aa + int(d[1]) - qa
        cls = np.where(r_aa < least[qa], 0, np.where(on_shared[qa], 2, 1))
        runs, more = _runs(np.flatnonzero(ok), max_runs)
        rows.append({
            "grader": name, "decided": [int(v) for v in d],
            "stages": {st: pspace_size(q, d, st) for st in STAGES},
            "classes": {CLASSES[0]: n - int(n_clear.sum()),
                        CLASSES[1]: int(n_clear[~on_shared].sum()),
                        CLASSES[2]: int(n_clear[on_shared].sum())},
            "clears_at": runs, "clears_at_truncated": more,
            "points": [[int(a), int(b), int(c), CLASSES[k]]
                       for a, b, c, k in zip(qa, r_aa, r_bb, cls)],
            "points_total": n})
    runs, more = _runs(shared, max_runs)
    return {"figure": "Fig. 2", "n_items": q, "labels": [str(v) for v in labels],
            "threshold": str(x), "stage": "axioms", "fires": not len(shared),
            "shared_prevalences": runs, "shared_truncated": more,
            "n_shared": int(len(shared)), "graders": rows,
            "points_note": f"at most {max_points} points per grader, evenly spaced in "
                           "(Q_a, R_aa) order; class counts are over every point"}
