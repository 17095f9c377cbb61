"""Per-(grader, label) accuracy bounds at fixed answer keys, under M=1, M=2 or the full joint.

Semantics. Fix an answer key ``q`` (label counts ``q_t`` summing to ``Q``) and a level ``f``
(in an audit, the alarm threshold ``T`` of the same M). Let ``S_M(q)`` be the integer points
of the model of order M at ``q``:

* ``M=1`` (:class:`~evalcert.logic.ilp.M1Model`): per grader ``i`` an R x R table
  ``E^i[t][d]`` with row sums ``q`` and column sums the observed label counts ``R_{d,i}``;
* ``M=2`` (:class:`~evalcert.logic.pairs.M2Model`): the same tables, plus for every pair
  of graders a split of its observed pair counts by true label projecting onto both;
* ``full`` (:class:`~evalcert.logic.joint.JointModel`): a split ``x[p][t]`` of each joint
  decision pattern count by true label -- exactly the item-level answer keys with label
  counts ``q``.

``correct_{i,t}`` is ``E^i[t][t]`` (resp. ``sum_{p: p_i = t} x[p][t]``), and
``S_M(q, f)`` is the subset where every grader is at least ``f`` on every label,
``correct_{j,t} >= f q_t`` for all ``j`` and all ``t`` with ``q_t > 0``. For each grader
``i`` and label ``l`` with ``q_l > 0``:

    min_correct = min over S_M(q, f) of correct_{i,l},   max_correct = max over S_M(q, f),
    min_accuracy = min_correct / q_l,                    max_accuracy = max_correct / q_l

(exact integers and ``Fraction``s), and ``free_*`` the same over ``S_M(q)`` (no level).
Both ends of a range are attained by consistent evaluations; values in between need not
be. The full-joint set projects into the M=2 set, which projects into the M=1 set, so at
the same ``q`` and ``f`` the ranges nest: ``full`` within ``M=2`` within ``M=1``. At a key attaining the alarm threshold ``T`` of the
same M, ``S_M(q, T)`` is non-empty, and ``max_accuracy = T`` exactly for the (grader, label)
pairs that bind there. Under M=1 the level does not lower the maxima at an attaining key:
``max_correct = min(q_l, R_{l,i})`` (:func:`~evalcert.logic.alarms.best_correct`).

Each bound is one integer program (zero gap; HiGHS through one
:class:`~evalcert.logic.ilp.HighsModel` per key and range, re-solved with each objective,
or CBC through PuLP), skipped when a point found earlier already reaches the trivial bound (``min(q_l, R_{l,i})`` above;
``max(ceil(f q_l), q_l + R_{l,i} - Q, 0)`` below), so a proof by point replaces the solve.
Every point is re-checked in exact integer arithmetic
(:func:`~evalcert.logic.levels.check_integer_solution`); a status other than Optimal or
Infeasible raises :class:`~evalcert.errors.SolverError`, an empty ``S_M(q, f)``
:class:`~evalcert.errors.InfeasibleError`. The number of programs is checked before any
model is built (:func:`check_bounds_size`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np
import pulp

from evalcert.errors import InfeasibleError, InputError, SolverError
from evalcert.logic.ilp import HighsModel, M1Model, run_solver
from evalcert.logic.levels import check_integer_solution, linear_value
from evalcert.logic.summaries import Decisions, LabelCounts, as_label_counts, as_threshold
from evalcert.progress import progress_bar
from evalcert.results import ResultMixin, format_table

__all__ = ["LabelBounds", "label_bounds", "check_bounds_size", "MAX_ILPS"]

#: most integer programs one call may solve (2 per (key, grader, label) and range)
MAX_ILPS = 4000
#: most variables in one M=2 model (``N (N - 1) / 2 * R^3`` pair variables)
MAX_M2_VARIABLES = 200_000
#: how results name each order M
METHOD_NAMES = {1: "M=1", 2: "M=2", "full": "full joint"}


def check_bounds_size(n_keys: int, n_graders: int, n_labels: int, free: bool = True,
                      max_ilps: int = MAX_ILPS) -> int:
    """Upper bound on the integer programs :func:`label_bounds` solves; refuse too many.

    ``n_keys * n_graders * n_labels * 2`` (min and max) per range, twice with ``free``, plus
    one feasibility solve per key and range.

    Examples
    --------
    >>> check_bounds_size(10, 5, 3)  # 10 keys x 2 ranges x (5 x 3 x 2 + 1)
    620
    >>> check_bounds_size(100, 20, 3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: per-(grader, label) bounds need up to 24,200 integer programs ...
    """
    ranges = 2 if free else 1
    n = n_keys * ranges * (n_graders * n_labels * 2 + 1)
    if n > max_ilps:
        raise InputError(f"per-(grader, label) bounds need up to {n:,} integer programs "
                         f"({n_keys} keys x {n_graders} graders x {n_labels} labels x 2 x "
                         f"{ranges} ranges + {n_keys * ranges} feasibility); the limit is "
                         f"{max_ilps:,}: use fewer keys (--max-keys) or fewer graders (--graders)")
    return n


@dataclasses.dataclass(frozen=True)
class LabelBounds(ResultMixin):
    """Exact per-(key, grader, label) correct-count ranges (see the module docstring).

    Attributes
    ----------
    m : 1, 2 or "full"
    level : Fraction
        The level ``f`` every grader is held to on every label (the alarm's ``T``).
    graders, labels : tuple of str
    keys : tuple of tuple of int
    min_correct, max_correct : ndarray of int, shape (n_keys, n_graders, n_labels)
        Over ``S_M(q, f)``; ``-1`` where the key has no item of the label.
    free_min_correct, free_max_correct : ndarray of int or None
        Over ``S_M(q)`` (no level); None when not computed.
    n_solves : int
        Integer programs solved (the rest were proved by a point reaching a trivial bound).
    seconds : float

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> b = label_bounds(table1_decisions(), [(6, 16, 3)], "5/8", m="full")
    >>> row = b.rows()[1]  # authors on label b: binds at T = 5/8
    >>> row["label"], row["min_correct"], row["max_correct"], row["max_accuracy"]
    ('b', 10, 10, '5/8')
    """

    m: int | str
    level: Fraction
    graders: tuple[str, ...]
    labels: tuple[str, ...]
    keys: tuple[tuple[int, ...], ...]
    min_correct: np.ndarray
    max_correct: np.ndarray
    free_min_correct: np.ndarray | None
    free_max_correct: np.ndarray | None
    n_solves: int
    seconds: float

    @property
    def method(self) -> str:
        """``"M=1"``, ``"M=2"`` or ``"full joint"``."""
        return METHOD_NAMES[self.m]

    def rows(self) -> list[dict[str, Any]]:
        """One dict per (key, grader, label) with ``q_l > 0``: the CSV rows (accuracies as
        ``"p/q"``; ``free_*`` columns when the free range was computed)."""
        out = []
        for k, key in enumerate(self.keys):
            for i, g in enumerate(self.graders):
                for t, lab in enumerate(self.labels):
                    if key[t] == 0:
                        continue
                    row = {"grader": g, "label": lab, "key": "/".join(map(str, key)),
                           "items": int(key[t]), "method": self.method}
                    ranges = [("", self.min_correct, self.max_correct)]
                    if self.free_min_correct is not None:
                        ranges.append(("free_", self.free_min_correct, self.free_max_correct))
                    for pre, lo, hi in ranges:
                        a, b = int(lo[k, i, t]), int(hi[k, i, t])
                        row.update({f"{pre}min_correct": a, f"{pre}max_correct": b,
                                    f"{pre}min_accuracy": str(Fraction(a, key[t])),
                                    f"{pre}max_accuracy": str(Fraction(b, key[t]))})
                    out.append(row)
        return out

    def summary(self) -> str:
        free = self.free_min_correct is not None
        rows = [[r["key"], r["grader"], r["label"], r["items"],
                 f"[{r['min_accuracy']}, {r['max_accuracy']}]"]
                + ([f"[{r['free_min_accuracy']}, {r['free_max_accuracy']}]"] if free else [])
                for r in self.rows()]
        head = (f"per-(grader, label) accuracy bounds ({self.method}) at {len(self.keys)} "
                f"key(s), every grader >= {self.level} on every label; {self.n_solves} "
                f"integer programs in {self.seconds:.2f} s\n")
        return head + format_table(rows, ["key", "grader", "label", "items",
                                          f"accuracy at >= {self.level}"]
                                   + (["accuracy, any level"] if free else []))

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "level": str(self.level),
                "keys": [list(k) for k in self.keys], "n_solves": self.n_solves,
                "seconds": self.seconds, "rows": self.rows()}


def _builder(data: Any, m: int | str) -> tuple[Callable[[tuple[int, ...]], Any],
                                               LabelCounts]:
    """``build(key) -> (prob, correct[i][t])`` for the model of order ``m``, and the counts."""
    if m == 1:
        counts = as_label_counts(data)

        def build(key: tuple[int, ...]) -> Any:
            model = M1Model(counts, key=key)
            return model.prob, [model.diagonal(i) for i in range(len(counts.graders))]
        return build, counts
    if not isinstance(data, Decisions):
        raise InputError(f"bounds under {METHOD_NAMES[m]} need question-aligned decisions "
                         "(a judge log), not label counts")
    if not data.complete:
        raise InputError("per-(grader, label) accuracy bounds need every grader on every item "
                         "(with skipped items a grader's denominator varies with the key); "
                         "use --on-missing drop")
    counts = data.label_counts()
    n_g, r = len(data.graders), len(data.labels)
    if m == 2:
        from evalcert.logic.pairs import M2Model

        n_vars = n_g * (n_g - 1) // 2 * r ** 3
        if n_vars > MAX_M2_VARIABLES:
            raise InputError(f"the M=2 model would have {n_vars:,} pair variables (limit "
                             f"{MAX_M2_VARIABLES:,}); select fewer --graders or use --m full")

        def build(key: tuple[int, ...]) -> Any:
            model = M2Model(data, key=key)
            return model.prob, [model.diagonal(i) for i in range(n_g)]
        return build, counts
    from evalcert.logic.splits import JointModel

    def build(key: tuple[int, ...]) -> Any:
        model = JointModel(data, key=key)
        return model.prob, model.correct
    return build, counts


def _runner(prob: pulp.LpProblem, solver: str) -> Callable[[int, Any], str]:
    """``run(sense, objective) -> status`` leaving the point in the PuLP variables: HiGHS
    through one :class:`~evalcert.logic.ilp.HighsModel` re-solved with new objectives (no
    rebuild per solve), CBC through PuLP."""
    if solver != "highs":
        def run(sense: int, objective: Any) -> str:
            prob.setObjective(objective)
            prob.sense = sense
            return run_solver(prob, solver)[0]
        return run
    model = HighsModel(prob)

    def run_highs(sense: int, objective: Any) -> str:
        coefs: dict[int, float] = {}
        for var, c in pulp.lpSum([objective]).items():
            col = model.index[var.name]
            coefs[col] = coefs.get(col, 0.0) + float(c)
        model.set_objective(coefs, maximize=sense == pulp.LpMaximize)
        status = model.solve()
        if status == "Optimal":
            model.write_back()
        return status
    return run_highs


def _solve_range(prob: pulp.LpProblem, correct: list[list[Any]], key: tuple[int, ...],
                 floor: np.ndarray, cap: np.ndarray, seen: tuple[np.ndarray, np.ndarray],
                 solver: str, what: str, bar: Any) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Min and max of every ``correct[i][t]`` over the model's integer points (None if it
    has none). ``seen`` (lowest, highest values met at consistent points) is updated."""
    n_solves = 0
    run = _runner(prob, solver)

    def solve(sense: int, objective: Any, label: str) -> np.ndarray | None:
        nonlocal n_solves
        status = run(sense, objective)
        n_solves += 1
        bar.update(1)
        if status != "Optimal":
            return None
        values = check_integer_solution(prob, f"{what}: {label}")
        point = np.array([[int(linear_value(e, values)) for e in row] for row in correct],
                         dtype=np.int64)
        np.minimum(seen[0], point, out=seen[0])
        np.maximum(seen[1], point, out=seen[1])
        return point

    # feasibility, with an objective (CBC adds a None-valued dummy column to an empty one)
    if solve(pulp.LpMaximize, pulp.lpSum(e for row in correct for e in row),
             "feasibility") is None:
        return None
    lo, hi = np.full(cap.shape, -1, dtype=np.int64), np.full(cap.shape, -1, dtype=np.int64)
    for i, row in enumerate(correct):
        for t, expr in enumerate(row):
            if key[t] == 0:
                continue
            for sense, out, known, trivial in ((pulp.LpMaximize, hi, seen[1], cap),
                                               (pulp.LpMinimize, lo, seen[0], floor)):
                if known[i, t] == trivial[i, t]:  # a consistent point reaches a valid bound
                    out[i, t] = trivial[i, t]
                    continue
                point = solve(sense, expr, f"{'max' if out is hi else 'min'} correct of "
                                           f"grader {i} on label {t}")
                if point is None:
                    raise SolverError(f"{what}: {solver} called the model infeasible after "
                                      "a feasible point was found", solver=solver,
                                      status="Infeasible")
                out[i, t] = point[i, t]
    return lo, hi, n_solves


def label_bounds(data: LabelCounts | Decisions | Any, keys: Sequence[Sequence[int]],
                 level: Any, *, m: int | str = "full", free: bool = True,
                 solver: str = "highs", max_ilps: int = MAX_ILPS,
                 verbose: bool = False) -> LabelBounds:
    """Exact smallest and largest accuracy of every grader on every label at each key, over
    the evaluations of order ``m`` where every grader is at least ``level`` on every label
    (see the module docstring for the precise sets).

    Parameters
    ----------
    data : Decisions (any ``m``), or label counts (``m=1`` only)
    keys : answer keys (label counts summing to ``Q``)
    level : the level ``f`` (number, ``"p/q"`` or Fraction in [0, 1]); in an audit ``T``
    m : 1, 2 or ``"full"``
    free : also compute the ranges without the level (``free_*``)
    solver : ``"highs"`` or ``"cbc"``
    max_ilps : refuse (InputError) before building when more programs could be needed
    verbose : progress bar on stderr

    Raises
    ------
    InputError
        Bad keys, label counts for ``m`` 2 or full, skipped decisions, too many programs.
    InfeasibleError
        No evaluation at a key has every grader at least ``level`` on every label.

    Examples
    --------
    MT-Bench Table I at the key ``(6, 16, 3)``, which attains ``T_full = 5/8``: the authors
    are held to exactly 5/8 on label ``b`` (it binds there), and the joint decisions pin
    gpt4 on ``a`` to 2/3 where the label counts alone (M=1) allow up to 5/6:

    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> dec = table1_decisions()
    >>> full = label_bounds(dec, [(6, 16, 3)], "5/8", m="full")
    >>> m1 = label_bounds(dec, [(6, 16, 3)], "5/8", m=1)
    >>> [(r["grader"], r["label"], r["min_accuracy"], r["max_accuracy"]) for r in full.rows()]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('authors', 'a', '2/3', '5/6'), ('authors', 'b', '5/8', '5/8'),
     ('authors', 'tie', '2/3', '1'), ('gpt4', 'a', '2/3', '2/3'),
     ('gpt4', 'b', '15/16', '15/16'), ('gpt4', 'tie', '2/3', '2/3')]
    >>> m1.rows()[3]["min_accuracy"], m1.rows()[3]["max_accuracy"]  # gpt4 on a, M=1
    ('2/3', '5/6')
    """
    m = {"1": 1, "2": 2}.get(str(m), str(m))
    if m not in METHOD_NAMES:
        raise InputError(f"m={m!r}; use 1, 2 or full")
    f = as_threshold(level)
    build, counts = _builder(data, m)
    n, r, n_g = counts.n_items, len(counts.labels), len(counts.graders)
    try:
        keys_t = tuple(tuple(int(v) for v in key) for key in keys)
    except (TypeError, ValueError):
        raise InputError(f"answer keys {keys!r}: give a list of tuples of whole numbers, one "
                         f"count per label {list(counts.labels)}") from None
    for key in keys_t:
        if len(key) != r or min(key) < 0 or sum(key) != n:
            raise InputError(f"answer key {key} must have {r} counts >= 0 summing to Q={n}, "
                             f"one per label {list(counts.labels)}")
    if not keys_t:
        raise InputError("no answer keys given; pass at least one key")
    check_bounds_size(len(keys_t), n_g, r, free, max_ilps)
    t0 = time.perf_counter()
    said = counts.array                                           # (N, R): R_{t,i}
    shape = (len(keys_t), n_g, r)
    out = {name: np.full(shape, -1, dtype=np.int64) for name in ("lo", "hi", "flo", "fhi")}
    n_solves = 0
    bar = progress_bar(verbose, check_bounds_size(len(keys_t), n_g, r, free, max_ilps),
                       f"bounds ({METHOD_NAMES[m]})", unit="ILP")
    try:
        for k, key in enumerate(keys_t):
            q = np.asarray(key, dtype=np.int64)[None, :]
            cap = np.minimum(q, said)
            free_floor = np.maximum(q + said - n, 0)
            need = [math.ceil(f * v) for v in key]                # correct >= f q_t
            floor = np.maximum(free_floor, np.array([need]))
            seen = (np.full((n_g, r), n + 1, dtype=np.int64), np.full((n_g, r), -1,
                                                                      dtype=np.int64))
            prob, correct = build(key)
            for t, qt in enumerate(key):
                if qt > 0 and need[t] > 0:
                    for i in range(n_g):
                        prob += correct[i][t] >= need[t], f"level_{i}_{t}"
            what = f"{METHOD_NAMES[m]} bounds at key {key}"
            got = _solve_range(prob, correct, key, floor, cap, seen, solver,
                               f"{what}, level {f}", bar)
            if got is None:
                raise InfeasibleError(f"{what}: no evaluation has every grader at least {f} "
                                      "on every label (is the key one attaining T?)")
            out["lo"][k], out["hi"][k] = got[0], got[1]
            n_solves += got[2]
            if free and not any(need):  # no level: the free range is the same
                out["flo"][k], out["fhi"][k] = got[0], got[1]
            elif free:  # points at the level are consistent points: they seed the free range
                prob, correct = build(key)
                got = _solve_range(prob, correct, key, free_floor, cap, seen, solver, what, bar)
                if got is None:
                    raise SolverError(f"{what}: {solver} called the model without a level "
                                      "infeasible, but every key has evaluations",
                                      solver=solver, status="Infeasible")
                out["flo"][k], out["fhi"][k] = got[0], got[1]
                n_solves += got[2]
    finally:
        bar.close()
    return LabelBounds(m=m, level=f, graders=counts.graders, labels=counts.labels,
                       keys=keys_t, min_correct=out["lo"], max_correct=out["hi"],
                       free_min_correct=out["flo"] if free else None,
                       free_max_correct=out["fhi"] if free else None, n_solves=n_solves,
                       seconds=time.perf_counter() - t0)
