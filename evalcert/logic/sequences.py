"""Sequence-aligned summaries (paper 003, App. E): the logic of single-question summaries
applied to runs of consecutive questions.

For a test of ``Q`` items in a fixed order, the ``Q - S + 1`` windows of ``S`` consecutive
items become the new items, and a grader's ``S`` labels in a window become one of ``R^S``
labels (``"a|b"`` for ``S = 2``). Every alarm then applies unchanged: the answer key is the
key of the windows, and a grader's accuracy on the label ``"a|b"`` is how often it got both
items of an ``(a, b)`` window right.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from evalcert.errors import InputError
from evalcert.logic.qcomplex import qcomplex_bounds
from evalcert.logic.summaries import Decisions

if TYPE_CHECKING:
    from evalcert.logic.result import AlarmResult

__all__ = ["sequence_aligned", "MAX_SEQUENCE_LABELS", "window_key_of", "window_key_realizable",
           "SequenceJointModel", "alarm_sequence"]

#: most labels ``R^S`` a sequence-aligned summary may have
MAX_SEQUENCE_LABELS = 64


def sequence_aligned(decisions: Decisions, size: int = 2) -> Decisions:
    """Windows of ``size`` consecutive items (in the decisions' item order) as new items with
    ``R^size`` labels; a window with a skipped decision is skipped (``-1``) for that grader.

    Examples
    --------
    >>> from evalcert.logic import decisions_from_frame
    >>> import pandas as pd
    >>> d = decisions_from_frame(pd.DataFrame({"item": [1, 2, 3], "grader": "x",
    ...                                        "label": ["a", "b", "b"]}), labels="a,b")
    >>> s = sequence_aligned(d)
    >>> s.items, s.labels, s.codes
    (('1|2', '2|3'), ('a|a', 'a|b', 'b|a', 'b|b'), ((1,), (3,)))
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InputError(f"sequence size {size!r}; give an integer >= 1")
    r, q = len(decisions.labels), len(decisions.items)
    if size > q:
        raise InputError(f"sequence size {size} exceeds the {q} items")
    if r ** size > MAX_SEQUENCE_LABELS:
        raise InputError(f"R^S = {r}^{size} = {r ** size} sequence labels (limit "
                         f"{MAX_SEQUENCE_LABELS}); use a shorter sequence or fewer labels")
    if size == 1:
        return decisions
    arr = decisions.array
    n_win = q - size + 1
    codes = np.zeros((n_win, arr.shape[1]), dtype=np.int64)
    skipped = np.zeros_like(codes, dtype=bool)
    for s in range(size):
        part = arr[s:s + n_win]
        codes = codes * r + np.maximum(part, 0)
        skipped |= part < 0
    codes[skipped] = -1
    items = tuple("|".join(decisions.items[k:k + size]) for k in range(n_win))
    labels = tuple("|".join(t) for t in itertools.product(decisions.labels, repeat=size))
    return Decisions(items, decisions.graders, labels, tuple(map(tuple, codes.tolist())),
                     decisions.report)


def window_digits(size: int, r: int) -> np.ndarray:
    """``(R^size, size)`` item labels of each window label, in :func:`sequence_aligned`'s
    order (the first item is the most significant digit)."""
    return np.array(list(itertools.product(range(r), repeat=size)), dtype=np.int64).reshape(
        r ** size, size)


def window_key_of(item_key: Sequence[int], r: int, size: int) -> tuple[int, ...]:
    """Window key (counts of each window label) of one item-level key (a label per item).

    Examples
    --------
    >>> window_key_of([0, 1, 1, 0], r=2, size=2)  # windows (a,b), (b,b), (b,a)
    (0, 1, 1, 1)
    """
    z = np.asarray(item_key, dtype=np.int64)
    codes = np.zeros(len(z) - size + 1, dtype=np.int64)
    for s in range(size):
        codes = codes * r + z[s:s + len(codes)]
    return tuple(int(v) for v in np.bincount(codes, minlength=r ** size))


def window_key_realizable(key: Sequence[int], r: int, size: int) -> bool:
    """Whether a window key is the window key of some item-level key: its windows form one
    trail through the graph on ``size - 1`` item labels (an Eulerian trail: out-degree minus
    in-degree is 0 everywhere, or +1 at one start and -1 at one end, and the windows used
    are connected).

    Examples
    --------
    >>> window_key_realizable((2, 6, 0, 2, 6, 4, 2, 2, 0), r=3, size=2)  # out - in = (2, -2, 0)
    False
    >>> window_key_realizable(window_key_of([0, 2, 1, 1, 0], 3, 2), r=3, size=2)
    True
    """
    key = np.asarray(key, dtype=np.int64)
    digits = window_digits(size, r)
    base = r ** (size - 1)
    src = (digits[:, :-1] @ (r ** np.arange(size - 2, -1, -1))) if size > 1 else 0
    dst = (digits[:, 1:] @ (r ** np.arange(size - 2, -1, -1))) if size > 1 else 0
    out = np.bincount(src, weights=key, minlength=base).astype(np.int64)
    inn = np.bincount(dst, weights=key, minlength=base).astype(np.int64)
    diff = out - inn
    if np.abs(diff).max() > 1 or (diff == 1).sum() > 1:
        return False
    parent = list(range(base))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for l in np.flatnonzero(key):
        parent[find(int(src[l]))] = find(int(dst[l]))
    used = {find(int(v)) for l in np.flatnonzero(key) for v in (src[l], dst[l])}
    return len(used) <= 1


class SequenceJointModel:
    """Full joint of windows chained through one item-level answer key (App. E, exact).

    Binary ``y[k][t]`` (item ``k`` has true label ``t``, one per item) and window indicators
    ``w[k][l]`` whose marginal on each position ``j`` of the window is ``y[k + j]``, so a
    window's true label is the labels of its own items. Attributes ``prob``, ``q`` (window
    key), ``correct[i][l]``, ``den[i][l]`` as in :class:`evalcert.logic.joint.JointModel`.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> model = SequenceJointModel(table1_decisions(), 2)
    >>> len(model.y), len(model.w), len(model.q)  # 25 items, 24 windows, 9 window labels
    (25, 24, 9)
    """

    def __init__(self, decisions: Decisions, size: int, key: Sequence[int] | None = None,
                 lower: Sequence[int] | None = None, upper: Sequence[int] | None = None):
        import pulp

        windows = sequence_aligned(decisions, size)
        r, n_items = len(decisions.labels), len(decisions.items)
        n_lab, n_win = len(windows.labels), len(windows.items)
        digits = window_digits(size, r)
        self.prob = prob = pulp.LpProblem("sequence_joint", pulp.LpMaximize)
        self.y = [[prob.add_variable(f"y_{k}_{t}", 0, 1, cat="Integer") for t in range(r)]
                  for k in range(n_items)]
        for k in range(n_items):
            prob += pulp.lpSum(self.y[k]) == 1, f"item_{k}"
        self.w = [[prob.add_variable(f"w_{k}_{l}", 0, 1, cat="Integer") for l in range(n_lab)]
                  for k in range(n_win)]
        for k in range(n_win):
            for j in range(size):
                for t in range(r):
                    prob += (pulp.lpSum(self.w[k][l] for l in np.flatnonzero(digits[:, j] == t))
                             == self.y[k + j][t]), f"chain_{k}_{j}_{t}"
        self.q = [pulp.lpSum(self.w[k][l] for k in range(n_win)) for l in range(n_lab)]
        if key is not None:
            if len(key) != n_lab or sum(key) != n_win:
                raise InputError(f"window key {tuple(key)} must have {n_lab} entries summing "
                                 f"to {n_win} windows")
            for l in range(n_lab):
                prob += self.q[l] == int(key[l]), f"key_{l}"
        elif lower is not None or upper is not None:
            lo, hi = qcomplex_bounds(n_win, n_lab, lower, upper)
            for l in range(n_lab):
                prob += self.q[l] >= lo[l], f"lower_{l}"
                prob += self.q[l] <= hi[l], f"upper_{l}"
        codes = windows.array
        self.correct = [[pulp.lpSum(self.w[k][l] for k in np.flatnonzero(codes[:, i] == l))
                         for l in range(n_lab)] for i in range(len(decisions.graders))]
        if windows.complete:
            self.den = [self.q] * len(decisions.graders)
        else:
            self.den = [[pulp.lpSum(self.w[k][l] for k in np.flatnonzero(codes[:, i] >= 0))
                         for l in range(n_lab)] for i in range(len(decisions.graders))]

    def item_key(self, values: dict[str, int]) -> list[int]:
        """The item-level key (a label index per item) of an integer point."""
        return [max(range(len(row)), key=lambda t: values[row[t].name]) for row in self.y]


def _chain_point(decisions: Decisions, size: int, lo: Sequence[int], caps: Sequence[int],
                 solver: str) -> tuple[tuple[int, ...], list[int]] | None:
    """A window key within ``[lo, caps]`` that one item-level key attains (MILP), or None."""
    import pulp

    from evalcert.logic.ilp import run_solver
    from evalcert.logic.levels import check_integer_solution

    model = SequenceJointModel(decisions, size)
    for l, (a, b) in enumerate(zip(lo, caps)):
        model.prob += model.q[l] >= int(a), f"lo_{l}"
        model.prob += model.q[l] <= int(b), f"cap_{l}"
    model.prob += pulp.lpSum([])
    status, _ = run_solver(model.prob, solver)
    if status == "Infeasible":
        return None
    values = check_integer_solution(model.prob, "chained window key")
    item_key = model.item_key(values)
    return window_key_of(item_key, len(decisions.labels), size), item_key


def _m1_levels(m: Sequence[int], n_win: int, top: Fraction) -> list[Fraction]:
    """Every value ``v(q)`` can take (``1`` and the breakpoints ``m_l / k``), ``<= top``,
    and 0, in decreasing order."""
    levels = {Fraction(1), Fraction(0)}
    for ml in m:
        levels.update(Fraction(ml, k) for k in range(ml + 1, n_win + 1))
    return sorted((v for v in levels if v <= top), reverse=True)


def alarm_sequence(decisions: Decisions, size: int, threshold: Any, *, m: str | int = "full",
                   lower: Sequence[int] | None = None, upper: Sequence[int] | None = None,
                   solver: str = "highs", max_keys: int = 1000, max_checks: int = 200,
                   verbose: bool = False, progress: bool = False,
                   time_limit: float | None = None) -> "AlarmResult":
    """The alarm on windows of ``size`` consecutive items (App. E) whose answer key comes
    from one item-level key: the windows are chained through their items' true labels.

    Without the chain a window key such as (2, 6, 0, 2, 6, 4, 2, 2, 0) on MT-Bench (out-
    minus in-degree (2, -2, 0)) is no item-level key's, and its ``T`` (1/2 there) is
    attained by nothing (issue 25). Here:

    * ``m="full"``: the full joint of the windows' decisions over :class:`SequenceJointModel`
      (item labels are variables; each window's true label is its items'), by the exact
      driver :func:`evalcert.logic.exact.exact_alarm`;
    * ``m=1``: ``T = max v(q)`` over the window keys some item-level key attains
      (:func:`window_key_realizable`): bisection over the values ``v`` can take, each level
      decided by one chain MILP with ``q_l <= floor(m_l / t)``;
    * ``m=2`` is refused (the pair axioms on chained windows are not implemented).

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> r = alarm_sequence(table1_decisions(), 2, "0.5")
    >>> r.T, window_key_realizable(r.attaining_keys[0], 3, 2)
    (Fraction(3, 7), True)
    """
    from evalcert.logic.alarms import (AlarmResult, alarm_threshold, attaining_keys,
                                       binding_pairs, _caps)
    from evalcert.logic.summaries import as_threshold

    m = str(m)
    windows = sequence_aligned(decisions, size)
    r, n_lab, n_win = len(decisions.labels), len(windows.labels), len(windows.items)
    lo, hi = qcomplex_bounds(n_win, n_lab, lower, upper)
    if m == "2":
        raise InputError("--sequence with --m 2 is not implemented (the pair axioms on "
                         "windows chained through one item-level key); use --m full (exact) "
                         "or --m 1")
    if m not in ("1", "full"):
        raise InputError(f"m={m!r}; use 1, 2 or full")

    def realizable(keys: Any, n: int) -> tuple[int, list[tuple[int, ...]]]:
        ok = [k for k in keys if window_key_realizable(k, r, size)]
        return (len(ok), ok) if n <= len(keys) else (n, ok)

    if m == "full":
        from evalcert.logic.exact import RatioProgram, exact_alarm

        def build(key: Sequence[int] | None) -> RatioProgram:
            model = SequenceJointModel(decisions, size, key=key,
                                       lower=lower if key is None else None,
                                       upper=upper if key is None else None)
            return RatioProgram(model.prob, model.q, model.correct, model.den)

        counts = windows.label_counts() if windows.complete else None
        top = alarm_threshold(counts, lower=lo, upper=hi) if counts is not None else Fraction(1)
        cands = None
        if counts is not None:
            def cands(t: Fraction) -> tuple[int, list[tuple[int, ...]]]:
                n, keys = attaining_keys(counts, t, lower=lo, upper=hi, limit=max_keys)
                return realizable(keys, n)

        def describe(key: tuple[int, ...], values: Any) -> dict[str, Any]:
            model = SequenceJointModel(decisions, size)
            z = model.item_key(values)
            codes = windows.array
            truth = np.array([int(np.ravel_multi_index(tuple(z[k:k + size]), (r,) * size))
                              for k in range(n_win)])
            correct = {g: [int(((truth == l) & (codes[:, i] == l)).sum())
                           for l in range(n_lab)] for i, g in enumerate(decisions.graders)}
            return {"key": list(key), "correct": correct,
                    "item_key": [decisions.labels[t] for t in z]}

        return exact_alarm(build, windows, threshold, upper=top, m="full",
                           method="chained full-joint ILP", solver=solver, candidates=cands,
                           n_keys=None, max_checks=max_checks, verbose=verbose,
                           describe=describe, max_keys=max_keys, progress=progress,
                           time_limit=time_limit)
    if not windows.complete:
        raise InputError("--on-missing keep leaves skipped decisions, which only --m full "
                         "handles; use --m full or --on-missing drop")
    import time

    t0 = time.perf_counter()
    counts = windows.label_counts()
    mins = [int(v) for v in counts.array.min(axis=0)]
    levels = _m1_levels(mins, n_win, alarm_threshold(counts, lower=lo, upper=hi))
    n_solves = 0

    def point(t: Fraction) -> tuple[tuple[int, ...], list[int]] | None:
        nonlocal n_solves
        caps = list(hi) if t == 0 else _caps(mins, t, (lo, hi))
        if caps is None or sum(caps) < n_win:
            return None
        n_solves += 1
        return _chain_point(decisions, size, lo, caps, solver)

    a, b = 0, len(levels) - 1      # levels[b] = 0 is always attained; find the first feasible
    found = point(levels[b])
    if found is None:
        raise InputError("no item-level answer key meets the --lower/--upper window bounds")
    while a < b:
        mid = (a + b) // 2
        got = point(levels[mid])
        if got is None:
            a = mid + 1
        else:
            b, found = mid, got
    t_val = levels[b]
    n_att, keys = attaining_keys(counts, t_val, lower=lo, upper=hi, limit=max_keys)
    n_att, keys = realizable(keys, n_att)
    if n_att > len(keys) or not keys:
        n_att, keys = None, [found[0]]
    x = as_threshold(threshold)
    return AlarmResult(threshold=x, fires=x >= t_val, T=t_val, attaining_keys=tuple(keys),
                       n_attaining=n_att, binding=binding_pairs(counts, keys, t_val), m=1,
                       n_keys=None, labels=windows.labels, graders=windows.graders,
                       method="closed form on chained window keys (chain MILPs)",
                       n_solves=n_solves, seconds=time.perf_counter() - t0,
                       witness={"key": list(found[0]),
                                "item_key": [decisions.labels[t] for t in found[1]]})
