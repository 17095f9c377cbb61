"""Multiple-choice exams: the logically consistent grades of each test taker (App. D).

For an MC exam the same M=1 logic applies; the QC point only says how the answer key's
letters are distributed. Test taker ``i``'s grade at key ``q`` is (Eq. 19)
``g_i = sum_l (Q_l / Q) (R_{l,i;l} / Q_l) = trace(E^i) / Q`` over its possible evaluations
``E^i``. The achievable traces are not always an interval (Q = 2, key (1, 1), answers
(1, 1): 0 or 2 correct, never 1), so each value is decided exactly by
:func:`evalcert.logic.evaluations.trace_range_feasible`.

Over the whole unbounded Q-complex every grade 0..Q is consistent for every taker (each
column of ``E^i`` can put any share of its answers on the diagonal); bounds on the key's
letter counts (e.g. a roughly balanced key) are what make the grade sets informative.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any, Sequence

from evalcert.logic.evaluations import trace_range_feasible
from evalcert.errors import InputError
from evalcert.logic.qcomplex import iter_qcomplex, qcomplex_bounds, qcomplex_size
from evalcert.logic.summaries import as_label_counts
from evalcert.results import ResultMixin, format_table

__all__ = ["GradeSets", "grades_at_key", "grade_sets"]

#: most answer keys :func:`grade_sets` walks (each costs O(Q R) per taker)
MAX_KEYS_WALKED = 200_000


def grades_at_key(decided: Sequence[int], key: Sequence[int]) -> tuple[int, ...]:
    """Achievable numbers of correct answers of one taker at answer key ``key``.

    Examples
    --------
    >>> grades_at_key(decided=(4, 6), key=(5, 5))  # correct answers consistent with the key
    (1, 3, 5, 7, 9)
    """
    return tuple(c for c in range(sum(key) + 1) if trace_range_feasible(key, decided, c))


@dataclasses.dataclass(frozen=True)
class GradeSets(ResultMixin):
    """Consistent grades of each test taker over the (bounded) Q-complex.

    Attributes
    ----------
    n_items : int
    grades : dict
        ``{taker: tuple of Fraction}``, sorted consistent grades ``correct / Q``.
    lower, upper : tuple of int
        The bounds on the key used.

    Examples
    --------
    >>> g = grade_sets({"t1": {"a": 3, "b": 1}, "t2": {"a": 2, "b": 2}}, lower=(2, 2), upper=(2, 2))
    >>> print(g.summary())  # doctest: +NORMALIZE_WHITESPACE
    consistent grades, Q=4, key bounds (2, 2)..(2, 2)
    taker  min  max  count  interval
    -----  ---  ---  -----  --------
       t1  1/4  3/4      2     False
       t2    0    1      3     False
    """

    n_items: int
    grades: dict[str, tuple[Fraction, ...]]
    lower: tuple[int, ...]
    upper: tuple[int, ...]

    def summary(self) -> str:
        rows = [[t, str(g[0]), str(g[-1]), len(g), len(g) == g[-1] * self.n_items - g[0] *
                 self.n_items + 1] for t, g in self.grades.items()]
        return (f"consistent grades, Q={self.n_items}, key bounds {self.lower}..{self.upper}\n"
                + format_table(rows, ["taker", "min", "max", "count", "interval"]))


def grade_sets(summaries: Any, *, lower: Sequence[int] | None = None,
               upper: Sequence[int] | None = None) -> GradeSets:
    """Consistent grades of every taker, union over the keys within ``lower``/``upper``.

    Examples
    --------
    >>> g = grade_sets({"x": {"a": 1, "b": 1}}, lower=(1, 1), upper=(1, 1))
    >>> g.grades["x"]
    (Fraction(0, 1), Fraction(1, 1))
    """
    counts = as_label_counts(summaries)
    n, r = counts.n_items, len(counts.labels)
    lo, hi = qcomplex_bounds(n, r, lower, upper)
    size = qcomplex_size(n, r, lo, hi)
    if size > MAX_KEYS_WALKED:
        raise InputError(f"grade_sets walks {size:,} answer keys (Q={n}, R={r}; limit "
                         f"{MAX_KEYS_WALKED:,}); bound the key with lower/upper")
    found: dict[str, set[int]] = {g: set() for g in counts.graders}
    for key in iter_qcomplex(n, r, lo, hi):
        for g, dec in zip(counts.graders, counts.counts):
            found[g].update(grades_at_key(dec, key))
    grades = {g: tuple(Fraction(c, n) for c in sorted(v)) for g, v in found.items()}
    return GradeSets(n, grades, lo, hi)
