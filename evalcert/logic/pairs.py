"""M=2: pair counts, the pair axioms as an ILP, and the M=2 alarm (paper 003, App. C).

From question-aligned decisions of graders ``i`` and ``j`` we observe the pair counts
``R_{(a)_i,(b)_j}`` (Eq. 14). Unknown: the pair counts given the true label,
``P^{ij}[t][a][b]`` (R copies of an R x R table), with

* ``sum_t P^{ij}[t][a][b] = R_{(a)_i,(b)_j}`` (so each entry is at most the observed
  count, Eq. 15),
* ``sum_b P^{ij}[t][a][b] = E^i[t][a]`` and ``sum_a P^{ij}[t][a][b] = E^j[t][b]``: the pair
  tables project onto the M=1 evaluations of both graders (Sec. II-B).

The M=2 axioms of App. C (Eq. 16) are linear identities among these variables, proved
exactly like the M=1 ones by expanding every count into pair counts given true label, so
they hold on every point of this model; the M=2 possible set at a key is therefore
contained in the product of the M=1 sets, and the M=2 threshold is never looser:
``T_2 <= T_1``. ``T_2`` is a ratio ``k / n`` with ``n <= Q``, found without listing the
ratios (:mod:`evalcert.logic.search`): the answer keys the LP relaxation allows above the
best known point are listed and each decided by a fixed-key MILP that maximises the level
at that key (:class:`~evalcert.logic.search.KeySearch`).
"""

from __future__ import annotations

import itertools
import time
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np
import pulp

from evalcert.errors import InputError
from evalcert.logic.alarms import alarm_threshold, attaining_keys
from evalcert.logic.ilp import IlpResult, M1Model, solve_model
from evalcert.logic.exact import RatioProgram, _left, exact_alarm
from evalcert.logic.result import AlarmResult
from evalcert.logic.splits import joint_start, witness_of_split
from evalcert.logic.qcomplex import qcomplex_bounds, qcomplex_size
from evalcert.logic.summaries import Decisions, as_threshold

__all__ = ["M2Model", "m2_best_min_accuracy", "m2_consistent", "m2_alarm_threshold",
           "alarm_m2"]


def _check_decisions(decisions: Any) -> Decisions:
    if not isinstance(decisions, Decisions):
        raise InputError("M=2 needs question-aligned decisions (item, grader, label), not "
                         "label counts; read them with read_decisions()")
    if len(decisions.graders) < 2:
        raise InputError(f"M=2 needs at least two graders; got {list(decisions.graders)}")
    return decisions


class M2Model(M1Model):
    """The M=1 model plus pair variables ``P^{ij}[t][a][b]`` for every pair of graders.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> from evalcert.logic.ilp import solve_model
    >>> model = M2Model(table1_decisions(), key=(7, 15, 3))
    >>> for grader in range(2):
    ...     for label in range(3):
    ...         model.add_label_spec(grader, label, Fraction(1, 2))
    >>> solve_model(model).feasible
    True
    """

    def __init__(self, decisions: Decisions, key: Sequence[int] | None = None,
                 lower: Sequence[int] | None = None, upper: Sequence[int] | None = None,
                 sense: int = pulp.LpMaximize):
        super().__init__(decisions.label_counts(), key=key, lower=lower, upper=upper,
                         sense=sense)
        r = len(decisions.labels)
        rng = range(r)
        for i, j in itertools.combinations(range(len(decisions.graders)), 2):
            obs = decisions.pair_counts(i, j)
            p = [[[self.prob.add_variable(f"P_{i}_{j}_{t}_{a}_{b}", 0, int(obs[a, b]),
                                           cat="Integer")
                   for b in rng] for a in rng] for t in rng]
            for a, b in itertools.product(rng, rng):
                self.prob += pulp.lpSum(p[t][a][b] for t in rng) == int(obs[a, b]), \
                    f"pair_{i}_{j}_{a}_{b}"
            for t, a in itertools.product(rng, rng):
                self.prob += pulp.lpSum(p[t][a]) == self.e[i][t][a], f"proj_{i}_{j}_{t}_{a}_i"
                self.prob += pulp.lpSum(p[t][b][a] for b in rng) == self.e[j][t][a], \
                    f"proj_{i}_{j}_{t}_{a}_j"


def m2_best_min_accuracy(decisions: Decisions, key: Sequence[int], *,
                         solver: str = "highs") -> IlpResult:
    """Best achievable minimum label accuracy over all graders at ``key`` under M=2.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> m2_best_min_accuracy(table1_decisions(), (7, 15, 3)).value  # M=1 gives 2/3 here
    Fraction(3, 5)
    """
    model = M2Model(_check_decisions(decisions), key=key)
    t = model.prob.add_variable("t", 0, 1)
    model.prob += t
    for i in range(len(decisions.graders)):
        for l, ql in enumerate(model.q):
            if ql > 0:
                model.prob += model.e[i][l][l] >= ql * t, f"level_{i}_{l}"
    return solve_model(model, solver)


