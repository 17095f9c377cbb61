"""CVXPY backends (OSQP, Clarabel, SCS, ECOS) for the clipped-linear family.

:class:`ClippedLinearProgram` writes Eq. 7 once per observation design, with
``cp.Parameter``s for the data and for ``lam`` (DPP), so a refit on new
scores or new bootstrap weights updates numbers without recompiling:

* plain fits: ``quad_form(x, psd_wrap(D'D)) + q @ x + lam ||x||^2`` with the
  linear term ``q = -2 D's`` as the parameter (small, fast: see
  ``shared/SOLVER_NOTES.md``);
* weighted fits (bootstrap multiplicities ``w``):
  ``sum(w * square(D x)) - 2 (w s) @ D x + lam ||x||^2`` with ``w`` and ``w s``
  as parameters. Zero weights change the sparsity of the solver's data, so
  these solves never reuse OSQP's factorisation (``warm_start=False``), the
  failure mode recorded in the solver notes.

Constraints are the rows of the standard-form QP, split into equalities,
upper-bounded and lower-bounded rows, and their ``dual_value``s are mapped back
to one multiplier per row in evalcert's sign convention.
"""

from __future__ import annotations

import time
import warnings

import cvxpy as cp
import numpy as np

from evalcert.quiet import solver_log_enabled
from evalcert.solvers.backends.base import CVXPY_SOLVERS, RawSolution, SolveSettings, solver_options
from evalcert.solvers.certificates import QP
from evalcert.solvers.clipped_linear_qp import Design, build_qp, hessian

__all__ = ["ClippedLinearProgram", "solve_qp"]

_OK = {cp.OPTIMAL}


def _row_constraints(z: cp.Variable, qp: QP):
    eq = qp.l == qp.u
    up = ~eq & np.isfinite(qp.u)
    lo = ~eq & np.isfinite(qp.l)
    parts = []
    for rows, make in ((eq, lambda A, r: A @ z == qp.l[r]),
                       (up, lambda A, r: A @ z <= qp.u[r]),
                       (lo, lambda A, r: A @ z >= qp.l[r])):
        idx = np.flatnonzero(rows)
        parts.append((idx, make(qp.A[idx], idx) if len(idx) else None))
    return parts


def _duals(parts, m: int) -> np.ndarray:
    y = np.zeros(m)
    for (idx, con), sign in zip(parts, (1.0, 1.0, -1.0)):
        if con is not None:
            y[idx] += sign * np.asarray(con.dual_value, dtype=float).reshape(-1)
    return y


def _run(problem: cp.Problem, backend: str, settings: SolveSettings, warm: bool):
    name = CVXPY_SOLVERS[backend][0]
    opts = solver_options(backend, settings)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            problem.solve(solver=name, warm_start=warm, verbose=solver_log_enabled(), **opts)
            status = str(problem.status)
        except cp.error.SolverError as exc:
            status = f"solver_error: {exc}"
    elapsed = time.perf_counter() - start
    stats = problem.solver_stats
    iters = int(stats.num_iters) if stats is not None and stats.num_iters is not None else -1
    solve_time = float(stats.solve_time) if stats is not None and stats.solve_time else elapsed
    setup_time = max(0.0, elapsed - solve_time)
    return status, iters, setup_time, solve_time


