"""The full joint as pattern splits (paper 003, App. C extended): :class:`JointModel` and
its integer points.

Items with the same joint decision pattern are exchangeable, so an answer key is exactly a
split ``x[p][t]`` of each pattern count by true label (see :mod:`evalcert.logic.joint`). Any
integer split is a real answer key with its whole evaluation, so its exact value is a proven
lower bound on ``T_full <= T_2 <= T_1``: :func:`joint_start` is the start point of both exact
alarms (M=2 and the full joint), and :func:`witness_of_split` their witness. This module is
shared by :mod:`~evalcert.logic.pairs`, :mod:`~evalcert.logic.joint` and
:mod:`~evalcert.logic.bounds`, so none of them imports another sideways.
"""

from __future__ import annotations

import itertools
import weakref
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np
import pulp

from evalcert.errors import InputError
from evalcert.logic.exact import RatioProgram, _relaxed, lp_levels
from evalcert.logic.qcomplex import qcomplex_bounds
from evalcert.logic.summaries import Decisions

__all__ = ["MAX_PATTERNS", "JointModel", "joint_patterns"]

#: most joint decision patterns the full-joint ILP accepts (R labels x patterns variables)
MAX_PATTERNS = 20_000


def joint_patterns(decisions: Decisions) -> tuple[np.ndarray, np.ndarray]:
    """Distinct joint decision patterns ``(P, N)`` (``-1`` = skipped) and their counts.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> patterns, counts = joint_patterns(table1_decisions())  # 25 items, 2 graders
    >>> patterns.shape, int(counts.sum()), patterns[:2].tolist(), counts[:2].tolist()
    ((7, 2), 25, [[0, 0], [0, 1]], [3, 2])
    """
    hit = _PATTERNS.get(id(decisions))
    if hit is not None and hit[0]() is decisions:
        return hit[1], hit[2]
    arr = np.array(decisions.codes, dtype=np.int64).reshape(len(decisions.items),
                                                            len(decisions.graders))
    base, n_g = len(decisions.labels) + 1, arr.shape[1]
    if n_g * np.log2(base) < 62:  # one integer per row, digits in row order: same order
        codes = (arr + 1) @ (base ** np.arange(n_g - 1, -1, -1, dtype=np.int64))
        uniq, first, counts = np.unique(codes, return_index=True, return_counts=True)
        pats = arr[first]
    else:
        pats, counts = np.unique(arr, axis=0, return_counts=True)
    pats.setflags(write=False)
    counts.setflags(write=False)
    if len(_PATTERNS) >= 8:
        _PATTERNS.pop(next(iter(_PATTERNS)))
    _PATTERNS[id(decisions)] = (weakref.ref(decisions), pats, counts)
    return pats, counts


#: joint_patterns of the last few Decisions (by id, checked by a weak reference): the
#: alarms call it several times per log, and at Q = 100,000 one call costs ~0.5 s
_PATTERNS: dict[int, tuple[Any, np.ndarray, np.ndarray]] = {}


class JointModel:
    """PuLP model of the full joint: pattern counts split by true label.

    Attributes ``prob``, ``q`` (key label counts, expressions), ``correct[i][t]`` and
    ``den[i][t]`` (expressions), as in the module docstring.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> model = JointModel(table1_decisions(), key=(6, 16, 3))
    >>> len(model.x), len(model.correct)  # 7 patterns split by label; 2 graders
    (7, 2)
    >>> from evalcert.logic.ilp import run_solver
    >>> status, _ = run_solver(model.prob)
    >>> status, [int(pulp.value(q)) for q in model.q]
    ('Optimal', [6, 16, 3])
    """

    def __init__(self, decisions: Decisions, key: Sequence[int] | None = None,
                 lower: Sequence[int] | None = None, upper: Sequence[int] | None = None,
                 sense: int = pulp.LpMaximize):
        pats, counts = joint_patterns(decisions)
        if len(pats) > MAX_PATTERNS:
            raise InputError(f"{len(pats)} distinct joint decision patterns (limit "
                             f"{MAX_PATTERNS}); use --m 2 or fewer graders")
        r, n = len(decisions.labels), len(decisions.items)
        self.prob = pulp.LpProblem("full_joint", sense)
        self.x = x = [[self.prob.add_variable(f"x_{p}_{t}", 0, int(c), cat="Integer")
                       for t in range(r)] for p, c in enumerate(counts)]
        for p, c in enumerate(counts):
            self.prob += pulp.lpSum(x[p]) == int(c), f"pattern_{p}"
        self.q = [pulp.lpSum(x[p][t] for p in range(len(pats))) for t in range(r)]
        if key is not None:
            key = tuple(int(v) for v in key)
            if len(key) != r or min(key) < 0 or sum(key) != n:
                raise InputError(f"answer key {key} must have {r} entries >= 0 summing to Q={n}")
            for t in range(r):
                self.prob += self.q[t] == key[t], f"key_{t}"
        elif lower is not None or upper is not None:
            lo, hi = qcomplex_bounds(n, r, lower, upper)
            for t in range(r):
                self.prob += self.q[t] >= lo[t], f"lower_{t}"
                self.prob += self.q[t] <= hi[t], f"upper_{t}"
        self.correct = [[pulp.lpSum(x[p][t] for p in range(len(pats)) if pats[p, i] == t)
                         for t in range(r)] for i in range(len(decisions.graders))]
        if (pats >= 0).all():
            self.den = [self.q] * len(decisions.graders)
        else:
            self.den = [[pulp.lpSum(x[p][t] for p in range(len(pats)) if pats[p, i] >= 0)
                         for t in range(r)] for i in range(len(decisions.graders))]


