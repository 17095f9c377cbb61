"""Ordinal labels (issue 25, item 5): a decision is correct when it lies within
``tolerance`` steps of the true label in the declared label order (scores 1-10 with
``--tolerance 1``: a 7 is right on an item whose true score is 6, 7 or 8).

The alarm keeps its statement, with "correct" widened: no answer key lets every grader be
correct (within the tolerance) on more than ``x`` of the items of every true label. The
same three sets apply, with grader ``i``'s correct count on true label ``t`` the sum of its
evaluation over the band ``|d - t| <= tolerance``:

* M=1: the tables ``E^i[t][d]`` of :class:`evalcert.logic.ilp.M1Model` (the closed form of
  :mod:`evalcert.logic.alarms` holds only for ``tolerance = 0``);
* M=2: the same tables inside :class:`evalcert.logic.pairs.M2Model`;
* the full joint: the pattern splits of :class:`evalcert.logic.splits.JointModel` (skipped
  decisions allowed).

Each is solved exactly by :func:`evalcert.logic.exact.exact_alarm`; ``tolerance = 0``
gives the usual alarms (tests).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import pulp

from evalcert.errors import InputError
from evalcert.logic.exact import RatioProgram, exact_alarm
from evalcert.logic.qcomplex import qcomplex_bounds, qcomplex_size
from evalcert.logic.result import AlarmResult
from evalcert.logic.summaries import Decisions

__all__ = ["alarm_tolerance"]


def _band(r: int, tolerance: int) -> list[list[int]]:
    return [[d for d in range(r) if abs(d - t) <= tolerance] for t in range(r)]


def alarm_tolerance(decisions: Decisions, threshold: Any, tolerance: int, *,
                    m: str | int = "full", lower: Sequence[int] | None = None,
                    upper: Sequence[int] | None = None, solver: str = "highs",
                    verbose: bool = False, progress: bool = False,
                    time_limit: float | None = None) -> AlarmResult:
    """Exact alarm with a decision correct within ``tolerance`` steps of the true label
    (module docstring), under M=1, M=2 or the full joint.

    Examples
    --------
    >>> from evalcert.logic.simulate import simulate_decisions
    >>> dec = simulate_decisions(20, 3, 2, seed=0)   # 3 ordered labels
    >>> exact = alarm_tolerance(dec, "0.5", 0).T
    >>> within_one = alarm_tolerance(dec, "0.5", 1).T
    >>> exact <= within_one  # a wider "correct" can only raise T
    True
    """
    if not isinstance(decisions, Decisions):
        raise InputError("--tolerance needs the decisions (a judge log), not label counts")
    if isinstance(tolerance, bool) or not isinstance(tolerance, int) or tolerance < 0:
        raise InputError(f"tolerance {tolerance!r}: give a whole number of label steps >= 0")
    m = str(m)
    r, n, n_g = len(decisions.labels), len(decisions.items), len(decisions.graders)
    band = _band(r, tolerance)
    lo, hi = qcomplex_bounds(n, r, lower, upper)
    bounded = lower is not None or upper is not None
    if m in ("1", "2") and not decisions.complete:
        raise InputError(f"--on-missing keep leaves skipped decisions; the M={m} axioms need "
                         "every grader on every item: use --m full or --on-missing drop")
    if m == "full":
        from evalcert.logic.splits import JointModel, joint_patterns

        pats, _ = joint_patterns(decisions)

        def build(key: Sequence[int] | None) -> RatioProgram:
            model = JointModel(decisions, key=key, lower=lo if bounded and key is None else None,
                               upper=hi if bounded and key is None else None)
            correct = [[pulp.lpSum(model.x[p][t] for p in range(len(pats))
                                   if pats[p, i] >= 0 and abs(int(pats[p, i]) - t) <= tolerance)
                        for t in range(r)] for i in range(n_g)]
            return RatioProgram(model.prob, model.q, correct, model.den)
    elif m in ("1", "2"):
        from evalcert.logic.ilp import M1Model
        from evalcert.logic.pairs import M2Model

        counts = decisions.label_counts()

        def build(key: Sequence[int] | None) -> RatioProgram:
            kw = {"key": key, "lower": lo if bounded and key is None else None,
                  "upper": hi if bounded and key is None else None}
            model = M1Model(counts, **kw) if m == "1" else M2Model(decisions, **kw)
            q = list(model.q)
            correct = [[pulp.lpSum(model.e[i][t][d] for d in band[t]) for t in range(r)]
                       for i in range(n_g)]
            return RatioProgram(model.prob, q, correct, [q] * n_g)
    else:
        raise InputError(f"m={m!r}; use 1, 2 or full")
    which = {"1": "M=1", "2": "M=2", "full": "full-joint"}[m]
    return exact_alarm(build, decisions, threshold, upper=Fraction(1),
                       m=int(m) if m != "full" else "full",
                       method=f"{which} ILP, correct within {tolerance} label step(s)",
                       solver=solver, n_keys=qcomplex_size(n, r, lo, hi), verbose=verbose,
                       progress=progress, time_limit=time_limit)
