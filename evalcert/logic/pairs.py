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
``T_2 <= T_1``. ``T_2`` is a ratio ``k / n`` with ``n <= Q``, found by bisection over
those ratios with one whole-Q-complex feasibility ILP per step.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any, Sequence

import numpy as np
import pulp

from evalcert.errors import InputError
from evalcert.logic.alarms import AlarmResult, alarm_threshold, attaining_keys
from evalcert.logic.ilp import IlpResult, M1Model, solve_model
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
    """The M=1 model plus pair variables ``P^{ij}[t][a][b]`` for every pair of graders."""

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
    """Best achievable minimum label accuracy over all graders at ``key`` under M=2."""
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
    """Is "every grader better than ``threshold`` on every label" consistent under M=2?"""
    model = M2Model(_check_decisions(decisions), key=key, lower=lower, upper=upper)
    model.prob += pulp.lpSum([])
    x = as_threshold(threshold)
    for i in range(len(decisions.graders)):
        for l in range(len(decisions.labels)):
            model.add_label_spec(i, l, x)
    return solve_model(model, solver)


def _ratios_up_to(n_items: int, top: Fraction) -> list[Fraction]:
    """Sorted distinct ratios ``k / n`` (``0 <= k <= n <= Q``) not above ``top``."""
    n = np.repeat(np.arange(1, n_items + 1), np.arange(2, n_items + 2))
    k = np.concatenate([np.arange(v + 1) for v in range(1, n_items + 1)])
    keep = k * top.denominator <= n * top.numerator
    vals, first = np.unique(k[keep] / n[keep], return_index=True)
    return [Fraction(int(a), int(b)) for a, b in zip(k[keep][first], n[keep][first])]


def m2_alarm_threshold(decisions: Decisions, *, lower: Sequence[int] | None = None,
                       upper: Sequence[int] | None = None,
                       solver: str = "highs") -> tuple[Fraction, Fraction | None]:
    """Exact M=2 alarm threshold ``T_2 <= T_1`` and the ratio just below it (or None if 0).

    Bisection over ratios ``k / n <= T_1``: "all better than f" is feasible iff ``f < T_2``.
    """
    dec = _check_decisions(decisions)
    t1 = alarm_threshold(dec.label_counts(), lower=lower, upper=upper)
    cands = _ratios_up_to(len(dec.items), t1)
    lo, hi = 0, len(cands) - 1  # cands[-1] = T_1 is infeasible under M=1, hence under M=2
    while lo < hi:
        mid = (lo + hi) // 2
        if m2_consistent(dec, cands[mid], lower=lower, upper=upper, solver=solver).feasible:
            lo = mid + 1
        else:
            hi = mid
    return cands[lo], (cands[lo - 1] if lo > 0 else None)


def alarm_m2(decisions: Decisions, threshold: Any, *, lower: Sequence[int] | None = None,
             upper: Sequence[int] | None = None, solver: str = "highs",
             max_keys: int = 1000) -> AlarmResult:
    """No-knowledge alarm under the M=2 axioms (ILP). Attaining keys are searched among the
    keys whose M=1 value reaches ``T_2``; the binding (grader, label) pairs are read from
    the solver's evaluation at each attaining key."""
    dec = _check_decisions(decisions)
    x = as_threshold(threshold)
    counts = dec.label_counts()
    r = len(dec.labels)
    lo, hi = qcomplex_bounds(counts.n_items, r, lower, upper)
    t2, below = m2_alarm_threshold(dec, lower=lo, upper=hi, solver=solver)
    n_keys = qcomplex_size(counts.n_items, r, lo, hi)
    keys: list[tuple[int, ...]] = []
    binding: dict[tuple[str, str], None] = {}
    if below is None:
        n_att, cand = attaining_keys(counts, Fraction(0), lower=lo, upper=hi, limit=max_keys)
        keys = list(cand)
    else:
        _, cand = attaining_keys(counts, t2, lower=lo, upper=hi, limit=None)
        n_att = 0
        for key in cand:
            res = m2_consistent(dec, below, key=key, solver=solver)
            if not res.feasible:
                continue
            n_att += 1
            if len(keys) < max_keys:
                keys.append(key)
                for g, c in res.correct.items():
                    for l, lab in enumerate(dec.labels):
                        if key[l] > 0 and Fraction(c[l], key[l]) == t2:
                            binding[(g, lab)] = None
    return AlarmResult(threshold=x, fires=x >= t2, T=t2, attaining_keys=tuple(keys),
                       n_attaining=n_att, binding=tuple(binding), m=2, n_keys=n_keys,
                       labels=dec.labels, graders=dec.graders, method=f"ILP ({solver})")
