"""OSQP called directly on the sparse standard-form QP (no CVXPY).

OSQP's multipliers already follow evalcert's sign convention (``y > 0`` on an
active upper bound).
"""

from __future__ import annotations

import time

import numpy as np
import osqp
import scipy.sparse as sp

from evalcert.solvers.backends.base import RawSolution, SolveSettings, solver_options
from evalcert.solvers.certificates import QP

__all__ = ["solve"]

NAME = "osqp-direct"
_BIG = 1e30


def solve(qp: QP, settings: SolveSettings = SolveSettings(), x0: np.ndarray | None = None,
          y0: np.ndarray | None = None, cache: dict | None = None) -> RawSolution:
    """Solve ``qp`` with OSQP (polishing on); warm-start from ``x0``/``y0``.

    ``cache`` (kept by the caller while ``P`` and ``A`` stay the same) holds
    the set-up solver, so a refit only updates ``q`` and the bounds.
    """
    opts = solver_options(NAME, settings)
    start = time.perf_counter()
    lower, upper = np.maximum(qp.l, -_BIG), np.minimum(qp.u, _BIG)
    solver = None if cache is None else cache.get(NAME)
    if solver is None:
        solver = osqp.OSQP()
        solver.setup(P=sp.triu(qp.P, format="csc"), q=qp.q, A=qp.A.tocsc(), l=lower, u=upper,
                     **opts)
        if cache is not None:
            cache[NAME] = solver
    else:
        solver.update(q=qp.q, l=lower, u=upper)
    if x0 is not None and settings.warm_start:
        solver.warm_start(x=x0, y=np.zeros(qp.m) if y0 is None else y0)
    setup = time.perf_counter() - start
    res = solver.solve(raise_error=False)
    status = str(res.info.status)
    ok = status in ("solved",)
    x = None if res.x is None or np.any(np.isnan(res.x)) else np.asarray(res.x, dtype=float)
    y = None if res.y is None or np.any(np.isnan(res.y)) else np.asarray(res.y, dtype=float)
    return RawSolution(x=x, y=y, status=status, ok=ok and x is not None,
                       iterations=int(res.info.iter), setup_time=setup,
                       solve_time=time.perf_counter() - start - setup)