class ClippedLinearProgram:
    """Eq. 7 as a DPP CVXPY problem for one design and box mode.

    Parameters
    ----------
    design : Design
    box : {"all", "observed", "none"}
    weighted : bool
        Build the weighted form (bootstrap multiplicities as a parameter).
    bounds : (float, float)
        The box ``lo <= theta_i - b_j <= hi``.

    Examples
    --------
    >>> design = Design.from_cells(2, 2, np.array([0, 0, 1]), np.array([0, 1, 1]))
    >>> program = ClippedLinearProgram(design, box="all", weighted=False)
    >>> sol = program.solve(np.array([0.5, 0.0, -0.5]), np.ones(3), 0.0, "clarabel",
    ...                     SolveSettings())
    >>> sol.ok, sol.x.shape  # theta (2), b (2) and the two box auxiliaries
    (True, (6,))
    """

    def __init__(self, design: Design, box: str, weighted: bool,
                 bounds: tuple[float, float] = (-1.0, 1.0)):
        self.design, self.box, self.weighted, self.bounds = design, box, weighted, bounds
        K, J = design.K, design.J
        template = build_qp(design, np.zeros(design.n_cells), np.ones(design.n_cells), 0.0, box,
                            bounds)
        self.z = cp.Variable(template.n)
        x = self.z[:K + J]
        self.lam = cp.Parameter(nonneg=True)
        if weighted:
            self.w = cp.Parameter(design.n_cells, nonneg=True)
            self.ws = cp.Parameter(design.n_cells)
            Dx = design.D @ x
            data_term = cp.sum(cp.multiply(self.w, cp.square(Dx))) - 2 * (self.ws @ Dx)
        else:
            self.q = cp.Parameter(K + J)
            gram = 0.5 * hessian(design, np.ones(design.n_cells), 0.0)  # D'D, from the cells
            data_term = cp.quad_form(x, cp.psd_wrap(gram)) + self.q @ x
        self.parts = _row_constraints(self.z, template)
        self.m = template.m
        cons = [c for _, c in self.parts if c is not None]
        self.problem = cp.Problem(cp.Minimize(data_term + self.lam * cp.sum_squares(x)), cons)

    def solve(self, scores: np.ndarray, weights: np.ndarray, lam: float, backend: str,
              settings: SolveSettings) -> RawSolution:
        """Set the parameters and solve with ``backend`` (a key of ``CVXPY_SOLVERS``).

        ``setup_time`` of the result is everything outside the solver: the
        compilation on the first call, a parameter update afterwards.
        """
        self.lam.value = float(lam)
        if self.weighted:
            self.w.value = np.asarray(weights, dtype=float)
            self.ws.value = np.asarray(weights * scores, dtype=float)
        else:
            self.q.value = -2.0 * np.r_[np.bincount(self.design.rows, scores, self.design.K),
                                        -np.bincount(self.design.cols, scores, self.design.J)]
        warm = settings.warm_start and not self.weighted
        status, iters, setup, solve_time = _run(self.problem, backend, settings, warm)
        x = self.z.value
        ok = status in {str(s) for s in _OK} and x is not None
        y = _duals(self.parts, self.m) if ok else None
        return RawSolution(x=None if x is None else np.asarray(x, dtype=float), y=y,
                           status=status, ok=ok, iterations=iters, setup_time=setup,
                           solve_time=solve_time)


def solve_qp(qp: QP, backend: str, settings: SolveSettings = SolveSettings()) -> RawSolution:
    """Solve a generic standard-form QP through CVXPY (no parameter reuse).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))  # min x^2/2 - 2x on [-1, 1]
    >>> sol = solve_qp(qp, "clarabel")
    >>> sol.ok, bool(abs(sol.x[0] - 1.0) < 1e-6), bool(abs(sol.y[0] - 1.0) < 1e-6)
    (True, True, True)
    """
    z = cp.Variable(qp.n)
    parts = _row_constraints(z, qp)
    obj = 0.5 * cp.quad_form(z, cp.psd_wrap(qp.P)) + qp.q @ z
    problem = cp.Problem(cp.Minimize(obj), [c for _, c in parts if c is not None])
    status, iters, setup, solve_time = _run(problem, backend, settings, False)
    x = z.value
    ok = status == cp.OPTIMAL and x is not None
    return RawSolution(x=None if x is None else np.asarray(x, dtype=float),
                       y=_duals(parts, qp.m) if ok else None, status=status, ok=ok,
                       iterations=iters, setup_time=setup, solve_time=solve_time)
