"""Exact alarm thresholds by enumerating answer keys: the fast path of the exact alarms.

The level search it replaces, and the exact re-checks both use, are in
:mod:`evalcert.logic.levels`.

This is the fast path (issue 11, item 3). Near ``T`` the whole-Q-complex
MILPs are slow to prove infeasible (the LP relaxation is feasible a fraction of an item above
``T``, and branch and bound must exhaust the rounding of ``f * Q_t``), but the LP relaxation
at a level just above the best known point allows only a few answer keys (tens at Q = 1000,
R = 3, N = 5). So: copy the model once into HiGHS (:class:`evalcert.logic.ilp.HighsModel`),
list every integer key the LP relaxation allows at the next level (one LP minimum and
maximum per key coordinate and slice, rounded outwards), and decide each key by a fixed-key
MILP (fast: the key fixes every denominator). A feasible key raises the level (its point is
re-checked exactly by the caller) and is tried again at the next one; an infeasible key is
infeasible at every higher level too. When every key is decided, ``T`` is the best point
found. Nothing is dropped on a float: the level rows ``b M >= a D`` are relaxed by half a
unit (exact on integers) and ``correct >= M`` by 1e-6, LP bounds on key counts are rounded
outwards (by 1e-3), and a solver stop without an answer raises. LP and MILP infeasibility
answers are HiGHS's, as in the level search; LP optima only order the keys.

With skipped items a key does not fix the denominators ``D`` (each grader is judged on the
items it decided), so ``b M >= a D`` alone gives a weak LP at the key. Each fixed-key MILP
then first bounds every free ``D`` by its LP minimum and maximum at the key (rounded
outwards) and adds the edges of the lower convex hull of ``(d, ceil(level * d))`` over that
range (:func:`~evalcert.logic.levels.ceil_hull`) as rows on ``(D, M)``: valid for every
integer point, and 30-100x faster infeasibility proofs on 200-item logs with 10% skipped.
Keys are ordered, and the fixed-key MILP maximises, ``min correct / Q_t`` (``<= correct / D``: a heuristic only).
With every denominator fixed by the key, a fixed-key MILP (search step or binding check)
is preceded by a warm LP re-solve, whose infeasibility decides it (~10 ms instead of the
~0.1 s of the MILP's own presolve and root LP), and the correct counts are continuous
columns (whole sums of integer variables: declared integer, HiGHS found the first point of
a feasible fixed-key MILP 2-4x later on the full joint at N = 8).

Issue 25 (item 4): at every level the same hull cuts are added for every denominator over
the range the LP allows it with the key free (:meth:`KeySearch.level_cuts`; valid at that
level and above, so they stay until the search ends): the Farey successor of the best point
has a large denominator, so the cuts are far tighter than ``b M >= a D`` and the region of
keys shrinks (R = 4, N = 5, Q = 1000: 10 keys instead of 650). The start is raised once by
:meth:`KeySearch._climb`, keys are decided nearest the middle of the region first (an LP,
then a MILP, each when reached), and the region is listed again when the level rises.

Feasible answers are re-checked exactly (every constraint in integer arithmetic);
infeasible answers are the solver's (HiGHS/CBC with a zero gap), cross-checked against
brute force in the tests.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any, Callable

import numpy as np
import pulp

from evalcert.logic.ilp import HighsModel
from evalcert.logic.levels import ceil_hull, farey_successor, simplest_between

__all__ = ["KeySearch"]


class KeySearch:
    """Exact ``max min_{i,t} correct[i][t] / den[i][t]`` over a model's integer points by
    enumerating the answer keys its LP relaxation allows (see the module docstring).

    Parameters
    ----------
    prob : pulp.LpProblem
        The consistent set (no level rows, no objective needed); copied once into HiGHS.
    q : list of PuLP expressions or variables
        The answer key's label counts (summing to ``n_items``).
    correct, den : lists (per grader) of lists (per label) of PuLP expressions
        ``correct[i][t] / den[i][t]`` is grader ``i``'s accuracy on label ``t``; a cell with
        ``den = 0`` makes no demand. Level rows ``b M_d >= a D_d``, ``correct >= M_d`` with
        integer ``D_d = den``, ``M_d`` (one pair per distinct denominator) state "at least
        ``a / b``" exactly, as in the whole-Q-complex search.
    n_items : int
        ``Q``, the key's total; every denominator is at most ``Q`` (or ``max_den``).
    max_keys : int
        Most keys decided one by one; while the LP relaxation allows more, :meth:`run`
        bisects the levels with whole-Q-complex MILPs instead.
    max_den : int, optional
        The largest denominator when it exceeds ``Q`` (half credit doubles every ratio's
        terms: ``2 Q``).

    Examples
    --------
    Two graders on MT-Bench Table I, through the M=2 model (M=2 is the joint for two):

    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> from evalcert.logic.pairs import M2Model
    >>> model = M2Model(table1_decisions())
    >>> diag = [[model.e[i][t][t] for t in range(3)] for i in range(2)]
    >>> search = KeySearch(model.prob, model.q, diag, [model.q] * 2, 25)
    >>> def record(values, level):
    ...     return min(Fraction(round(values[f"E_{i}_{t}_{t}"]), round(values[f"Q_{t}"]))
    ...                for i in range(2) for t in range(3) if round(values[f"Q_{t}"]))
    >>> search.run(Fraction(1, 2), Fraction(1), record)  # (T, keys decided one by one)
    (Fraction(5, 8), 1)
    """

    def __init__(self, prob: pulp.LpProblem, q: list, correct: list[list], den: list[list],
                 n_items: int, max_keys: int = 2000, max_den: int | None = None):
        self.model = m = HighsModel(prob)
        self.n, self.max_keys = int(n_items), int(max_keys)
        #: the largest denominator (``n_items`` unless the ratios are scaled, e.g. doubled
        #: for half credit: ``2 Q``): bounds the level fractions and the M, D columns
        self.max_den = int(max_den) if max_den is not None else self.n
        self._cols: dict[int, int] = {}
        self._alive: list[Any] = []  # the expressions keyed by id() stay alive
        self._spare: dict[tuple[int, ...], int] = {}  # rows of solve_at(require=...)
        self._hull: dict[int, list[int]] = {}  # cut rows per free denominator column
        self._level_hull: dict[int, list[int]] = {}  # cut rows of level_cuts per D column
        self.key = [self.column(e) for e in q]
        self.levels: list[tuple[int, int, int]] = []  # (row, M column, D column)
        self.best = m.add_column(0, 1, False)  # the best level at a fixed point (objective)
        self.best_rows: list[tuple[int, int]] = []  # (row, key column of the label)
        by_den: dict[int, int] = {}
        #: denominator columns that are a multiple ``c * Q_t`` of a key count (half credit
        #: doubles them): ``{D column: (key column, c)}``, fixed with the key
        self.scaled: dict[int, tuple[int, int]] = {}
        for i, row in enumerate(correct):
            for t, corr in enumerate(row):
                d_col = self.column(den[i][t])
                if d_col not in self.bounds_of_key() and d_col not in self.scaled:
                    times = _multiple(den[i][t], q[t])
                    if times is not None:
                        self.scaled[d_col] = (self.key[t], times)
                if d_col not in by_den:
                    mm = m.add_column(0, self.max_den, True)
                    self.levels.append((m.add_row(-0.5, None, {mm: 1.0, d_col: 0.0}), mm, d_col))
                    by_den[d_col] = mm
                # with the denominator fixed by the key, a correct count that is a whole
                # combination of integer variables is a whole number wherever they are: a
                # continuous column (declared integer, fixed-key MILPs on the full joint at
                # N = 8 found a first point 2-4x later; with skipped items it slowed them)
                fixed = d_col in self.bounds_of_key() or d_col in self.scaled
                corr_col = self.column(corr, integer=not (fixed and _implied_integer(corr)))
                m.add_row(-1e-6, None, {corr_col: 1.0, by_den[d_col]: -1.0})
                self.best_rows.append((m.add_row(-1e-6, None, {corr_col: 1.0,
                                                                self.best: 0.0}), self.key[t]))
        lp = m.h.getLp()
        self.bounds = {c: (lp.col_lower_[c], lp.col_upper_[c]) for c in self.key}
        #: every denominator is fixed by the key (complete decisions): LP range queries
        #: then take the primal simplex (:meth:`_extreme`)
        self.dens_fixed = all(d in self.bounds or d in self.scaled for _, _, d in self.levels)
        #: called as ``on_step(best, hi, keys_decided)`` between keys (progress, deadline):
        #: ``best`` is attained (re-checked), ``T <= hi`` (or ``T < hi`` once lowered)
        self.on_step: Callable[[Fraction, Fraction, int], None] | None = None

    def bounds_of_key(self) -> set[int]:
        """The key's columns."""
        return set(self.key)

    def column(self, expr: Any, integer: bool = True) -> int:
        """The HiGHS column of a PuLP variable, or of a new column ``= expr`` (integer, or
        continuous with ``integer=False`` when made here)."""
        if isinstance(expr, pulp.LpVariable):
            return self.model.index[expr.name]
        if id(expr) not in self._cols:
            col = self.model.add_column(0, self.max_den, integer)
            coefs = {col: 1.0}
            for var, coef in expr.items():
                coefs[self.model.index[var.name]] = coefs.get(self.model.index[var.name], 0.0) \
                    - float(coef)
            const = float(expr.constant) if isinstance(expr, pulp.LpAffineExpression) else 0.0
            self.model.add_row(const, const, coefs)
            self._cols[id(expr)] = col
            self._alive.append(expr)
        return self._cols[id(expr)]

    def set_level(self, level: Fraction) -> None:
        """Level rows ``b * M >= a * D`` for ``level = a / b``."""
        for row, mm, d_col in self.levels:
            self.model.set_coeff(row, mm, level.denominator)
            self.model.set_coeff(row, d_col, -level.numerator)

    def _extreme(self, col: int, maximize: bool) -> float | None:
        self.model.set_objective({col: 1.0}, maximize=maximize)
        if self.model.solve(relax=True, primal=self.dens_fixed) == "Infeasible":
            return None
        return self.model.values()[col]

    def _range(self, col: int) -> range:
        """Integer values of a column the LP allows (earlier ones fixed): its LP minimum
        and maximum, rounded outwards, within the column's bounds."""
        low = self._extreme(col, False)
        if low is None:
            return range(0)
        high = self._extreme(col, True)
        lo, hi = self.bounds[col]
        return range(max(math.ceil(low - 1e-3), math.ceil(lo)),
                     min(math.floor(high + 1e-3), math.floor(hi)) + 1)

    def region(self, small: bool = False) -> list[dict[int, int]] | None:
        """Every integer key the LP relaxation allows at the current level, or ``None`` when
        there are (probably) more than ``max_keys``: estimated first along the middle slices
        (the region is convex, so a slice through the middle is at least half the widest),
        then listed slice by slice. ``small``: the region is known to be small (it was
        listed at a lower level, and it shrinks as the level rises): no estimate."""
        r, points = len(self.key), []

        def walk(j: int, fixed: dict[int, int], middle: bool) -> int:
            col = self.key[j]
            if j == r - 1:  # the last key count is the rest
                if not middle:
                    points.append({**fixed, col: self.n - sum(fixed.values())})
                return 1
            values, total = self._range(col), 0
            for v in values[len(values) // 2:len(values) // 2 + 1] if middle else values:
                self.model.set_bounds(col, v, v)
                total += walk(j + 1, {**fixed, col: v}, middle)
                self.model.set_bounds(col, *self.bounds[col])
                if len(points) > 4 * self.max_keys:
                    break
            return total * len(values) if middle else total

        keys = None
        if small or walk(0, {}, True) <= self.max_keys:
            walk(0, {}, False)
            keys = points if len(points) <= 4 * self.max_keys else None
        self.model.set_objective({})
        return keys

    def _fix(self, point: dict[int, int] | None, level: Fraction) -> None:
        """Fix the enumerated columns (``None``: free them). A denominator fixed to ``d``
        makes ``M >= ceil(level * d)`` a bound the LP sees, and ``correct >= Q_t * best``
        the best level at the point (with skipped items ``den <= Q_t``, so it is a lower
        bound on that level: an objective that orders keys, never a claim)."""
        for col, (lo, hi) in self.bounds.items():
            v = None if point is None else point.get(col)
            self.model.set_bounds(col, *((lo, hi) if v is None else (v, v)))
        for _, mm, d_col in self.levels:
            d = None if point is None else point.get(d_col)
            if d is None and point is not None and d_col in self.scaled:
                key_col, times = self.scaled[d_col]
                d = None if point.get(key_col) is None else times * point[key_col]
            low = 0 if d is None else -(-level.numerator * d // level.denominator)
            self.model.set_bounds(mm, low, self.max_den)
        for row, key_col in self.best_rows:
            d = None if point is None else point.get(key_col)
            self.model.set_coeff(row, self.best, 0 if d is None else -d)
        for rows in self._hull.values():
            for row in rows:
                self.model.set_row_bounds(row, None, None)

    def _set_hull(self, store: dict[int, list[int]], mm: int, d_col: int, level: Fraction,
                  lo: int, hi: int) -> None:
        """Rows ``(d2 - d1) (M - m1) >= (m2 - m1) (D - d1)`` for the edges of the lower convex
        hull of ``(d, ceil(level * d))``, ``lo <= d <= hi`` (integer data, relaxed by 1/2:
        exact on integers); rows left over from a longer list are freed."""
        rows = store.setdefault(d_col, [])
        edges = ceil_hull(level, lo, hi)
        while len(rows) < len(edges):
            rows.append(self.model.add_row(None, None, {mm: 0.0, d_col: 0.0}))
        for k, row in enumerate(rows):
            if k >= len(edges):
                self.model.set_row_bounds(row, None, None)
                continue
            (d1, m1), (d2, m2) = edges[k]
            self.model.set_coeff(row, mm, d2 - d1)
            self.model.set_coeff(row, d_col, -(m2 - m1))
            self.model.set_row_bounds(row, (d2 - d1) * m1 - (m2 - m1) * d1 - 0.5, None)

    def level_cuts(self, level: Fraction, rounds: int = 3) -> bool:
        """Convex-hull cuts of ``M >= ceil(level * D)`` for every denominator column ``D``
        (a key count, or with skipped items a grader's decided items) over the range the
        LP relaxation allows it at ``level`` with the key free (rounded outwards): valid for
        every integer point at ``level`` or above, so they stay until :meth:`clear_cuts`,
        and far tighter than ``b M >= a D`` when the range is narrower than the level's
        denominator (the Farey successor of the best point has a large one). The LP ranges
        shrink with the cuts, so this repeats up to ``rounds`` times. ``False`` when the
        LP relaxation (so the integer program) is infeasible at ``level``."""
        self._fix(None, level)
        objective = self.model.objective
        seen: dict[int, tuple[int, int]] = {}
        try:
            for _ in range(rounds):
                changed = False
                for _, mm, d_col in self.levels:
                    ends = [self._extreme(d_col, maximize) for maximize in (False, True)]
                    if ends[0] is None or ends[1] is None:
                        return False
                    lo, hi = max(math.ceil(ends[0] - 1e-3), 0), math.floor(ends[1] + 1e-3)
                    if lo > hi:
                        return False
                    if seen.get(d_col) != (lo, hi):
                        changed = True
                        seen[d_col] = (lo, hi)
                        self._set_hull(self._level_hull, mm, d_col, level, lo, hi)
                if not changed:
                    break
            return True
        finally:
            self.model.set_objective(*objective)

    def clear_cuts(self) -> None:
        """Free the rows of :meth:`level_cuts` (they hold at its level and above only)."""
        for rows in self._level_hull.values():
            for row in rows:
                self.model.set_row_bounds(row, None, None)

    def _solve_fixed(self, level: Fraction) -> bool:
        """MILP at the fixed key (:meth:`_fix`) and ``level``, with convex-hull cuts of
        ``M >= ceil(level * D)`` for every denominator ``D`` the key does not fix (skipped
        items): the LP minimum and maximum of ``D`` at the key, rounded outwards, bound it to
        ``[lo, hi]``, and each edge of the lower convex hull of the points ``(d, ceil(level *
        d))``, ``lo <= d <= hi``, is a row (integer coefficients, relaxed by 1/2: exact on
        integers). Valid for every integer point at the key, and far tighter than ``b M >=
        a D`` when ``hi - lo`` is below the level's denominator: fixed-key MILPs with
        skipped items prove infeasibility 30-100x faster. ``True`` iff feasible."""
        free = [(mm, d_col) for _, mm, d_col in self.levels
                if d_col not in self.bounds and d_col not in self.scaled]
        if free:
            objective = self.model.objective
            for mm, d_col in free:
                ends = [self._extreme(d_col, maximize) for maximize in (False, True)]
                if ends[0] is None:  # the LP at the key is infeasible: so is the MILP
                    self.model.set_objective(*objective)
                    return False
                lo, hi = max(math.ceil(ends[0] - 1e-3), 0), math.floor(ends[1] + 1e-3)
                if lo > hi:  # no whole number of items in the LP's range
                    self.model.set_objective(*objective)
                    return False
                self._set_hull(self._hull, mm, d_col, level, lo, hi)
            self.model.set_objective(*objective)
        elif self.model.solve(relax=True) == "Infeasible":  # so is the MILP: a warm LP
            return False  # re-solve proves it ~10x sooner than the MILP's own root node
        return self.model.solve() == "Optimal"

    def solve_at(self, key: tuple[int, ...], level: Fraction,
                 objective: list[tuple[Any, int]] | None = None,
                 require: list[tuple[list[tuple[Any, int]], int]] = ()) -> bool:
        """MILP at a fixed key and level (maximising ``sum coef * expr`` over
        ``objective = [(expr, coef), ...]``), with extra rows ``sum coef * expr >= lower``
        for ``(terms, lower)`` in ``require`` (integer data; written ``>= lower - 1/2``, exact
        on integers) active for this solve only; on success the point is in the PuLP
        variables."""
        self.set_level(level)
        self._fix(dict(zip(self.key, key)), level)
        cost: dict[int, float] = {}
        for expr, coef in objective or []:
            cost[self.column(expr)] = cost.get(self.column(expr), 0.0) + float(coef)
        rows = [self._spare_row(terms, lower) for terms, lower in require]
        self.model.set_objective(cost, maximize=True)
        feasible = self._solve_fixed(level)
        if feasible:
            self.model.write_back()
        self.model.set_objective({})
        for row in rows:
            self.model.set_row_bounds(row, None, None)
        self._fix(None, level)
        return feasible

    def _spare_row(self, terms: list[tuple[Any, int]], lower: int) -> int:
        """An active row ``sum coef * expr >= lower - 1/2`` (rows are reused: a free row is
        inactive, so the model does not grow with the number of checks)."""
        coefs: dict[int, float] = {}
        for expr, coef in terms:
            col = self.column(expr)
            coefs[col] = coefs.get(col, 0.0) + float(coef)
        tag = tuple(sorted(coefs))
        if tag not in self._spare:
            self._spare[tag] = self.model.add_row(None, None, dict.fromkeys(coefs, 0.0))
        row = self._spare[tag]
        for col, val in coefs.items():
            self.model.set_coeff(row, col, val)
        self.model.set_row_bounds(row, lower - 0.5, None)
        return row

    def run(self, best: Fraction, upper: Fraction,
            record: Callable[[dict[str, float], Fraction], Fraction]) -> tuple[Fraction, int]:
        """Raise the attained level ``best`` to ``T`` (at most ``upper``); ``record(values,
        level)`` re-checks a feasible point exactly and returns its value (``>= level``).

        First (once) the keys around the LP relaxation's best point are tried
        (:meth:`_climb`). At each level, :meth:`level_cuts` tightens the LP (or proves the
        level unattainable); the keys it allows are listed and decided nearest the middle
        first, and once a MILP raises the level the (smaller) region is listed again.
        While the LP allows more than ``max_keys`` keys, one whole-Q-complex MILP at a level
        halfway to the lowest level known infeasible either raises ``best`` or lowers that
        level (bisection). Returns ``(T, keys decided one by one)``."""
        try:
            return self._run(best, upper, record)
        finally:
            self.clear_cuts()

    def _run(self, best: Fraction, upper: Fraction,
             record: Callable[[dict[str, float], Fraction], Fraction]) -> tuple[Fraction, int]:
        hi, decided, climbed, small = upper, set(), False, False
        while True:
            if self.on_step is not None:
                self.on_step(best, hi, len(decided))
            level = farey_successor(best, self.max_den) if best < 1 else best
            if best >= upper or level > hi or (level == hi and hi != upper):
                return best, len(decided)
            self.set_level(level)
            if not self.level_cuts(level):  # the LP is infeasible at the next level: T = best
                self._fix(None, level)
                return best, len(decided)
            if not climbed:  # first raise the start cheaply: the first region is the widest
                best, climbed = self._climb(best, hi, record), True
                continue
            keys = self.region(small)
            small = keys is not None
            if keys is None and not climbed:
                best, climbed = self._climb(best, hi, record), True
                continue
            if keys is None:  # too many keys: bisect the levels with one whole-QC MILP
                mid = ((best + hi) / 2).limit_denominator(self.max_den)
                mid = mid if best < mid < hi else simplest_between(best, hi)
                self.set_level(mid)
                self._fix(None, mid)
                if self.model.solve() == "Optimal":
                    self.model.write_back()
                    best = record({v.name: v.varValue for v in self.model.variables}, mid)
                else:
                    hi = mid
                continue
            raised = False
            for key in self._by_distance(keys, decided):
                if self.on_step is not None:
                    self.on_step(best, hi, len(decided))
                self._fix(key, level)
                self.model.set_objective({self.best: 1.0}, maximize=True)  # best at the key
                while self.model.solve(relax=True) == "Optimal" and self._solve_fixed(level):
                    raised = True
                    self.model.write_back()
                    best = record({v.name: v.varValue for v in self.model.variables}, level)
                    level = farey_successor(best, self.max_den) if best < 1 else best
                    if best >= upper or level > hi:
                        break
                    self.set_level(level)
                    self._fix(key, level)
                # infeasible at ``level``, so at every higher level too (or the search ends)
                decided.add(tuple(sorted(key.items())))
                self.model.set_objective({})
                if raised:  # the level rose: list the (fewer) keys the LP allows there
                    break
            self._fix(None, level)
            if raised:
                continue
            return best, len(decided)

    def _climb(self, best: Fraction, hi: Fraction,
               record: Callable[[dict[str, float], Fraction], Fraction]) -> Fraction:
        """Raise ``best`` cheaply: bisect the LP relaxation's level (key free) for its best
        point, and solve the fixed-key MILP (best level at the key) at the integer keys
        around that point's key (rounded down or up per coordinate; nearest when R > 5)."""
        low, top, point = best, hi, None
        for _ in range(24):
            mid = ((low + top) / 2).limit_denominator(self.max_den)
            if not low < mid < top:
                break
            self.set_level(mid)
            self._fix(None, mid)
            if self.model.solve(relax=True) == "Optimal":
                low, point = mid, [self.model.values()[c] for c in self.key]
            else:
                top = mid
        if point is None:
            return best
        r = len(self.key)
        roundings = itertools.product((math.floor, math.ceil), repeat=r - 1) if r <= 5 else \
            [(round,) * (r - 1)]
        keys = {head + (self.n - sum(head),) for head in (
            tuple(int(f(v + 0.0)) for f, v in zip(fs, point[:-1])) for fs in roundings)}
        for key in sorted(keys):
            level = farey_successor(best, self.max_den) if best < 1 else best
            if key[-1] < 0 or level > hi:
                continue
            self.set_level(level)
            self._fix(dict(zip(self.key, key)), level)
            self.model.set_objective({self.best: 1.0}, maximize=True)
            if self._solve_fixed(level):
                self.model.write_back()
                best = record({v.name: v.varValue for v in self.model.variables}, level)
            self.model.set_objective({})
        self._fix(None, best)
        return best

    def _by_distance(self, keys: list[dict[int, int]], decided: set) -> list[dict[int, int]]:
        """The undecided keys, nearest the middle of the listed ones first: the LP value is
        concave in the key, so the keys that may reach the highest level lie inside the
        region (an order only; each key is still decided by its LP and MILP)."""
        todo = [key for key in keys if tuple(sorted(key.items())) not in decided]
        if not todo:
            return []
        cols = list(todo[0])
        pts = [[key[c] for c in cols] for key in todo]
        mid = [sum(col) / len(pts) for col in zip(*pts)]
        dist = [sum((v - m) ** 2 for v, m in zip(pt, mid)) for pt in pts]
        return [todo[k] for k in sorted(range(len(todo)), key=dist.__getitem__)]


def _implied_integer(expr: Any) -> bool:
    """Whether a PuLP expression is a whole number at every integer point: integer
    variables with whole coefficients and a whole constant."""
    if not isinstance(expr, pulp.LpAffineExpression):
        return False
    return float(expr.constant).is_integer() and all(
        var.cat == pulp.LpInteger and float(coef).is_integer() for var, coef in expr.items())


def _multiple(den: Any, q: Any) -> int | None:
    """``c`` when the PuLP expression ``den`` is ``c * q`` for a whole ``c >= 2``, else None."""
    if den is q or not isinstance(den, pulp.LpAffineExpression) or den.constant:
        return None
    terms = {q.name: 1.0} if isinstance(q, pulp.LpVariable) else \
        {v.name: float(c) for v, c in q.items()} if isinstance(q, pulp.LpAffineExpression) \
        and not q.constant else None
    mine = {v.name: float(c) for v, c in den.items()}
    if not terms or set(terms) != set(mine):
        return None
    ratios = {mine[k] / terms[k] for k in terms}
    if len(ratios) != 1:
        return None
    c = ratios.pop()
    return int(c) if c >= 2 and c.is_integer() else None


def exchange_above(pats: np.ndarray, split: np.ndarray, cell: tuple[int, int],
                   level: Fraction) -> np.ndarray | None:
    """A joint split at the same key that keeps every (grader, label) cell at ``level`` or
    above and puts ``cell = (i, t)`` strictly above it, found among the single exchanges
    (one item of pattern ``p1`` moves from label ``s`` to ``t``, one of pattern ``p2`` from
    ``t`` to ``s``: the key's counts stay), or ``None`` when no single exchange does.

    ``split`` should have every cell at ``level`` (as the witness of ``T`` has): only the
    two labels an exchange touches are checked. A heuristic for the binding check (a cell some point puts above ``T`` does not bind):
    the caller re-checks the split it returns exactly; ``None`` proves nothing.
    ``pats`` (patterns x graders, ``-1`` skipped) and ``split`` (patterns x labels) are
    those of :func:`evalcert.logic.splits.joint_patterns`; a cell with no decided item makes
    no demand.

    Examples
    --------
    >>> pats = np.array([[0, 1], [1, 1], [0, 0]])  # 3 patterns of 2 graders' labels
    >>> split = np.array([[0, 1], [0, 1], [1, 0]])  # key (1, 2); grader 0 has 1/2 on label 1
    >>> exchange_above(pats, split, (0, 1), Fraction(1, 2)) is None  # every move drops one
    True
    >>> pats = np.array([[0, 1], [0, 0], [1, 1]])
    >>> split = np.array([[0, 0], [1, 1], [1, 1]])  # key (2, 2): every cell at 1/2
    >>> exchange_above(pats, split, (1, 1), Fraction(1, 2)).tolist()  # grader 1 to 2/2 on 1
    [[0, 0], [2, 0], [0, 2]]
    """
    a, b = level.numerator, level.denominator
    i, t = cell
    split = np.asarray(split, dtype=np.int64)
    r = split.shape[1]
    decided = pats >= 0
    corr = np.stack([(split[:, u][:, None] * (pats == u)).sum(axis=0) for u in range(r)], 1)
    den = np.stack([(split[:, u][:, None] * decided).sum(axis=0) for u in range(r)], 1)
    if den[i, t] > 0 and b * corr[i, t] - a * den[i, t] >= 1:
        return None  # already above: nothing to find
    slack = b * corr - a * den  # (graders, labels); >= 0 where den > 0
    givers = np.flatnonzero(split[:, t] > 0)  # p2: one item leaves label t
    hit_t = (pats == t).astype(np.int64)
    dec = decided.astype(np.int64)
    for s in range(r):
        if s == t:
            continue
        hit_s = (pats == s).astype(np.int64)
        every = np.flatnonzero(split[:, s] > 0)  # p1: one item moves from s to t
        for start in range(0, len(every), 64):  # blocks of p1: memory 64 x patterns x N
            takers = every[start:start + 64]
            # per (p1, p2, grader): new slack and denominator on labels t and s
            dd_t = dec[takers][:, None, :] - dec[givers][None, :, :]
            new_t = slack[:, t] + b * (hit_t[takers][:, None, :] - hit_t[givers][None, :, :]) \
                - a * dd_t
            den_t = den[:, t] + dd_t
            new_s = slack[:, s] - b * (hit_s[takers][:, None, :] - hit_s[givers][None, :, :]) \
                + a * dd_t
            den_s = den[:, s] - dd_t
            ok = ((new_t >= 0) | (den_t == 0)).all(axis=2) & \
                ((new_s >= 0) | (den_s == 0)).all(axis=2)
            ok &= (new_t[:, :, i] >= 1) & (den_t[:, :, i] >= 1)
            ok &= takers[:, None] != givers[None, :]
            hits = np.argwhere(ok)
            if len(hits):
                p1, p2 = takers[hits[0][0]], givers[hits[0][1]]
                out = split.copy()
                out[p1, s] -= 1
                out[p1, t] += 1
                out[p2, t] -= 1
                out[p2, s] += 1
                return out
    return None
