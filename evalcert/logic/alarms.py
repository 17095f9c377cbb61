"""Exact no-knowledge alarms under the M=1 axioms (paper 003, Sec. III, Figs. 7-8, Eq. 11).

The alarm at level ``x`` fires when no answer key ``q`` in the Q-complex admits possible
evaluations with every grader correct on more than ``x`` of the items of every label::

    for all q:  not  AND_{i, l : q_l > 0}  R_{l,i;l} > x * q_l            (Eq. 11)

Labels absent from the key (``q_l = 0``) make no demand. Under M=1 the best correct
count of grader ``i`` on label ``l`` at ``q`` is ``min(q_l, R_{l,i})`` and all labels
reach it in the same table (the leftovers fill a zero-diagonal table, since a label
with items left over has no decisions left over), so the best achievable minimum label
accuracy at ``q`` -- the min-max value of Fig. 7 -- is::

    v(q) = min_{l : q_l > 0} min(q_l, m_l) / q_l,     m_l = min_i R_{l,i}

and the alarm fires iff ``x >= T = max_q v(q)``. ``T`` needs no walk of the Q-complex:
``v(q) >= t`` iff ``q_l <= floor(m_l / t)`` for every non-empty label, so ``T`` is the
largest ``t`` with ``sum_l floor(m_l / t) >= Q`` (within user bounds), one of the
breakpoints ``m_l / k``, found by bisection on ``k`` for each label.

MT-Bench (Q = 25, authors (5, 10, 10), gpt4 (4, 18, 3)): 351 keys, ``T = 2/3`` attained
only at (6, 15, 4), ``v(8, 9, 8) = 3/8``, ``min_q v(q) = 3/25``. The paper reports 46%
(Sec. III, Fig. 7, Sec. V); that figure does not follow from the M=1 axioms: at
(6, 15, 4) authors can be 5/6, 10/15, 4/4 correct and gpt4 4/6, 15/15, 3/4, all > 46%.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any, Mapping, Sequence

import numpy as np

from evalcert.logic.qcomplex import Bounds, qcomplex_array, qcomplex_bounds, qcomplex_size
from evalcert.logic.qcomplex import iter_qcomplex
from evalcert.logic.summaries import Decisions, LabelCounts, as_label_counts, as_threshold
from evalcert.results import PageMixin, ResultMixin, format_table

__all__ = ["MinMaxCurve", "AlarmResult", "best_correct", "key_value", "alarm_threshold",
           "attaining_keys", "binding_pairs", "minmax_curve", "alarm"]


def best_correct(counts: LabelCounts, key: Sequence[int]) -> np.ndarray:
    """Closed form: best correct count ``min(q_l, R_{l,i})`` of each grader on each label,
    an ``(N, R)`` int array; all labels of a grader reach it in one evaluation.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> best_correct(paper_summaries(), (6, 15, 4)).tolist()  # authors, gpt4 x labels a, b, tie
    [[5, 10, 4], [4, 15, 3]]
    """
    return np.minimum(counts.array, np.asarray(key, dtype=np.int64)[None, :])


def key_value(counts: LabelCounts, key: Sequence[int]) -> Fraction:
    """The min-max value ``v(q)``: best achievable minimum label accuracy over graders.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> key_value(paper_summaries(), (6, 15, 4)), key_value(paper_summaries(), (8, 9, 8))
    (Fraction(2, 3), Fraction(3, 8))
    """
    best = best_correct(counts, key)
    return min(Fraction(int(best[i, l]), int(key[l]))
               for i in range(best.shape[0]) for l in range(best.shape[1]) if key[l] > 0)


def _min_counts(counts: LabelCounts) -> list[int]:
    return [int(v) for v in counts.array.min(axis=0)]


def _caps(m: list[int], t: Fraction, bounds: Bounds) -> list[int] | None:
    """Largest allowed ``q_l`` with ``v >= t`` (t > 0), or None if some label cannot fit."""
    lo, hi = bounds
    caps = []
    for l, ml in enumerate(m):
        cap = min(hi[l], ml * t.denominator // t.numerator)
        if cap < lo[l] or (lo[l] > 0 and cap < 1):
            return None
        caps.append(cap)
    return caps


def _feasible(m: list[int], t: Fraction, bounds: Bounds, n_items: int) -> bool:
    caps = _caps(m, t, bounds)
    return caps is not None and sum(bounds[0]) <= n_items <= sum(caps)


def alarm_threshold(summaries: Any, *, lower: Sequence[int] | None = None,
                    upper: Sequence[int] | None = None) -> Fraction:
    """Exact alarm threshold ``T = max_q v(q)`` without walking the Q-complex.

    ``O(R^2 log Q)`` integer operations: for each label, bisect on ``k`` for the largest
    feasible breakpoint ``m_l / k``.

    Examples
    --------
    >>> alarm_threshold({"authors": {"a": 5, "b": 10, "tie": 10},
    ...                  "gpt4": {"a": 4, "b": 18, "tie": 3}})
    Fraction(2, 3)
    """
    counts = as_label_counts(summaries)
    n = counts.n_items
    bounds = qcomplex_bounds(n, len(counts.labels), lower, upper)
    m = _min_counts(counts)
    if _feasible(m, Fraction(1), bounds, n):
        return Fraction(1)
    best = Fraction(0)
    for ml in m:
        if ml == 0 or not _feasible(m, Fraction(ml, n), bounds, n):
            continue
        lo_k, hi_k = ml + 1, n  # t = ml/k < 1; feasible at k = n, find the smallest k
        while lo_k < hi_k:
            mid = (lo_k + hi_k) // 2
            if _feasible(m, Fraction(ml, mid), bounds, n):
                hi_k = mid
            else:
                lo_k = mid + 1
        best = max(best, Fraction(ml, lo_k))
    return best


def attaining_keys(summaries: Any, threshold: Fraction, *, lower: Sequence[int] | None = None,
                   upper: Sequence[int] | None = None, limit: int | None = 1000
                   ) -> tuple[int, tuple[tuple[int, ...], ...]]:
    """Keys with ``v(q) >= threshold`` (= ``T`` gives the maximisers): their exact number and
    up to ``limit`` of them, enumerated as a bounded simplex (no walk of the whole QC).

    Examples
    --------
    >>> from fractions import Fraction
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> attaining_keys(paper_summaries(), Fraction(2, 3))  # (how many, the keys)
    (1, ((6, 15, 4),))
    """
    counts = as_label_counts(summaries)
    n, r = counts.n_items, len(counts.labels)
    lo, hi = qcomplex_bounds(n, r, lower, upper)
    if threshold == 0:
        caps = list(hi)
    else:
        found = _caps(_min_counts(counts), threshold, (lo, hi))
        if found is None or sum(found) < n:
            return 0, ()
        caps = found
    total = qcomplex_size(n, r, lo, caps)
    keys = []
    for key in iter_qcomplex(n, r, lo, caps):
        if limit is not None and len(keys) >= limit:
            break
        keys.append(key)
    return total, tuple(keys)


@dataclasses.dataclass(frozen=True)
class MinMaxCurve(ResultMixin):
    """Per-key min-max values (Fig. 7) and per-label values (Fig. 8), exact as int ratios.

    Attributes
    ----------
    labels : tuple of str
    keys : ndarray, shape (K, R)
        Every answer key, in lexicographic order.
    numer, denom : ndarray, shape (K,)
        ``v(q) = numer / denom``.
    label_numer, label_denom : ndarray, shape (K, R)
        ``min_i min(q_l, R_{l,i}) / q_l``; ``label_denom == 0`` where ``q_l = 0`` (no demand).

    Examples
    --------
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> curve = minmax_curve(paper_summaries())
    >>> len(curve.values()), round(float(curve.values().max()), 4)
    (351, 0.6667)
    """

    labels: tuple[str, ...]
    keys: np.ndarray
    numer: np.ndarray
    denom: np.ndarray
    label_numer: np.ndarray
    label_denom: np.ndarray

    def values(self) -> np.ndarray:
        """``v(q)`` as floats (for plotting and sorting; float order is exact for Q < 10^7)."""
        return self.numer / self.denom

    def value(self, k: int) -> Fraction:
        """Exact ``v`` of the k-th key."""
        return Fraction(int(self.numer[k]), int(self.denom[k]))

    def label_values(self, label: int) -> np.ndarray:
        """Per-label values as floats, NaN where the key has no item of that label."""
        den = self.label_denom[:, label]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, self.label_numer[:, label] / np.maximum(den, 1), np.nan)

    def to_frame(self) -> Any:
        """One row per answer key: its label counts and ``v(q)`` (exact numerator and
        denominator, and as a float)."""
        import pandas as pd

        frame = pd.DataFrame(self.keys, columns=list(self.labels))
        return frame.assign(numer=self.numer, denom=self.denom, value=self.values())

    def summary(self) -> str:
        v = self.values()
        k_max, k_min = int(np.argmax(v)), int(np.argmin(v))
        return (f"M=1 curve over {len(v)} keys; max v = {self.value(k_max)} at "
                f"{tuple(self.keys[k_max].tolist())}, min v = {self.value(k_min)} at "
                f"{tuple(self.keys[k_min].tolist())}")


def minmax_curve(summaries: Any, *, lower: Sequence[int] | None = None,
                 upper: Sequence[int] | None = None) -> MinMaxCurve:
    """Walk the whole Q-complex (vectorised) and compute ``v(q)`` and per-label values.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> curve = minmax_curve(paper_summaries())
    >>> top = int(curve.values().argmax())
    >>> len(curve.keys), curve.value(top), curve.keys[top].tolist()  # T and where
    (351, Fraction(2, 3), [6, 15, 4])
    """
    counts = as_label_counts(summaries)
    keys = qcomplex_array(counts.n_items, len(counts.labels), lower, upper)
    lab_num = np.minimum(keys, counts.array.min(axis=0)[None, :])
    # running minimum of num/den over the non-empty labels (empty labels make no demand)
    num = np.ones(len(keys), dtype=np.int64)
    den = np.ones(len(keys), dtype=np.int64)
    for l in range(keys.shape[1]):
        q, c = keys[:, l], lab_num[:, l]
        smaller = (q > 0) & (c * den < num * q)
        num[smaller], den[smaller] = c[smaller], q[smaller]
    g = np.gcd(num, den)
    return MinMaxCurve(counts.labels, keys, num // g, den // g, lab_num, keys)


@dataclasses.dataclass(frozen=True)
class AlarmResult(PageMixin, ResultMixin):
    """Verdict of a no-knowledge alarm.

    Attributes
    ----------
    threshold : Fraction
        The user's level ``x``: "every grader better than x on every label".
    fires : bool
        True iff no answer key is consistent with the spec, i.e. ``x >= T``.
    T : Fraction
        Exact alarm threshold: the alarm fires iff ``x >= T``.
    attaining_keys : tuple of tuple of int
        Answer keys with ``v(q) = T`` (at most ``max_keys`` listed).
    n_attaining : int or None
        Exact number of such keys; None when they were not all enumerated (M=2 / full
        joint with more candidates than ``max_checks``: the listed key is a witness).
    binding : tuple of (grader, label)
        Graders and labels whose best accuracy equals ``T`` at an attaining key.
    m : int or str
        Order of the summaries used: 1, 2 or ``"full"`` (the full joint).
    n_keys : int
        Size of the (bounded) Q-complex.
    curve : MinMaxCurve or None
        Per-key min-max curve (Fig. 7) and per-label curves (Fig. 8), when asked.
    labels, graders : tuple of str
    method : str
    witness : dict or None
        M=2 / full joint: one consistent evaluation at an attaining key (key, correct counts
        per grader, App. C Eq. 18 pair statistics), re-checked in integers.
    n_solves : int
        Integer programs solved (0 for the closed form).
    seconds : float
        Wall time of the computation.

    Examples
    --------
    >>> r = alarm({"authors": {"a": 5, "b": 10, "tie": 10},
    ...            "gpt4": {"a": 4, "b": 18, "tie": 3}}, "1/2", curves=False)
    >>> r.fires, r.T, r.n_keys, r.attaining_keys
    (False, Fraction(2, 3), 351, ((6, 15, 4),))
    >>> print(r.summary().splitlines()[1])
    T = 2/3 (0.6667): the alarm fires iff x >= T
    """

    threshold: Fraction
    fires: bool
    T: Fraction
    attaining_keys: tuple[tuple[int, ...], ...]
    n_attaining: int | None
    binding: tuple[tuple[str, str], ...]
    m: int | str
    n_keys: int | None
    labels: tuple[str, ...]
    graders: tuple[str, ...]
    method: str
    curve: MinMaxCurve | None = None
    n_solves: int = 0
    seconds: float = 0.0
    witness: dict[str, Any] | None = None

    def to_frame(self) -> Any:
        """The listed answer keys attaining ``T``: one row per key, one column per label."""
        import pandas as pd

        return pd.DataFrame(list(self.attaining_keys), columns=list(self.labels),
                            dtype="int64")

    def summary(self) -> str:
        verdict = "FIRES" if self.fires else "silent"
        which = "full joint" if self.m == "full" else f"M={self.m}"
        head = (f"no-knowledge alarm ({which}, {self.method}): {verdict} at x = "
                f"{self.threshold} ({float(self.threshold):.4f})\n"
                f"T = {self.T} ({float(self.T):.4f}): the alarm fires iff x >= T\n"
                f"labels {', '.join(self.labels)}; graders {', '.join(self.graders)}; "
                f"{self.n_keys} answer keys"
                + (f"; {self.n_solves} integer programs in {self.seconds:.2f} s"
                   if self.n_solves else "") + "\n")
        rows = [[", ".join(map(str, k))] for k in self.attaining_keys[:10]]
        if self.n_attaining is None:
            title = "a key attaining T (witness; not all attaining keys enumerated)"
            more = ""
        else:
            title = f"keys attaining T ({self.n_attaining})"
            more = (f"\n... {self.n_attaining - len(rows)} more attaining keys"
                    if self.n_attaining > len(rows) else "")
        bind = "; ".join(f"{g} on {l}" for g, l in self.binding) or "-"
        text = head + format_table(rows, [title]) + more
        text += f"\nbinding (grader, label): {bind}"
        if self.witness is not None and self.witness.get("pair_statistics"):
            text += ("\nEq. 18 pair correctness covariance at the witness key "
                     f"{tuple(self.witness['key'])} (0: independent errors):")
            for pair, row in self.witness["pair_statistics"].items():
                text += f"\n  {pair}: " + ", ".join(f"{l} {v}" for l, v in row.items())
        if self.curve is not None:
            text += "\ncurve: " + self.curve.summary()
        return text


def binding_pairs(counts: LabelCounts, keys: Sequence[Sequence[int]],
                  value: Fraction) -> tuple[tuple[str, str], ...]:
    """(grader, label) pairs whose closed-form best accuracy equals ``value`` at some key.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> binding_pairs(paper_summaries(), [(6, 15, 4)], Fraction(2, 3))
    (('authors', 'b'), ('gpt4', 'a'))
    """
    out: dict[tuple[str, str], None] = {}
    for key in keys:
        best = best_correct(counts, key)
        for i, g in enumerate(counts.graders):
            for l, lab in enumerate(counts.labels):
                if key[l] > 0 and Fraction(int(best[i, l]), key[l]) == value:
                    out[(g, lab)] = None
    return tuple(out)


def alarm(summaries: LabelCounts | Decisions | Mapping[str, Mapping[str, int]],
          threshold: Any, *, labels: Sequence[str] | str | None = None,
          lower: Sequence[int] | None = None, upper: Sequence[int] | None = None,
          curves: bool = True, max_keys: int = 1000) -> AlarmResult:
    """No-knowledge alarm for "every grader is better than ``threshold`` on every label"
    under the M=1 axioms (Sec. III, Eq. 11), by the closed form.

    Parameters
    ----------
    summaries : LabelCounts, Decisions or {grader: {label: count}}
    threshold : number, str or Fraction in [0, 1]
    labels : declared label set (for mappings)
    lower, upper : optional bounds on each ``Q_l`` of the answer key
    curves : also walk the Q-complex for the Fig. 7/8 curves (``False``: T only)
    max_keys : at most this many attaining keys are listed

    Examples
    --------
    >>> r = alarm({"authors": {"a": 5, "b": 10, "tie": 10},
    ...            "gpt4": {"a": 4, "b": 18, "tie": 3}}, "0.7", curves=False)
    >>> r.fires, r.T, r.attaining_keys
    (True, Fraction(2, 3), ((6, 15, 4),))
    """
    counts = as_label_counts(summaries, labels=labels)
    x = as_threshold(threshold)
    r = len(counts.labels)
    bounds = qcomplex_bounds(counts.n_items, r, lower, upper)
    t = alarm_threshold(counts, lower=bounds[0], upper=bounds[1])
    n_att, keys = attaining_keys(counts, t, lower=bounds[0], upper=bounds[1], limit=max_keys)
    curve = minmax_curve(counts, lower=bounds[0], upper=bounds[1]) if curves else None
    return AlarmResult(threshold=x, fires=x >= t, T=t, attaining_keys=keys, n_attaining=n_att,
                       binding=binding_pairs(counts, keys, t), m=1,
                       n_keys=qcomplex_size(counts.n_items, r, *bounds), labels=counts.labels,
                       graders=counts.graders, method="closed form", curve=curve)