def pair_statistics(decisions: Decisions, split: np.ndarray) -> dict[str, dict[str, str]]:
    """App. C, Eq. 18 at an answer key given as a split ``x[p][t]`` of the joint patterns:
    for each pair of graders and true label ``t``, the correctness covariance
    ``Gamma = R_{(t)_i,(t)_j;t} / Q_t - (R_{(t)_i;t} / Q_t) (R_{(t)_j;t} / Q_t)`` over the
    items of true label ``t`` both decided (equal to the covariance of their errors; 0 for
    independent errors, > 0 when they fail together). Exact fractions as strings."""
    pats, _ = joint_patterns(decisions)
    out: dict[str, dict[str, str]] = {}
    for i, j in itertools.combinations(range(len(decisions.graders)), 2):
        row = {}
        for t, lab in enumerate(decisions.labels):
            both = (pats[:, i] >= 0) & (pats[:, j] >= 0)
            n = int(split[both, t].sum())
            if n == 0:
                continue
            ci = Fraction(int(split[both & (pats[:, i] == t), t].sum()), n)
            cj = Fraction(int(split[both & (pats[:, j] == t), t].sum()), n)
            cij = Fraction(int(split[both & (pats[:, i] == t) & (pats[:, j] == t), t].sum()), n)
            row[lab] = str(cij - ci * cj)
        out[f"{decisions.graders[i]}~{decisions.graders[j]}"] = row
    return out


def rounded_joint_point(decisions: Decisions, level: Fraction, solver: str = "highs"
                        ) -> tuple[Fraction, tuple[int, ...], np.ndarray] | None:
    """Round the full-joint LP point at ``level`` to integers (each pattern count split by
    largest remainders, so it stays an exact answer key); return its exact value, key and
    integer split ``x[p][t]``.

    Any such point is consistent under every M (the M=1 and M=2 sets contain the joint
    one), so its value is a proven lower bound on ``T_full <= T_2 <= T_1``.
    """
    model = JointModel(decisions)
    spec = _relaxed(lambda key: RatioProgram(model.prob, model.q, model.correct, model.den), level,
                    solver)
    if spec is None:
        return None
    r = len(decisions.labels)
    frac = np.array([[model.x[p][t].varValue or 0.0 for t in range(r)]
                     for p in range(len(model.x))])
    return _round_split(decisions, frac)


def _round_split(decisions: Decisions, frac: np.ndarray
                 ) -> tuple[Fraction, tuple[int, ...], np.ndarray]:
    """An LP split ``frac[p][t]`` rounded to an exact one (largest remainders per pattern),
    improved by :func:`improve_split`: ``(exact value, key, split)``."""
    pats, counts = joint_patterns(decisions)
    x = np.floor(frac + 1e-9).astype(np.int64)
    x = np.minimum(np.maximum(x, 0), counts[:, None])
    for p in range(len(pats)):
        left = int(counts[p] - x[p].sum())
        order = np.argsort(-(frac[p] - x[p]), kind="stable")
        for t in order[:max(left, 0)]:
            x[p, t] += 1
        while x[p].sum() > counts[p]:  # floor + 1e-9 can overshoot by an item
            x[p, int(np.argmax(x[p]))] -= 1
    x = improve_split(pats, x)
    return _joint_value(pats, x), tuple(int(v) for v in x.sum(axis=0)), x


def _score(pats: np.ndarray, x: np.ndarray) -> tuple[Fraction, int]:
    """(exact min ratio, minus the number of (grader, label) cells attaining it)."""
    ratios = []
    for i in range(pats.shape[1]):
        for t in range(x.shape[1]):
            den = int(x[pats[:, i] >= 0, t].sum())
            if den:
                ratios.append(Fraction(int(x[pats[:, i] == t, t].sum()), den))
    low = min(ratios, default=Fraction(1))
    return low, -ratios.count(low)


