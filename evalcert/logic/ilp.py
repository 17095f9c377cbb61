"""The M=1 axioms as integer linear programs in PuLP (paper 003, Sec. II-III, App. A).

Variables, for an answer key that is either fixed or free:

* ``Q_l`` -- answer-key label counts, on the simplex ``sum_l Q_l = Q`` (Eq. 2);
* ``E^i[t][d]`` -- items of true label ``t`` that grader ``i`` labelled ``d`` (Eq. 1), with
  row sums ``Q_t`` (Eq. 4/13), column sums the observed ``R_{d,i}`` (Eq. 12) and the R
  per-label M=1 axioms (Eq. 9) written out as constraints (implied, kept as the paper
  states them);
* ``z_l`` in {0, 1} -- whether the key has items of label ``l`` (free key only), so that
  empty labels make no demand.

Specs, exact for a rational level ``x = p / s`` (strict ``>`` on integers):
``s * E^i[l][l] >= p * Q_l + z_l`` per label, ``s * trace(E^i) >= p * Q + 1`` for grades.
Objectives: the best achievable minimum label accuracy at a fixed key. HiGHS (highspy
through PuLP) is the default solver, CBC the alternative; every result names the solver
and its status, and exact values are recomputed from the integer solution.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from fractions import Fraction
from typing import Any, Mapping, Sequence

import numpy as np
import pulp

from evalcert.errors import BackendUnavailableError, InputError, SolverError
from evalcert.logic.evaluations import m1_axiom_terms
from evalcert.logic.qcomplex import qcomplex_bounds
from evalcert.logic.summaries import LabelCounts, as_label_counts, as_threshold
from evalcert.quiet import native_stdout, solver_log_enabled
from evalcert.results import ResultMixin, format_table

__all__ = ["SOLVERS", "IlpResult", "M1Model", "HighsModel", "run_solver", "solve_model",
           "best_min_accuracy_ilp", "consistent_ilp"]



def _cbc() -> Any:
    """CBC through PuLP: the binary PuLP 3 bundles (``PULP_CBC_CMD``), or ``COIN_CMD`` (a
    ``cbc`` on PATH, e.g. from ``pip install pulp[cbc]``) where PuLP no longer has it.

    PuLP 3.3 warns that ``PULP_CBC_CMD`` goes in PuLP 4.0; the fall-back to ``COIN_CMD`` is
    that change handled, so the warning is not passed on to the user.
    """
    bundled = getattr(pulp, "PULP_CBC_CMD", None)
    if bundled is None:
        return pulp.COIN_CMD(msg=solver_log_enabled(), gapRel=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return bundled(msg=solver_log_enabled(), gapRel=0.0)


SOLVERS = {
    "highs": lambda: pulp.HiGHS(msg=solver_log_enabled(), gapRel=0.0),  # --verbose: a log
    "cbc": _cbc,
}
#: wall-clock limit (seconds) of one HighsModel solve; reaching it raises SolverError
TIME_LIMIT = 600.0


@dataclasses.dataclass(frozen=True)
class IlpResult(ResultMixin):
    """Outcome of one ILP solve.

    Attributes
    ----------
    solver : str
        Backend that ran (``"highs"`` or ``"cbc"``).
    status : str
        PuLP status string (``"Optimal"``, ``"Infeasible"``, ...).
    labels : tuple of str
    feasible : bool
    value : Fraction or None
        Exact objective recomputed from the integer solution (min label accuracy).
    key : tuple of int or None
        The answer key of the solution.
    correct : dict
        ``{grader: (E[l][l] for each label)}`` of the solution.
    seconds : float
        Wall time of the solve call.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> r = best_min_accuracy_ilp(paper_summaries(), (6, 15, 4))
    >>> r.status, r.feasible, r.value, r.key
    ('Optimal', True, Fraction(2, 3), (6, 15, 4))
    """

    solver: str
    status: str
    labels: tuple[str, ...]
    feasible: bool
    value: Fraction | None
    key: tuple[int, ...] | None
    correct: dict[str, tuple[int, ...]]
    seconds: float

    def summary(self) -> str:
        rows = [[g, *c] for g, c in self.correct.items()]
        return (f"ILP ({self.solver}): {self.status}, feasible={self.feasible}, "
                f"value={self.value}, key={self.key}, {self.seconds * 1e3:.1f} ms\n"
                + (format_table(rows, ["grader", *[f"correct[{l}]" for l in self.labels]])
                   if rows else ""))


class M1Model:
    """A PuLP model of the M=1 axioms for every grader; specs are added by the caller.

    Parameters
    ----------
    counts : LabelCounts
    key : sequence of int, optional
        Fix the answer key; ``None`` leaves ``Q_l`` (and ``z_l``) as variables.
    lower, upper : bounds on the free key.

    Examples
    --------
    Is "both graders better than 1/2 on every label" possible at a fixed answer key?

    >>> from fractions import Fraction
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> def possible(key):
    ...     model = M1Model(paper_summaries(), key=key)
    ...     for grader in range(2):
    ...         for label in range(3):
    ...             model.add_label_spec(grader, label, Fraction(1, 2))
    ...     return solve_model(model).feasible
    >>> possible((6, 15, 4)), possible((8, 9, 8))  # v(q) = 2/3 and 3/8
    (True, False)
    """

    def __init__(self, counts: LabelCounts, key: Sequence[int] | None = None,
                 lower: Sequence[int] | None = None, upper: Sequence[int] | None = None,
                 sense: int = pulp.LpMaximize):
        self.counts = counts
        n, r = counts.n_items, len(counts.labels)
        self.prob = pulp.LpProblem("m1_axioms", sense)
        if key is not None:
            key = tuple(int(v) for v in key)
            if len(key) != r or min(key) < 0 or sum(key) != n:
                raise InputError(f"answer key {key} must have {r} entries >= 0 summing to Q={n}")
            self.q: list[Any] = list(key)
            self.z: list[Any] = [int(v > 0) for v in key]
        else:
            lo, hi = qcomplex_bounds(n, r, lower, upper)
            self.q = [self.prob.add_variable(f"Q_{l}", lo[l], hi[l], cat="Integer") for l in range(r)]
            self.z = [self.prob.add_variable(f"z_{l}", cat="Binary") for l in range(r)]
            self.prob += pulp.lpSum(self.q) == n, "simplex"
            for l in range(r):
                self.prob += self.q[l] <= n * self.z[l], f"empty_{l}_hi"
                self.prob += self.q[l] >= self.z[l], f"empty_{l}_lo"
        self.e = [[[self.prob.add_variable(f"E_{i}_{t}_{d}", 0, None, cat="Integer")
                    for d in range(r)] for t in range(r)] for i in range(len(counts.graders))]
        for i, dec in enumerate(counts.counts):
            e = self.e[i]
            for t in range(r):
                self.prob += pulp.lpSum(e[t]) == self.q[t], f"row_{i}_{t}"
            for d in range(r):
                self.prob += pulp.lpSum(e[t][d] for t in range(r)) == dec[d], f"col_{i}_{d}"
            for l, expr in enumerate(m1_axiom_terms(e, self.q, dec)):
                self.prob += expr == 0, f"axiom_{i}_{l}"

    def diagonal(self, i: int) -> list[Any]:
        """Correct-count variables ``E^i[l][l]`` of grader ``i``."""
        return [self.e[i][l][l] for l in range(len(self.counts.labels))]

    def add_label_spec(self, i: int, label: int, x: Fraction) -> None:
        """Strict per-label spec ``E^i[l][l] > x * Q_l`` where ``Q_l > 0``."""
        s, p = x.denominator, x.numerator
        if isinstance(self.q[label], int) and self.q[label] == 0:
            return
        self.prob += s * self.e[i][label][label] >= p * self.q[label] + self.z[label], \
            f"spec_{i}_{label}"

    def add_grade_spec(self, i: int, x: Fraction) -> None:
        """Strict overall-accuracy spec ``sum_l E^i[l][l] > x * Q`` (App. D grade)."""
        self.prob += (x.denominator * pulp.lpSum(self.diagonal(i))
                      >= x.numerator * self.counts.n_items + 1), f"grade_{i}"

    def extract(self, solver: str, status: str, seconds: float) -> IlpResult:
        """Read the integer solution back (exact ints) into an :class:`IlpResult`."""
        labels = self.counts.labels
        if status != "Optimal":
            return IlpResult(solver, status, labels, False, None, None, {}, seconds)
        key = tuple(int(round(pulp.value(v))) if not isinstance(v, int) else v for v in self.q)
        correct = {g: tuple(int(round(v.value())) for v in self.diagonal(i))
                   for i, g in enumerate(self.counts.graders)}
        ratios = [Fraction(c[l], key[l]) for c in correct.values()
                  for l in range(len(key)) if key[l] > 0]
        return IlpResult(solver, status, labels, True, min(ratios), key, correct, seconds)


def run_solver(prob: pulp.LpProblem, solver: str = "highs") -> tuple[str, float]:
    """Solve a PuLP problem with ``"highs"`` (default) or ``"cbc"``; return (status, seconds).

    Optimal and Infeasible are answers; any other status raises :class:`SolverError`.

    Examples
    --------
    >>> prob = pulp.LpProblem("demo", pulp.LpMaximize)
    >>> x = prob.add_variable("x", 0, 3, cat="Integer")
    >>> prob += x
    >>> prob += 2 * x <= 5
    >>> status, seconds = run_solver(prob)
    >>> status, x.value()
    ('Optimal', 2.0)
    """
    if solver not in SOLVERS:
        raise BackendUnavailableError(f"unknown ILP solver {solver!r}; use one of "
                                      f"{sorted(SOLVERS)}")
    backend = SOLVERS[solver]()
    if not backend.available():
        fix = ("install highspy or use solver='cbc'" if solver == "highs" else
               "install it with pip install 'pulp[cbc]' or use solver='highs'")
        raise BackendUnavailableError(f"ILP solver {solver!r} ({type(backend).__name__}) is "
                                      f"not installed; {fix}")
    start = time.perf_counter()
    with native_stdout():  # highspy's banner: stdout holds evalcert's result only
        prob.solve(backend)
    seconds = time.perf_counter() - start
    status = pulp.LpStatus[prob.status]
    if status not in ("Optimal", "Infeasible"):
        raise SolverError(f"{solver} returned status {status!r} on ILP {prob.name}",
                          solver=solver, status=status)
    return status, seconds


def solve_model(model: M1Model, solver: str = "highs") -> IlpResult:
    """Solve with ``"highs"`` (default) or ``"cbc"``; Infeasible is a result, not an error.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> model = M1Model(paper_summaries(), key=(8, 9, 8))
    >>> model.add_label_spec(0, 0, Fraction(1, 2))  # authors better than 1/2 on label a
    >>> result = solve_model(model)
    >>> result.status, result.feasible, result.key
    ('Optimal', True, (8, 9, 8))
    >>> for label in range(3):
    ...     model.add_label_spec(1, label, Fraction(1, 2))  # and gpt4 on every label
    >>> solve_model(model).feasible  # the closed form at (8, 9, 8) is 3/8
    False
    """
    status, seconds = run_solver(model.prob, solver)
    return model.extract(solver, status, seconds)


def best_min_accuracy_ilp(summaries: Any, key: Sequence[int], *,
                          graders: Sequence[str] | None = None,
                          solver: str = "highs") -> IlpResult:
    """Best achievable minimum label accuracy of the chosen graders at answer key ``key``:
    maximise ``t`` subject to ``E^i[l][l] >= t * Q_l`` for every non-empty label (Fig. 7).

    Examples
    --------
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> best_min_accuracy_ilp(paper_summaries(), (6, 15, 4)).value  # = the closed form v(q)
    Fraction(2, 3)
    """
    counts = as_label_counts(summaries)
    model = M1Model(counts, key=key)
    chosen = _grader_indices(counts, graders)
    t = model.prob.add_variable("t", 0, 1)
    model.prob += t
    for i in chosen:
        for l, ql in enumerate(model.q):
            if ql > 0:
                model.prob += model.e[i][l][l] >= ql * t, f"level_{i}_{l}"
    res = solve_model(model, solver)
    if res.value is not None and len(chosen) < len(counts.graders):
        keep = {counts.graders[i] for i in chosen}
        value = min(Fraction(c[l], res.key[l]) for g, c in res.correct.items() if g in keep
                    for l in range(len(res.key)) if res.key[l] > 0)
        res = dataclasses.replace(res, value=value)
    return res


def _grader_indices(counts: LabelCounts, graders: Sequence[str] | None) -> list[int]:
    if graders is None:
        return list(range(len(counts.graders)))
    unknown = [g for g in graders if g not in counts.graders]
    if unknown:
        raise InputError(f"unknown graders {unknown}; known: {list(counts.graders)}")
    return [counts.graders.index(g) for g in graders]


def consistent_ilp(summaries: Any, *, threshold: Any = None,
                   label_thresholds: Mapping[str, Any] | None = None, grade: Any = None,
                   key: Sequence[int] | None = None, lower: Sequence[int] | None = None,
                   upper: Sequence[int] | None = None, solver: str = "highs") -> IlpResult:
    """Is "every grader better than the spec" consistent with some answer key (or ``key``)?

    Parameters
    ----------
    threshold : level x for every label (Eq. 11); the alarm fires iff infeasible.
    label_thresholds : ``{label: x_l}`` per-label levels (Sec. III, last paragraph).
    grade : level for overall accuracy ``trace / Q`` (App. D).
    key : fix the answer key; default: any key within ``lower``/``upper``.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> consistent_ilp(paper_summaries(), threshold="1/2").feasible  # some key lets both pass
    True
    >>> consistent_ilp(paper_summaries(), threshold="7/10").status  # T = 2/3 < 0.7
    'Infeasible'
    """
    counts = as_label_counts(summaries)
    model = M1Model(counts, key=key, lower=lower, upper=upper)
    model.prob += pulp.lpSum([])
    levels: dict[int, Fraction] = {}
    if threshold is not None:
        levels = {l: as_threshold(threshold) for l in range(len(counts.labels))}
    for lab, x in (label_thresholds or {}).items():
        if lab not in counts.labels:
            raise InputError(f"label_thresholds names unknown label {lab!r}; labels are "
                             f"{list(counts.labels)}")
        levels[counts.labels.index(lab)] = as_threshold(x)
    for i in range(len(counts.graders)):
        for l, x in levels.items():
            model.add_label_spec(i, l, x)
        if grade is not None:
            model.add_grade_spec(i, as_threshold(grade))
    return solve_model(model, solver)


class HighsModel:
    """A PuLP problem copied once into highspy, then re-solved with changed column bounds,
    extra rows and changed coefficients (PuLP rebuilds the model on every solve, ~8 ms plus
    the build; here an LP re-solve costs ~1 ms). Columns ``0 .. len(prob.variables()) - 1``
    are the PuLP variables in that order; :meth:`add_column` and :meth:`add_row` extend it.

    :meth:`solve` returns ``"Optimal"`` or ``"Infeasible"``; a time limit (``time_limit``
    seconds per solve) or any other status raises :class:`SolverError` naming it, so an
    unproven answer is never taken for one.

    Examples
    --------
    >>> prob = pulp.LpProblem("demo", pulp.LpMaximize)
    >>> x = prob.add_variable("x", 0, 3, cat="Integer")
    >>> prob += 2 * x <= 5, "cap"
    >>> model = HighsModel(prob)
    >>> model.solve(), abs(model.values()[0])  # abs: HiGHS may return -0.0
    ('Optimal', 0.0)
    >>> model.set_objective({0: 1.0}, maximize=True)
    >>> model.solve(), model.values()[0], model.solve(relax=True), model.values()[0]
    ('Optimal', 2.0, 'Optimal', 2.5)
    >>> model.set_bounds(0, 3, 3)
    >>> model.solve(relax=True)
    'Infeasible'
    """

    def __init__(self, prob: pulp.LpProblem, time_limit: float = TIME_LIMIT):
        import highspy

        self._hs = highspy
        with native_stdout():  # highspy >= 1.16 prints its banner when it is built
            self.h = h = highspy.Highs()
            h.setOptionValue("output_flag", solver_log_enabled())
        h.setOptionValue("mip_rel_gap", 0.0)
        h.setOptionValue("time_limit", float(time_limit))
        self.time_limit = float(time_limit)
        #: ``time.perf_counter()`` past which no solve may run (a caller's overall time
        #: limit): each solve gets what is left of it as HiGHS's own limit, so one MILP
        #: cannot overrun it (``None``: only ``time_limit`` per solve)
        self.deadline: float | None = None
        self.variables = prob.variables()
        self.index = {v.name: k for k, v in enumerate(self.variables)}
        self.integer: list[int] = []
        for var in self.variables:
            self.add_column(var.lowBound, var.upBound, var.cat == "Integer")
        for con in prob.constraints():
            coefs = {self.index[v.name]: float(c) for v, c in con.items()}
            rhs = -float(con.constant)
            self.add_row(rhs if con.sense >= 0 else None, rhs if con.sense <= 0 else None,
                         coefs)
        self.n_lp = self.n_mip = 0
        self._relaxed = False
        self.objective: tuple[dict[int, float], bool] = ({}, False)

    def add_column(self, lower: float | None, upper: float | None, integer: bool) -> int:
        """Append a column (``None``: unbounded on that side); return its index."""
        inf = self._hs.kHighsInf
        self.h.addVar(-inf if lower is None else float(lower), inf if upper is None
                      else float(upper))
        col = self.h.getNumCol() - 1
        if integer:
            if not getattr(self, "_relaxed", False):
                self.h.changeColIntegrality(col, self._hs.HighsVarType.kInteger)
            self.integer.append(col)
        return col

    def add_row(self, lower: float | None, upper: float | None,
                coefs: Mapping[int, float]) -> int:
        """Append ``lower <= sum coefs[col] * x[col] <= upper``; return the row index."""
        inf = self._hs.kHighsInf
        cols = np.fromiter(coefs.keys(), dtype=np.int32, count=len(coefs))
        vals = np.fromiter(coefs.values(), dtype=np.float64, count=len(coefs))
        self.h.addRow(-inf if lower is None else float(lower),
                      inf if upper is None else float(upper), len(cols), cols, vals)
        return self.h.getNumRow() - 1

    def set_coeff(self, row: int, col: int, value: float) -> None:
        self.h.changeCoeff(row, col, float(value))

    def set_bounds(self, col: int, lower: float, upper: float) -> None:
        self.h.changeColBounds(col, float(lower), float(upper))

    def set_row_bounds(self, row: int, lower: float | None, upper: float | None) -> None:
        """Row bounds (``None``: unbounded on that side); a free row is inactive."""
        inf = self._hs.kHighsInf
        self.h.changeRowBounds(row, -inf if lower is None else float(lower),
                               inf if upper is None else float(upper))

    def set_objective(self, coefs: Mapping[int, float], maximize: bool = False) -> None:
        """Objective ``sum coefs[col] * x[col]`` (every other cost 0); kept in
        ``objective`` as the arguments, to restore it."""
        self.objective = (dict(coefs), maximize)
        n = self.h.getNumCol()
        cost = np.zeros(n)
        for col, val in coefs.items():
            cost[col] = val
        self.h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
        sense = self._hs.ObjSense
        self.h.changeObjectiveSense(sense.kMaximize if maximize else sense.kMinimize)

    def solve(self, relax: bool = False, primal: bool = False) -> str:
        """Solve (the LP relaxation if ``relax``); ``"Optimal"`` or ``"Infeasible"``.
        ``primal``: the LP by the primal simplex method (after a change of objective only,
        the last basis stays primal feasible: range queries on the full joint at N = 8 took
        ~2.5x fewer CPU-s than by HiGHS's default dual simplex; after changed bounds, the
        dual is faster)."""
        hs, h = self._hs, self.h
        h.setOptionValue("simplex_strategy", 4 if primal and relax else 1)
        if self.integer and relax != self._relaxed:  # keep the LP basis between LP solves
            kind = hs.HighsVarType.kContinuous if relax else hs.HighsVarType.kInteger
            cols = np.array(self.integer, dtype=np.int32)
            h.changeColsIntegrality(len(cols), cols, np.full(len(cols), kind))
            h.setOptionValue("presolve", "off" if relax else "choose")
            self._relaxed = relax
        if relax or not self.integer:
            self.n_lp += 1
        else:
            self.n_mip += 1
        limit = self.time_limit
        if self.deadline is not None:
            limit = min(limit, max(self.deadline - time.perf_counter(), 1e-3))
        h.setOptionValue("time_limit", h.getRunTime() + limit)  # HiGHS's clock adds up
        h.run()
        status = h.getModelStatus()
        if status == hs.HighsModelStatus.kUnboundedOrInfeasible:  # presolve's shortcut
            h.setOptionValue("presolve", "off")
            h.run()
            h.setOptionValue("presolve", "off" if self._relaxed else "choose")
            status = h.getModelStatus()
        if status == hs.HighsModelStatus.kSolveError:
            # highspy 1.16's MIP solver can end a MILP whose rows carry the 1e-6 margins of
            # strict inequalities with "claims optimality, but with ... primal
            # infeasibilities" (presolve's solution violates two rows by 1e-6): solve it once
            # more from scratch without presolve and with a tighter MIP feasibility
            # tolerance (each alone mends tests/data/logic/highs_solve_error.csv); the answer
            # is re-checked exactly by the caller either way
            h.clearSolver()
            h.setOptionValue("presolve", "off")
            h.setOptionValue("mip_feasibility_tolerance", 1e-7)
            h.run()
            status = h.getModelStatus()
            h.setOptionValue("presolve", "off" if self._relaxed else "choose")
            h.setOptionValue("mip_feasibility_tolerance", 1e-6)  # HiGHS's default
        if status == hs.HighsModelStatus.kOptimal:
            return "Optimal"
        if status == hs.HighsModelStatus.kInfeasible:
            return "Infeasible"
        what = "LP" if relax else "MILP"
        if status == hs.HighsModelStatus.kTimeLimit:
            raise SolverError(f"highs stopped at its time limit ({limit:g} s) before "
                              f"proving an answer to one {what}; no threshold is returned",
                              solver="highs", status="time_limit")
        raise SolverError(f"highs returned status {h.modelStatusToString(status)!r} on one "
                          f"{what}", solver="highs", status=h.modelStatusToString(status))

    def values(self) -> list[float]:
        """Column values of the last solve."""
        return list(self.h.getSolution().col_value)

    def write_back(self) -> None:
        """Copy the last solution into the PuLP variables (``varValue``), so that
        :func:`evalcert.logic.levels.check_integer_solution` re-checks it exactly."""
        vals = self.values()
        for k, var in enumerate(self.variables):
            var.varValue = vals[k]
