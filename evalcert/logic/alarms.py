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

from fractions import Fraction
from typing import Any, Mapping, Sequence

import numpy as np

from evalcert.logic.qcomplex import Bounds, qcomplex_array, qcomplex_bounds, qcomplex_size
from evalcert.logic.qcomplex import iter_qcomplex
from evalcert.logic.summaries import Decisions, LabelCounts, as_label_counts, as_threshold
from evalcert.logic.result import AlarmResult, MinMaxCurve

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
