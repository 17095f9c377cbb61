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

    ``cache`` (kept by the caller while ``A`` and the sparsity pattern of
    ``P`` stay the same) holds the set-up solver: a refit on new scores only
    updates ``q`` and the bounds; a refit with new weights (bootstrap: the
    clipped-linear ``P`` keeps zero weights as explicit entries, so its
    pattern is that of the design) also updates ``P``'s values, reusing
    OSQP's symbolic factorisation.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))  # min x^2/2 - 2x on [-1, 1]
    >>> sol = solve(qp)
    >>> sol.ok, bool(abs(sol.x[0] - 1.0) < 1e-6), bool(abs(sol.y[0] - 1.0) < 1e-6)
    (True, True, True)
    """
    opts = solver_options(NAME, settings)
    start = time.perf_counter()
    lower, upper = np.maximum(qp.l, -_BIG), np.minimum(qp.u, _BIG)
    entry = None if cache is None else cache.get(NAME)
    P_upper = None
    if entry is not None and entry[1] is not qp.P:
        P_upper = sp.triu(qp.P, format="csc")
        same = (P_upper.shape == entry[2].shape and np.array_equal(P_upper.indptr, entry[2].indptr)
                and np.array_equal(P_upper.indices, entry[2].indices))
        entry = entry if same else None
    if entry is None:
        solver = osqp.OSQP()
        P_upper = sp.triu(qp.P, format="csc") if P_upper is None else P_upper
        solver.setup(P=P_upper, q=qp.q, A=qp.A.tocsc(), l=lower, u=upper, **opts)
        if cache is not None:
            cache[NAME] = (solver, qp.P, P_upper)
    else:
        solver = entry[0]
        if P_upper is not None:
            solver.update(Px=P_upper.data)
            cache[NAME] = (solver, qp.P, P_upper)
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
