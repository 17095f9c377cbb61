"""Possible evaluations of one grader under the M=1 axioms (paper 003, Sec. II, App. A).

An evaluation of grader ``i`` at answer key ``q`` is the R x R table
``E[t][d] = R_{l_d, i; l_t}`` (items of true label ``l_t`` that ``i`` labelled ``l_d``).
It lies in the space of Eq. (1); the plane equations (4) fix its row sums to ``q``, the
observed counts (App. A, Eq. 12) fix its column sums to ``R_{., i}``. The per-label M=1
axiom (Eq. 9) is the identity, for every label ``l``,

    E[l][l] - Q_l + sum_{d != l} (R_d - E[d][d]) - sum_{d != l} sum_{t not in {l, d}} E[t][d] = 0,

which follows from the row and column sums by cancellation (App. A). For R = 2 it reads
``R_{a,a} - Q_a + R_b - R_{b,b} = 0`` (Fig. 4).

Counts reproduced (binary, Q = 10, decided a = 4, b = 6): 286 tables a priori
(``C(Q+3, 3)``), 210 after the inequalities ``E[l][l] <= R_l`` and 35 after the axioms
(per ``Q_a`` = 0..10: 1, 2, 3, 4, 5, 5, 5, 4, 3, 2, 1). The paper also prints 285 and 235
in Sec. II; they do not follow from its own definitions (its Appendix formula
``(Q+1)(Q+2)(Q+3)/6`` gives 286).
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from math import comb
from typing import Any, Iterator, Sequence

from evalcert.errors import InputError
from evalcert.logic.qcomplex import iter_qcomplex, qcomplex_size
from evalcert.results import ResultMixin, format_table

__all__ = ["m1_axiom_terms", "iter_evaluations", "count_evaluations", "trace_range_feasible",
           "EvaluationCounts", "evaluation_counts", "correct_multiplicity",
           "correctness_squares", "MAX_ENUMERATION"]

#: most tables (or answer keys) enumerated one by one in this module
MAX_ENUMERATION = 2_000_000

Table = tuple[tuple[int, ...], ...]


def m1_axiom_terms(table: Sequence[Sequence[Any]], key: Sequence[Any],
                   decided: Sequence[Any]) -> list[Any]:
    """Left-hand sides of the R M=1 axioms (Eq. 9) for one grader; each is 0 when consistent.

    Works on ints and on PuLP expressions alike (the ILP adds them as constraints).

    Examples
    --------
    >>> m1_axiom_terms([[4, 2], [0, 4]], key=(6, 4), decided=(4, 6))  # one zero per label
    [0, 0]
    """
    r = len(decided)
    out = []
    for l in range(r):
        expr = table[l][l] - key[l]
        for d in range(r):
            if d != l:
                expr = expr + decided[d] - table[d][d]
                for t in range(r):
                    if t not in (l, d):
                        expr = expr - table[t][d]
        out.append(expr)
    return out


def _check_margins(key: Sequence[int], decided: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    key_t, dec_t = tuple(int(v) for v in key), tuple(int(v) for v in decided)
    if len(key_t) != len(dec_t) or min(key_t + dec_t) < 0 or sum(key_t) != sum(dec_t):
        raise InputError(f"answer key {key_t} and decided counts {dec_t} must have the same "
                         "length, be >= 0 and sum to the same Q")
    return key_t, dec_t


def _bounded_rows(total: int, caps: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    if len(caps) == 1:
        if total <= caps[0]:
            yield (total,)
        return
    for v in range(min(total, caps[0]), -1, -1):
        if total - v <= sum(caps[1:]):
            for rest in _bounded_rows(total - v, caps[1:]):
                yield (v,) + rest


def iter_evaluations(key: Sequence[int], decided: Sequence[int]) -> Iterator[Table]:
    """Yield every possible evaluation table at answer key ``key`` (row sums) for a grader
    with label counts ``decided`` (column sums).

    Examples
    --------
    >>> tables = list(iter_evaluations(key=(6, 4), decided=(4, 6)))
    >>> len(tables), tables[0]  # rows: true label, columns: decided label
    (5, ((4, 2), (0, 4)))
    """
    key_t, dec_t = _check_margins(key, decided)

    def rec(t: int, cols: tuple[int, ...]) -> Iterator[Table]:
        if t == len(key_t) - 1:
            yield (cols,)
            return
        for row in _bounded_rows(key_t[t], cols):
            for rest in rec(t + 1, tuple(c - v for c, v in zip(cols, row))):
                yield (row,) + rest

    yield from rec(0, dec_t)


def count_evaluations(key: Sequence[int], decided: Sequence[int]) -> int:
    """Number of possible evaluation tables at ``key`` (row-by-row DP on remaining columns).

    Examples
    --------
    >>> count_evaluations(key=(6, 4), decided=(4, 6))  # binary test, Q = 10
    5
    """
    key_t, dec_t = _check_margins(key, decided)

    @lru_cache(maxsize=None)
    def rec(t: int, cols: tuple[int, ...]) -> int:
        if t == len(key_t) - 1:
            return 1
        return sum(rec(t + 1, tuple(c - v for c, v in zip(cols, row)))
                   for row in _bounded_rows(key_t[t], cols))

    return rec(0, dec_t)


def trace_range_feasible(key: Sequence[int], decided: Sequence[int], correct: int) -> bool:
    """Whether some possible evaluation at ``key`` has exactly ``correct`` correct answers.

    Choose the diagonal ``d`` (``sum d = correct``, ``0 <= d_l <= min(Q_l, R_l)``); the rest
    fills a zero-diagonal table with row sums ``Q - d`` and column sums ``R - d``, which
    exists iff ``(Q_l - d_l) + (R_l - d_l) <= Q - correct`` for every ``l`` (Hall's
    condition on the complete bipartite graph minus its diagonal). Used by App. D grades.

    Examples
    --------
    Key ``(2, 1)`` (two items of label 0, one of label 1), a grader deciding ``(1, 2)``:
    at most ``min(2, 1) + min(1, 2) = 2`` answers can be correct, and exactly one cannot
    (the single ``0`` decision is either right, and so is one ``1``, or wrong, and so are both).

    >>> [trace_range_feasible((2, 1), (1, 2), c) for c in (0, 1, 2, 3)]
    [True, False, True, False]
    """
    key_t, dec_t = _check_margins(key, decided)
    n = sum(key_t)
    rest = n - correct
    if rest < 0:
        return False
    lows = [max(0, -(-(q + c - rest) // 2)) for q, c in zip(key_t, dec_t)]
    highs = [min(q, c) for q, c in zip(key_t, dec_t)]
    return all(a <= b for a, b in zip(lows, highs)) and sum(lows) <= correct <= sum(highs)


@dataclasses.dataclass(frozen=True)
class EvaluationCounts(ResultMixin):
    """How many evaluations of one grader survive each stage of Sec. II.

    Attributes
    ----------
    n_items : int
    decided : tuple of int
        The grader's label counts.
    a_priori : int
        R x R tables of total Q: ``C(Q + R^2 - 1, R^2 - 1)``.
    inequalities : int
        ... with ``E[l][l] <= R_l`` (correct <= decided, Eq. 7).
    axioms : int
        ... with row sums a QC point and column sums ``decided`` (Eqs. 4, 9, 12).
    axioms_by_key : tuple of (key, count)

    Examples
    --------
    >>> counts = evaluation_counts((4, 6))  # Sec. II: binary, Q = 10
    >>> counts.a_priori, counts.inequalities, counts.axioms
    (286, 210, 35)
    """

    n_items: int
    decided: tuple[int, ...]
    a_priori: int
    inequalities: int
    axioms: int
    axioms_by_key: tuple[tuple[tuple[int, ...], int], ...]

    def summary(self) -> str:
        rows = [["a priori", self.a_priori], ["after inequalities", self.inequalities],
                ["after M=1 axioms", self.axioms]]
        return (f"possible evaluations, Q={self.n_items}, decided={self.decided}\n"
                + format_table(rows, ["stage", "count"]))


def _row_count_capped(total: int, r: int, cap: int) -> int:
    """Rows of length r summing to ``total`` with the diagonal entry ``<= cap``."""
    return sum(comb(total - c + r - 2, r - 2) for c in range(min(total, cap) + 1))


def evaluation_counts(decided: Sequence[int]) -> EvaluationCounts:
    """Count one grader's possible evaluations at every stage of Sec. II, over the whole QC.

    Examples
    --------
    >>> c = evaluation_counts((4, 6))
    >>> (c.a_priori, c.inequalities, c.axioms)
    (286, 210, 35)
    """
    dec_t = tuple(int(v) for v in decided)
    n, r = sum(dec_t), len(dec_t)
    size = qcomplex_size(n, r)
    if size > MAX_ENUMERATION // 10:
        raise InputError(f"evaluation_counts walks all {size:,} answer keys of Q={n}, R={r} "
                         f"(limit {MAX_ENUMERATION // 10:,}); use a smaller test")
    ineq = 0
    by_key = []
    for key in iter_qcomplex(n, r):
        prod = 1
        for l in range(r):
            prod *= _row_count_capped(key[l], r, dec_t[l])
        ineq += prod
        by_key.append((key, count_evaluations(key, dec_t)))
    return EvaluationCounts(n, dec_t, comb(n + r * r - 1, r * r - 1), ineq,
                            sum(c for _, c in by_key), tuple(by_key))


def correct_multiplicity(key: Sequence[int], decided: Sequence[int]) -> list[list[int]]:
    """Per label ``l``: how many possible evaluations at ``key`` have ``E[l][l] = a`` for
    ``a = 0..q_l`` (the marginal counts behind the correctness squares of Figs. 5-6).

    Examples
    --------
    >>> correct_multiplicity((6, 4), (4, 6))
    [[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]
    """
    total = count_evaluations(key, decided)
    if total > MAX_ENUMERATION:
        raise InputError(f"{total:,} possible evaluations at key {tuple(key)} (limit "
                         f"{MAX_ENUMERATION:,}); choose a smaller test for the squares")
    out = [[0] * (int(q) + 1) for q in key]
    for table in iter_evaluations(key, decided):
        for l in range(len(key)):
            out[l][table[l][l]] += 1
    return out


def correctness_squares(key: Sequence[int], decided_i: Sequence[int],
                        decided_j: Sequence[int]) -> list[list[list[int]]]:
    """Figs. 5-6: per label, the ``(q_l + 1) x (q_l + 1)`` multiplicity of M=1 product-space
    evaluations of two graders with ``a`` and ``b`` correct answers on that label.

    Examples
    --------
    >>> correctness_squares((2, 1), (1, 2), (2, 1))  # one square per label
    [[[0, 1, 1], [0, 1, 1], [0, 0, 0]], [[1, 1], [1, 1]]]
    """
    mi, mj = correct_multiplicity(key, decided_i), correct_multiplicity(key, decided_j)
    return [[[x * y for y in row_j] for x in row_i] for row_i, row_j in zip(mi, mj)]
