"""The full-joint alarm (paper 003, App. C extended).

Full joint: the set of evaluations consistent with the question-aligned decisions of all
N graders at once. Items with the same joint decision pattern ``p`` (one label, or "skipped",
per grader) are exchangeable, so an answer key is, exactly, a split of each pattern count
``c_p`` by true label: integers ``x[p][t] >= 0`` with ``sum_t x[p][t] = c_p`` (at most
``min(Q, (R+1)^N)`` patterns). Then

* ``Q_t = sum_p x[p][t]`` -- the key's label counts;
* ``correct[i][t] = sum_{p : p_i = t} x[p][t]`` -- items of true label ``t`` grader ``i``
  got right;
* ``den[i][t] = sum_{p : p_i decided} x[p][t]`` -- items of true label ``t`` grader ``i``
  decided (``= Q_t`` when nobody skips).

Every item-level answer key gives such an ``x`` and every ``x`` comes from one, so the
alarm "every grader better than ``x`` on every label" fires iff no ``x`` has
``correct > x * den`` wherever ``den > 0``: this is the whole truth of the decisions (the
M=1 and M=2 sets are relaxations of it, so ``T_full <= T_2 <= T_1``). With skipped items
(``on_missing="keep"``) each grader is judged on the items it decided; the key still covers
every item, so the guarantee is the same statement, per grader, on its own items.

``T`` is found by :func:`evalcert.logic.exact.exact_alarm` (shared with M=2): the model is
copied once into HiGHS, the answer keys its LP relaxation allows just above the best known
point are listed, and each is decided by a fixed-key MILP (:class:`evalcert.logic.search.
KeySearch`; with skipped items :class:`evalcert.logic.missing.SkipKeySearch`, whose fixed-key
MILPs state each free denominator in value form); with ``solver="cbc"`` by the level search over the whole Q-complex. The start
point is the LP relaxation's point rounded to an exact key and improved by a local search
(:func:`joint_start`). The witness of every feasible answer is re-checked in integer
arithmetic. Dawid & Skene's 45
patients with 5 raters (first rating each, 4 labels): see ``tests/logic/test_joint.py``.
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from evalcert.errors import InputError
from evalcert.logic.alarms import alarm_threshold, attaining_keys
from evalcert.logic.exact import _left, exact_alarm
from evalcert.logic.missing import SkipKeySearch
from evalcert.logic.qcomplex import qcomplex_bounds, qcomplex_size
from evalcert.logic.result import AlarmResult
from evalcert.logic.search import exchange_above
from evalcert.logic.splits import (JointModel, _joint_builder, _joint_value, improve_split,
                                   joint_lp_bounds, joint_patterns, witness_of_split)
from evalcert.logic.summaries import Decisions

__all__ = ["JointModel", "joint_patterns", "exact_alarm", "alarm_full", "full_alarm_threshold"]

def _m1_candidates(decisions: Decisions, lower: Any, upper: Any, limit: int):
    counts = decisions.label_counts()
    return lambda t: attaining_keys(counts, t, lower=lower, upper=upper, limit=limit)


def _check(decisions: Any) -> Decisions:
    if not isinstance(decisions, Decisions):
        raise InputError("the full-joint alarm needs question-aligned decisions (item, "
                         "grader, label), not label counts; read them with read_decisions()")
    return decisions


def full_alarm_threshold(decisions: Decisions, *, lower: Sequence[int] | None = None,
                         upper: Sequence[int] | None = None, solver: str = "highs") -> Fraction:
    """Exact full-joint threshold ``T_full`` (see :func:`alarm_full`).

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> full_alarm_threshold(table1_decisions())
    Fraction(5, 8)
    """
    return alarm_full(decisions, "0", lower=lower, upper=upper, solver=solver,
                      max_checks=0, max_binding_keys=0).T


def alarm_full(decisions: Decisions, threshold: Any, *, lower: Sequence[int] | None = None,
               upper: Sequence[int] | None = None, solver: str = "highs",
               max_checks: int = 200, max_binding_keys: int = 3, max_keys: int = 1000,
               verbose: bool = False, progress: bool = False,
               time_limit: float | None = None,
               start: tuple[Fraction, tuple[int, ...], np.ndarray] | None = None
               ) -> AlarmResult:
    """No-knowledge alarm on the full joint of the graders' aligned decisions.

    Parameters
    ----------
    decisions : Decisions
        Skipped decisions (``-1``, from ``on_missing="keep"``) are allowed: each grader is
        then judged on the items it decided.
    threshold : level ``x`` in [0, 1]
    lower, upper : bounds on the key's label counts
    max_checks : list the attaining keys exactly when at most this many M=1 candidates
        exist (complete decisions only); otherwise ``n_attaining`` is None and only a
        witness key is listed
    max_binding_keys : keys at which binding (grader, label) pairs are computed
    progress, time_limit : a progress bar on stderr past ~3 s; stop after ``time_limit``
        seconds with the proven bounds ``T in [T, T_upper]``
        (:func:`~evalcert.logic.exact.exact_alarm`)
    start : ``(value, key, split)`` of a consistent point known in advance (a joint split
        over :func:`joint_patterns`' patterns, its key and exact value): a warm start, used
        when better than the LP-rounded one (the population bootstrap passes the full
        sample's key)

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> r = alarm_full(table1_decisions(), "0.5")
    >>> r.T, r.attaining_keys
    (Fraction(5, 8), ((6, 16, 3), (8, 14, 3)))
    """
    t_start = time.perf_counter()  # the time limit counts the start point too
    dec = _check(decisions)
    n, r = len(dec.items), len(dec.labels)
    lo, hi = qcomplex_bounds(n, r, lower, upper)
    bounded = lower is not None or upper is not None

    build = _joint_builder(dec, lo if bounded else None, hi if bounded else None)
    if dec.complete:
        top = alarm_threshold(dec.label_counts(), lower=lo, upper=hi)
        cands = _m1_candidates(dec, lo, hi, max_keys)
    else:
        top, cands = Fraction(1), None
    pats, _ = joint_patterns(dec)

    def as_split(point: Any) -> np.ndarray:
        return point if isinstance(point, np.ndarray) else np.array(
            [[point[f"x_{p}_{t}"] for t in range(r)] for p in range(len(pats))], dtype=np.int64)

    def describe(key: tuple[int, ...], point: Any) -> dict[str, Any]:
        return witness_of_split(dec, key, as_split(point))

    def improve(point: Any) -> tuple[Fraction, tuple[int, ...], np.ndarray]:
        split = improve_split(pats, as_split(point))
        if bounded and not all(a <= v <= b for a, v, b in zip(lo, split.sum(axis=0), hi)):
            split = as_split(point)  # the local search left the key bounds: keep the solver's
        return _joint_value(pats, split), tuple(int(v) for v in split.sum(axis=0)), split

    warm = start
    start, lp_bound = joint_lp_bounds(dec, top, solver, lo if bounded else None,
                                      hi if bounded else None)
    if warm is not None and (start is None or warm[0] > start[0]):
        start = warm
    if lp_bound is not None:  # T_full < lp_bound: the LP relaxation is infeasible there
        top = min(top, lp_bound)
    return exact_alarm(build, dec, threshold, upper=top, m="full", method="full-joint ILP",
                       solver=solver, candidates=cands, n_keys=qcomplex_size(n, r, lo, hi),
                       max_checks=max_checks, max_binding_keys=max_binding_keys,
                       verbose=verbose, describe=describe, improve=improve, start=start,
                       progress=progress, time_limit=_left(time_limit, t_start),
                       nudge=lambda point, i, t, level: exchange_above(
                           pats, as_split(point), (i, t), level),
                       **({} if dec.complete else {"key_search": SkipKeySearch}))