def improve_split(pats: np.ndarray, x: np.ndarray, max_moves: int = 500) -> np.ndarray:
    """Greedy local search on an integer split ``x[p][t]``: move one item of a pattern to
    another true label while that raises (min ratio, fewer cells at the min), compared
    exactly. Any split is a consistent answer key, so the result is a valid lower bound;
    it lets the exact search start its next test higher."""
    x = x.copy()
    n_g, r = pats.shape[1], x.shape[1]
    decided = (pats >= 0).astype(np.int64)                  # (P, N)
    said = [(pats == t).astype(np.int64) for t in range(r)]  # (P, N) each
    best = _score(pats, x)
    for _ in range(max_moves):
        corr = np.stack([said[t].T @ x[:, t] for t in range(r)], axis=1)   # (N, R)
        den = np.stack([decided.T @ x[:, t] for t in range(r)], axis=1)
        cand = None
        for s in range(r):
            for t in range(r):
                if s == t:
                    continue
                movable = np.flatnonzero(x[:, s] > 0)
                if movable.size == 0:
                    continue
                c = np.repeat(corr[None].astype(float), movable.size, axis=0)
                d = np.repeat(den[None].astype(float), movable.size, axis=0)
                c[:, :, s] -= said[s][movable]
                d[:, :, s] -= decided[movable]
                c[:, :, t] += said[t][movable]
                d[:, :, t] += decided[movable]
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.where(d > 0, c / np.maximum(d, 1), np.inf).reshape(
                        movable.size, n_g * r)
                low = ratio.min(axis=1)
                k = int(np.argmax(low - 1e-9 * (ratio <= low[:, None] + 1e-12).sum(axis=1)))
                if cand is None or low[k] > cand[0]:
                    cand = (low[k], movable[k], s, t)
        if cand is None:
            break
        y = x.copy()
        y[cand[1], cand[2]] -= 1
        y[cand[1], cand[3]] += 1
        score = _score(pats, y)
        if score <= best:
            break
        x, best = y, score
    return x


def _joint_value(pats: np.ndarray, x: np.ndarray) -> Fraction:
    """Exact ``min_{i,t} correct / den`` of an integer split ``x[p][t]`` of the patterns."""
    out = Fraction(1)
    for i in range(pats.shape[1]):
        for t in range(x.shape[1]):
            den = int(x[pats[:, i] >= 0, t].sum())
            if den:
                out = min(out, Fraction(int(x[pats[:, i] == t, t].sum()), den))
    return out


def _joint_builder(dec: Decisions, lower: Any = None, upper: Any = None
                   ) -> Callable[[Sequence[int] | None], RatioProgram]:
    def build(key: Sequence[int] | None) -> RatioProgram:
        model = JointModel(dec, key=key, lower=None if key is not None else lower,
                           upper=None if key is not None else upper)
        return RatioProgram(model.prob, model.q, model.correct, model.den)
    return build


def witness_of_split(dec: Decisions, key: tuple[int, ...], split: np.ndarray) -> dict[str, Any]:
    """Key, correct counts per grader and Eq. 18 statistics of a joint split ``x[p][t]``."""
    pats, _ = joint_patterns(dec)
    correct = {g: [int(split[pats[:, i] == t, t].sum()) for t in range(len(dec.labels))]
               for i, g in enumerate(dec.graders)}
    return {"key": list(key), "correct": correct,
            "pair_statistics": pair_statistics(dec, split)}


def joint_start(dec: Decisions, top: Fraction, solver: str, lower: Any = None,
                upper: Any = None) -> tuple[Fraction, tuple[int, ...], np.ndarray] | None:
    """A proven lower bound for any M: the full-joint LP point near its largest feasible
    level, rounded to an exact key (:func:`rounded_joint_point`). Skipped when the key is
    bounded (rounding may leave the bounds)."""
    return joint_lp_bounds(dec, top, solver, lower, upper)[0]


def joint_lp_bounds(dec: Decisions, top: Fraction, solver: str, lower: Any = None,
                    upper: Any = None
                    ) -> tuple[tuple[Fraction, tuple[int, ...], np.ndarray] | None,
                               Fraction | None]:
    """``(start, bound)``: :func:`joint_start`'s point, and the lowest level at which the
    full joint's LP relaxation is infeasible (None if it never was below ``top``): the
    integer program is infeasible there too, so ``T_full < bound`` (not a bound on M=2,
    whose set is larger)."""
    if lower is not None or upper is not None:
        return None, None
    if solver != "highs":
        level, bound = lp_levels(_joint_builder(dec), top, len(dec.items), solver)
        return rounded_joint_point(dec, level, solver), bound
    from evalcert.logic.search import KeySearch  # search imports exact, which imports us

    n, r = len(dec.items), len(dec.labels)
    model = JointModel(dec)
    finder = KeySearch(model.prob, model.q, model.correct, model.den, n)
    cols = np.array([[finder.model.index[v.name] for v in row] for row in model.x],
                    dtype=np.int64).reshape(-1, r)
    low, high, bound, point = Fraction(0), top, None, None
    for _ in range(24):  # the same bisection as lp_levels, on one HiGHS model
        mid = ((low + high) / 2).limit_denominator(n)
        if not low < mid < high:
            break
        finder.set_level(mid)
        finder._fix(None, mid)
        if finder.model.solve(relax=True) == "Optimal":
            low, point = mid, np.asarray(finder.model.values())[cols]
        else:
            high = bound = mid
    if point is None:  # level 0: every key, so the LP, is feasible
        finder.set_level(Fraction(0))
        finder._fix(None, Fraction(0))
        if finder.model.solve(relax=True) != "Optimal":
            return None, bound
        point = np.asarray(finder.model.values())[cols]
    return _round_split(dec, point), bound
