"""Fixed-key MILPs for panels that skip items (issue 25, item 4): one binary per value of
each free denominator.

With skipped items (``on_missing="keep"``) a fixed answer key does not fix the
denominators ``den[i][t]`` (items of true label ``t`` grader ``i`` decided,
``= Q_t - s_i[t]`` with ``s_i[t]`` the key's split of the items grader ``i`` skipped), so
the level rows ``b M >= a D`` (``M`` the least number right at level ``a / b``) have a
variable right-hand side. :class:`~evalcert.logic.search.KeySearch` adds, at each key, the
edges of the lower convex hull of ``(d, ceil(level * d))`` over the range ``[lo, hi]`` the
LP allows ``D`` there: that is the best any static row on ``(D, M)`` can do, and HiGHS's
branches on ``D`` do not tighten it (the rows were written for the whole range). On
simulated panels with correlated judges (Q = 1000, N = 5, R = 3, 10% of items with skips)
single fixed-key MILPs took 1-60 CPU-s at the root node, and the audit gave no answer.

:class:`SkipKeySearch` writes ``D`` instead in the value (unary) form: binaries
``z_d``, ``lo <= d <= hi``, with ``sum_d z_d = 1``, ``D = sum_d d z_d`` and
``M >= sum_d ceil(level * d) z_d``. Its LP relaxation is the same convex hull at the root,
but every branch ``z_d = 0`` removes a point of the hull and ``z_d = 1`` fixes the
denominator (then ``M`` is the integer ``ceil(level * d)``, as with complete data), so the
relaxation tightens as the solver branches. Measured on the fixed-key MILPs that were slow
(same keys, level, HiGHS 1.16, one process): 3.9 -> 0.7, 8.3 -> 0.3, > 23 -> 12.9 CPU-s
(``benchmarks/bench_alarms.py --issue25`` has the whole audit).

The rows are valid for every integer point at the key with ``D`` in ``[lo, hi]`` (an LP
range rounded outwards), so infeasibility answers stay exact; feasible points are re-checked
in integer arithmetic by the caller (:func:`~evalcert.logic.exact.exact_alarm`). The binary
columns live in a pool per denominator that is reused from key to key (coefficients
rewritten, unused columns fixed at 0, rows freed when the key changes), so the HiGHS model
does not grow with the number of keys decided.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from evalcert.logic.search import KeySearch

__all__ = ["SkipKeySearch"]


class SkipKeySearch(KeySearch):
    """:class:`~evalcert.logic.search.KeySearch` whose fixed-key MILPs state each free
    denominator in value form (module docstring). Same parameters and results; used by
    :func:`~evalcert.logic.joint.alarm_full` when graders skip items.

    Examples
    --------
    >>> from evalcert.logic.joint import JointModel
    >>> from evalcert.logic.summaries import Decisions
    >>> dec = Decisions(("q1", "q2", "q3", "q4"), ("g1", "g2"), ("a", "b"),
    ...                 ((0, 0), (1, -1), (0, 1), (1, 1)))
    >>> model = JointModel(dec)
    >>> search = SkipKeySearch(model.prob, model.q, model.correct, model.den, 4)
    >>> search.solve_at((2, 2), Fraction(1, 2))  # some split has everyone at least 1/2
    True
    >>> search.solve_at((1, 3), Fraction(1))  # nobody is always right with key (1, 3)
    False
    """

    _active = False  # value-form rows in force (they hold at one key only)

    def __init__(self, *args: Any, **kwargs: Any):
        #: per free denominator column: (binary columns, rows one / den / level)
        self._pool: dict[int, tuple[list[int], tuple[int, int, int]]] = {}
        super().__init__(*args, **kwargs)

    def _rows(self, mm: int, d_col: int) -> tuple[list[int], tuple[int, int, int]]:
        if d_col not in self._pool:
            m = self.model
            one = m.add_row(None, None, {})
            den = m.add_row(None, None, {d_col: 0.0})
            low = m.add_row(None, None, {mm: 0.0})
            self._pool[d_col] = ([], (one, den, low))
        return self._pool[d_col]

    def _release(self) -> None:
        """Free every value-form row and fix the binaries at 0 (they hold at one key)."""
        if not self._active:
            return
        for cols, rows in self._pool.values():
            for row in rows:
                self.model.set_row_bounds(row, None, None)
            for col in cols:
                self.model.set_bounds(col, 0, 0)
        self._active = False

    def _fix(self, point: dict[int, int] | None, level: Fraction) -> None:
        self._release()
        super()._fix(point, level)

    def _value_form(self, mm: int, d_col: int, level: Fraction, lo: int, hi: int) -> None:
        """Rows ``sum z = 1``, ``D - sum d z = 0``, ``M - sum ceil(level d) z >= 0`` on
        binaries ``z_d``, ``lo <= d <= hi`` (integer data; the inequality relaxed by 1/2)."""
        m = self.model
        cols, (one, den, low) = self._rows(mm, d_col)
        values = range(lo, hi + 1)
        while len(cols) < len(values):
            col = m.add_column(0, 0, True)
            for row in (one, den, low):
                m.set_coeff(row, col, 0.0)
            cols.append(col)
        a, b = level.numerator, level.denominator
        for k, col in enumerate(cols):
            if k < len(values):
                d = values[k]
                m.set_bounds(col, 0, 1)
                m.set_coeff(one, col, 1.0)
                m.set_coeff(den, col, -float(d))
                m.set_coeff(low, col, -float(-(-a * d // b)))
            else:
                m.set_bounds(col, 0, 0)
        m.set_coeff(den, d_col, 1.0)
        m.set_coeff(low, mm, 1.0)
        m.set_row_bounds(one, 1, 1)
        m.set_row_bounds(den, 0, 0)
        m.set_row_bounds(low, -0.5, None)
        self._active = True

    def _solve_fixed(self, level: Fraction) -> bool:
        """MILP at the fixed key and ``level``: every denominator the key does not fix is
        bounded by its LP range at the key (rounded outwards; an empty range or an
        infeasible LP decides the key) and written in value form. ``True`` iff feasible."""
        self._release()
        free = [(mm, d_col) for _, mm, d_col in self.levels if d_col not in self.bounds]
        objective = self.model.objective
        ranges = []
        try:
            for mm, d_col in free:
                ends = [self._extreme(d_col, maximize) for maximize in (False, True)]
                if ends[0] is None or ends[1] is None:
                    return False  # the LP at the key is infeasible: so is the MILP
                lo, hi = max(math.ceil(ends[0] - 1e-3), 0), math.floor(ends[1] + 1e-3)
                if lo > hi:  # no whole number of items in the LP's range
                    return False
                ranges.append((mm, d_col, lo, hi))
        finally:
            self.model.set_objective(*objective)
        for mm, d_col, lo, hi in ranges:
            self._set_hull(self._hull, mm, d_col, level, lo, hi)
            self._value_form(mm, d_col, level, lo, hi)
        if ranges:  # the new binaries carry no cost: restate the objective over all columns
            self.model.set_objective(*objective)
        return self.model.solve() == "Optimal"
