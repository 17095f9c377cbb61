"""Exact alarm thresholds by a level search over fractions, and exact re-checks of ILP points.

For the M=2 and full-joint alarms, ``T = max over consistent evaluations of
min_{i,l} correct_{i,l} / den_{i,l}`` where every denominator is a whole number of items,
at most ``Q``. So ``T`` is a fraction ``k / n`` with ``n <= Q``, and "every grader at least
``f`` on every label" (``s * correct >= p * den`` for ``f = p / s``) is feasible iff
``f <= T``. :func:`max_ratio` finds ``T`` by a Stern-Brocot search over the fractions with
denominator ``<= Q``. ``lo`` is always attained (by an integer point whose value evalcert
recomputed, :func:`check_integer_solution`) and ``hi`` infeasible. After a feasible answer
the next test is the Farey successor of ``lo`` (the next fraction with denominator
``<= Q``): if it is infeasible, ``T = lo`` with a single infeasibility proof (the costly
kind of solve); otherwise ``lo`` rises to the new point's exact value. After an
infeasible answer the next test is the fraction nearest the middle of ``(lo, hi)``. It
stops when no fraction with denominator ``<= Q`` is left strictly inside ``(lo, hi)``.
No ``O(Q^2)`` list of ratios is built.

Feasible answers are re-checked exactly (every constraint in integer arithmetic,
:func:`check_integer_solution`); infeasible answers are the solver's (HiGHS/CBC with a zero
gap), cross-checked against brute force in the tests.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable

import pulp

from evalcert.errors import CertificateError

__all__ = ["simplest_between", "farey_successor", "max_ratio", "ceil_hull", "linear_value",
           "check_integer_solution"]


def simplest_between(lo: Fraction, hi: Fraction) -> Fraction:
    """The fraction with the smallest denominator strictly inside ``(lo, hi)``, ``lo < hi``.

    Examples
    --------
    >>> simplest_between(Fraction(1, 3), Fraction(1, 2))
    Fraction(2, 5)
    """
    n = math.floor(lo)
    if n + 1 < hi:
        return Fraction(n + 1)
    a, b = lo - n, hi - n  # 0 <= a < b <= 1
    if a == 0:
        return n + Fraction(1, math.floor(1 / b) + 1)
    return n + 1 / simplest_between(1 / b, 1 / a)


def farey_successor(x: Fraction, max_den: int) -> Fraction:
    """The smallest fraction above ``x`` with denominator ``<= max_den`` (``x`` has one too).

    Examples
    --------
    >>> farey_successor(Fraction(2, 3), 5)
    Fraction(3, 4)
    """
    a, b = x.numerator, x.denominator
    if b == 1:
        return Fraction(a * max_den + 1, max_den)
    d = (-pow(a, -1, b)) % b  # b c - a d = 1
    d += (max_den - d) // b * b
    return Fraction((1 + a * d) // b, d)


def max_ratio(feasible: Callable[[Fraction], Fraction | None], upper: Fraction,
              max_den: int, *, infeasible_above: Fraction | None = None,
              attained: Fraction = Fraction(0)) -> tuple[Fraction, int]:
    """Largest ``f`` in ``[0, upper]`` with ``feasible(f)``, a fraction with denominator
    ``<= max_den``.

    ``feasible(f)`` returns ``None`` when "everyone at least f" is infeasible, else the exact
    value (``>= f``) of the solution found. ``infeasible_above``: a level already known to
    be infeasible (e.g. by the LP relaxation), and ``attained``: a level known to be reached
    (e.g. by a rounded LP point, re-checked exactly), narrow the search. Returns
    ``(T, number of feasibility calls)``.

    Examples
    --------
    Levels up to 5/8 are feasible, and every solution found reaches 5/8:

    >>> def feasible(f):
    ...     return Fraction(5, 8) if f <= Fraction(5, 8) else None
    >>> max_ratio(feasible, Fraction(1), max_den=25)  # (T, calls)
    (Fraction(5, 8), 3)
    """
    calls = 0
    hi = upper if infeasible_above is None else min(upper, infeasible_above)
    if infeasible_above is None or infeasible_above > upper:
        calls += 1
        top = feasible(upper)
        if top is not None:
            return upper, calls
    lo, climb = attained, attained > 0
    while True:
        if climb:  # after a reached level, try the next fraction: one infeasible proof ends it
            cand = farey_successor(lo, max_den)
            if cand >= hi:
                return lo, calls
        else:
            cand = ((lo + hi) / 2).limit_denominator(max_den)
            if not lo < cand < hi:
                cand = simplest_between(lo, hi)
            if cand.denominator > max_den:
                return lo, calls
        calls += 1
        got = feasible(cand)
        if got is None:
            hi, climb = cand, False
        else:
            lo, climb = got, True


def ceil_hull(level: Fraction, lo: int, hi: int) -> list[tuple[tuple[int, int],
                                                                 tuple[int, int]]]:
    """Edges ``((d1, m1), (d2, m2))`` of the lower convex hull of the points
    ``(d, ceil(level * d))`` for ``lo <= d <= hi`` (none when ``lo == hi``).

    Every integer ``(D, M)`` with ``lo <= D <= hi`` and ``M >= level * D`` lies on or above
    each edge's line: ``(d2 - d1) * (M - m1) >= (m2 - m1) * (D - d1)``.

    Examples
    --------
    >>> ceil_hull(Fraction(2, 3), 1, 4)  # ceil(2d/3) = 1, 2, 2, 3
    [((1, 1), (3, 2)), ((3, 2), (4, 3))]
    """
    a, b = level.numerator, level.denominator
    hull: list[tuple[int, int]] = []
    for d in range(lo, hi + 1):
        p = (d, -(-a * d // b))
        while len(hull) >= 2 and ((hull[-1][0] - hull[-2][0]) * (p[1] - hull[-2][1])
                                  - (hull[-1][1] - hull[-2][1]) * (p[0] - hull[-2][0])) <= 0:
            hull.pop()
        hull.append(p)
    return list(zip(hull, hull[1:]))


def _exact(coef: Any) -> int | Fraction:
    """A PuLP coefficient exactly: an int when it is a whole number (fast), else a Fraction."""
    if isinstance(coef, int):
        return coef
    c = float(coef)
    return int(c) if c.is_integer() else Fraction(c)


def linear_value(expr: Any, values: dict[str, int]) -> int | Fraction:
    """Exact value of a PuLP expression (or constraint's left-hand side) at integer
    ``values``; integer arithmetic when every coefficient is whole.

    Examples
    --------
    >>> x = pulp.LpProblem("demo").add_variable("x")
    >>> linear_value(3 * x + 0.5, {"x": 2})
    Fraction(13, 2)
    """
    if isinstance(expr, pulp.LpVariable):
        return values[expr.name]
    return sum(_exact(c) * values[v.name] for v, c in expr.items()) + _exact(expr.constant)


def check_integer_solution(prob: pulp.LpProblem, what: str) -> dict[str, int]:
    """Round every variable of a solved ILP to an integer and re-check every constraint
    exactly; return ``{name: value}``. Raise :class:`CertificateError` if the solver's
    answer is not an integer point satisfying the model.

    Examples
    --------
    >>> from evalcert.logic.ilp import run_solver
    >>> prob = pulp.LpProblem("demo", pulp.LpMaximize)
    >>> x = prob.add_variable("x", 0, 3, cat="Integer")
    >>> prob += x
    >>> prob += 2 * x <= 5, "cap"
    >>> _ = run_solver(prob)
    >>> check_integer_solution(prob, "demo")
    {'x': 2}
    """
    values: dict[str, int] = {}
    for var in prob.variables():
        raw = var.varValue
        if raw is None and var.lowBound is not None and var.lowBound == var.upBound:
            # a fixed variable (PuLP's ``__dummy``, added for an empty objective or
            # constraint, is fixed at 0) has no column in CBC's solution: it is its bound
            raw = var.lowBound
        if raw is None or abs(raw - round(raw)) > 1e-6:
            raise CertificateError(f"{what}: variable {var.name} = {raw} is not an integer")
        val = int(round(raw))
        if (var.lowBound is not None and val < var.lowBound) or \
                (var.upBound is not None and val > var.upBound):
            raise CertificateError(f"{what}: variable {var.name} = {val} is outside its bounds")
        values[var.name] = val
    for con in prob.constraints():
        name = con.name
        lhs = linear_value(con, values)
        ok = lhs == 0 if con.sense == 0 else (lhs * con.sense >= 0)
        if not ok:
            raise CertificateError(f"{what}: the solver's integer point violates constraint "
                                   f"{name} by {lhs} (exact check)")
    return values
