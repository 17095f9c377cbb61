"""The naive formulation of Eq. 7: one CVXPY box constraint per cell.

It is the reference the fast formulations are checked and timed against
(tests and ``benchmarks/bench_clipped_linear.py``): ``lo <= theta_i - b_j <= hi``
(``S.bounds``; ``|theta_i - b_j| <= 1`` by default) written for every one of
the K x J cells (``box="all"``) or every observed cell (``box="observed"``),
with the objective as ``sum_squares(D x - s)``. It builds 2 K J constraint
rows, so keep it to matrices that fit in memory.
"""

from __future__ import annotations

import time

import cvxpy as cp
import numpy as np

from evalcert.data import ScoreMatrix
from evalcert.errors import SolverError
from evalcert.solvers.backends import CVXPY_SOLVERS
from evalcert.solvers.backends.base import SolveSettings, solver_options

__all__ = ["naive_clipped_linear"]


def naive_clipped_linear(S: ScoreMatrix, lam: float = 1e-6, box: str = "all",
                         solver: str = "osqp",
                         settings: SolveSettings = SolveSettings()) -> dict:
    """Solve Eq. 7 in the naive per-cell form; return ``theta, b, objective, seconds``.

    Raises :class:`~evalcert.errors.SolverError` if the solver does not report
    an optimal solution. No certificate is computed here: the result is for
    comparison only.

    Examples
    --------
    >>> S = ScoreMatrix.from_array(np.subtract.outer([0.4, -0.2], [0.1, -0.1]))
    >>> out = naive_clipped_linear(S, lam=0.0, solver="clarabel")
    >>> sorted(out), bool(abs(out["objective"]) < 1e-6)
    (['b', 'objective', 'seconds', 'theta'], True)
    >>> np.round(out["theta"] - out["b"][0], 4).tolist()  # theta_i - b_0 = s_i0
    [0.3, -0.3]
    """
    K, J = S.shape
    lo, hi = S.bounds
    rows, cols, s = S.cells()
    theta, b = cp.Variable(K), cp.Variable(J)
    pred_obs = theta[rows] - b[cols]
    obj = cp.sum_squares(pred_obs - s) + lam * (cp.sum_squares(theta) + cp.sum_squares(b))
    cons = [cp.sum(b) == 0]
    if box == "all":
        full = cp.reshape(theta, (K, 1), order="F") @ np.ones((1, J)) \
            - np.ones((K, 1)) @ cp.reshape(b, (1, J), order="F")
        cons += [full <= hi, full >= lo]
    elif box == "observed":
        cons += [pred_obs <= hi, pred_obs >= lo]
    start = time.perf_counter()
    problem = cp.Problem(cp.Minimize(obj), cons)
    problem.solve(solver=CVXPY_SOLVERS[solver][0], **solver_options(solver, settings))
    seconds = time.perf_counter() - start
    if problem.status != cp.OPTIMAL:
        raise SolverError(f"naive formulation: status {problem.status}", solver=solver,
                          status=str(problem.status))
    return {"theta": np.asarray(theta.value), "b": np.asarray(b.value),
            "objective": float(problem.value), "seconds": seconds}