def m2_consistent(decisions: Decisions, threshold: Any, *, key: Sequence[int] | None = None,
                  lower: Sequence[int] | None = None, upper: Sequence[int] | None = None,
                  solver: str = "highs") -> IlpResult:
    """Is "every grader better than ``threshold`` on every label" consistent under M=2?

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> m2_consistent(table1_decisions(), "1/2").feasible, m2_consistent(table1_decisions(), "2/3").feasible
    (True, False)
    """
    model = M2Model(_check_decisions(decisions), key=key, lower=lower, upper=upper)
    model.prob += pulp.lpSum([])
    x = as_threshold(threshold)
    for i in range(len(decisions.graders)):
        for l in range(len(decisions.labels)):
            model.add_label_spec(i, l, x)
    return solve_model(model, solver)


def _build(dec: Decisions, lower: Any, upper: Any) -> Callable[[Sequence[int] | None], Any]:
    def build(key: Sequence[int] | None) -> Any:
        model = M2Model(dec, key=key, lower=None if key is not None else lower,
                        upper=None if key is not None else upper)
        r = len(dec.labels)
        diag = [[model.e[i][t][t] for t in range(r)] for i in range(len(dec.graders))]
        return RatioProgram(model.prob, list(model.q), diag, [list(model.q)] * len(dec.graders))
    return build


def m2_alarm_threshold(decisions: Decisions, *, lower: Sequence[int] | None = None,
                       upper: Sequence[int] | None = None, solver: str = "highs") -> Fraction:
    """Exact M=2 alarm threshold ``T_2 <= T_1`` (see :func:`alarm_m2`).

    Examples
    --------
    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> m2_alarm_threshold(table1_decisions())
    Fraction(5, 8)
    """
    return alarm_m2(decisions, "0", lower=lower, upper=upper, solver=solver, max_checks=0,
                    max_binding_keys=0).T


def alarm_m2(decisions: Decisions, threshold: Any, *, lower: Sequence[int] | None = None,
             upper: Sequence[int] | None = None, solver: str = "highs",
             max_keys: int = 1000, max_checks: int = 200, max_binding_keys: int = 3,
             verbose: bool = False, progress: bool = False,
             time_limit: float | None = None,
             start: tuple[Fraction, tuple[int, ...], np.ndarray] | None = None) -> AlarmResult:
    """No-knowledge alarm under the M=2 axioms (ILP).

    ``T_2`` comes from :class:`evalcert.logic.search.KeySearch` (one cached HiGHS model:
    LPs list the candidate keys, a fixed-key MILP decides each; every feasible point
    re-checked in integers; ``solver="cbc"``: the level search
    :func:`evalcert.logic.levels.max_ratio`). Attaining keys are searched among
    the keys whose M=1 value reaches ``T_2`` (exactly, when at most ``max_checks`` of
    them; otherwise a witness key is listed and ``n_attaining`` is None); a (grader, label)
    pair binds at a key when no M=2-consistent evaluation with everyone at least ``T_2``
    puts that grader above ``T_2`` on that label. ``progress`` and ``time_limit`` as in
    :func:`evalcert.logic.exact.exact_alarm` (a time limit returns ``T in [T, T_upper]``).
    ``start``: ``(value, key, joint split)`` of a full-joint point known in advance (a warm
    start used instead of the LP-rounded one; every full-joint point is M=2-consistent).

    Examples
    --------
    MT-Bench Table I (authors and gpt4): the pair counts lower ``T`` from M=1's 2/3.

    >>> from evalcert.datasets.mtbench import table1_decisions
    >>> r = alarm_m2(table1_decisions(), "1/2")
    >>> r.T, r.fires, r.m
    (Fraction(5, 8), False, 2)
    """
    t_start = time.perf_counter()  # the time limit counts the start point too
    dec = _check_decisions(decisions)
    counts = dec.label_counts()
    r = len(dec.labels)
    lo, hi = qcomplex_bounds(counts.n_items, r, lower, upper)
    top = alarm_threshold(counts, lower=lo, upper=hi)
    bounded = lower is not None or upper is not None
    n_g = len(dec.graders)

    def describe(key: tuple[int, ...], point: Any) -> dict[str, Any]:
        if isinstance(point, np.ndarray):  # the rounded joint start: a joint split
            return witness_of_split(dec, key, point)
        correct = {g: [point[f"E_{i}_{t}_{t}"] for t in range(r)]
                   for i, g in enumerate(dec.graders)}
        stats = {}
        for i, j in itertools.combinations(range(n_g), 2):
            stats[f"{dec.graders[i]}~{dec.graders[j]}"] = {
                lab: str(Fraction(point[f"P_{i}_{j}_{t}_{t}_{t}"], key[t])
                         - Fraction(point[f"E_{i}_{t}_{t}"] * point[f"E_{j}_{t}_{t}"],
                                    key[t] ** 2))
                for t, lab in enumerate(dec.labels) if key[t] > 0}
        return {"key": list(key), "correct": correct, "pair_statistics": stats}

    return exact_alarm(_build(dec, lo, hi), dec, threshold, upper=top, m=2,
                       method="M=2 ILP", solver=solver,
                       candidates=lambda t: attaining_keys(counts, t, lower=lo, upper=hi,
                                                           limit=max_keys),
                       n_keys=qcomplex_size(counts.n_items, r, lo, hi), max_checks=max_checks,
                       max_binding_keys=max_binding_keys, verbose=verbose, describe=describe,
                       start=start if start is not None else
                       None if bounded else joint_start(dec, top, solver),
                       progress=progress,
                       time_limit=_left(time_limit, t_start))
