"""evalcert's own QP solver: a primal-dual active-set method (no CVXPY, no OSQP).

For ``min 1/2 x'Px + q'x  s.t.  l <= Ax <= u`` it guesses which rows sit on a
bound, solves the equality-constrained QP of that guess exactly (one sparse
KKT factorisation), and updates the guess from the multipliers and the
violations (Hintermueller, Ito & Kunisch, SIAM J. Optim. 13, 2002: the
semismooth Newton method on ``y = max(0, y + c(Ax - u)) + min(0, y + c(Ax - l))``).
On the clipped-linear problem the Hessian on ``(theta, b)`` is an M-matrix
and few box constraints bind, so it stops in a handful of iterations with an
answer exact to rounding. The KKT systems are regularised (quasi-definite,
``delta = 1e-9`` relative) and refined iteratively, which copes with
variables that no active row pins (an unused auxiliary) and with redundant
active rows. It stops with :class:`~evalcert.errors.SolverError` if the
active set cycles or the budget runs out, never with a guess.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from evalcert.solvers.backends.base import RawSolution, SolveSettings, solver_options
from evalcert.solvers.certificates import QP

__all__ = ["solve"]

NAME = "native"


def _kkt_solve(qp: QP, active: np.ndarray, rhs_bounds: np.ndarray, x: np.ndarray,
               y_act: np.ndarray, cache: dict | None) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``[P A'; A 0][x; y] = [-q; b]`` on the active rows, regularised.

    ``cache`` maps an active set to its factorisation; it is valid only while
    ``P`` and ``A`` stay the same (refits change ``q`` and the bounds only).
    """
    key = np.packbits(active).tobytes()
    if cache is not None and key in cache:
        K0, lu = cache[key]
    else:
        A_act = qp.A[active]
        n, m = qp.n, A_act.shape[0]
        delta = 1e-9 * max(1.0, float(np.abs(qp.P.diagonal()).max()) if n else 1.0)
        K0 = sp.bmat([[qp.P, A_act.T], [A_act, None]], format="csc")
        reg = sp.diags(np.r_[np.full(n, delta), np.full(m, -delta)], format="csc")
        lu = spla.splu((K0 + reg).tocsc(), permc_spec="COLAMD")
        if cache is not None:
            if len(cache) >= 8:  # refits revisit few active sets; bound the memory
                for old in [k for k in cache if isinstance(k, bytes)]:
                    del cache[old]
            cache[key] = (K0, lu)
    rhs = np.r_[-qp.q, rhs_bounds]
    z = np.r_[x, y_act]
    norm = max(1.0, float(np.abs(rhs).max()))
    for _ in range(30):
        resid = rhs - K0 @ z
        if float(np.abs(resid).max()) <= 1e-13 * norm:
            break
        z = z + lu.solve(resid)
    return z[:qp.n], z[qp.n:]


def solve(qp: QP, settings: SolveSettings = SolveSettings(), x0: np.ndarray | None = None,
          y0: np.ndarray | None = None,
          complete: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
          cache: dict | None = None) -> RawSolution:
    """Solve ``qp`` by the primal-dual active-set method.

    Parameters
    ----------
    qp : QP
    settings : SolveSettings
        ``max_iter`` (via :func:`solver_options`) bounds the active-set updates.
    x0, y0 : ndarray, optional
        Starting point; a good one (the previous fit) makes a refit take one
        or two factorisations.
    complete : callable, optional
        ``complete(x, y) -> x`` applied after every KKT solve, to place
        variables the active rows leave free (auxiliaries of a max/min) at
        values that do not switch rows on spuriously.
    """
    opts = solver_options(NAME, settings)
    start = time.perf_counter()
    x = np.zeros(qp.n) if x0 is None else np.asarray(x0, dtype=float).copy()
    y = np.zeros(qp.m) if y0 is None else np.asarray(y0, dtype=float).copy()
    eq = qp.l == qp.u
    fin_u, fin_l = np.isfinite(qp.u), np.isfinite(qp.l)
    # The update constant c trades multipliers (scale of P) against violations
    # (scale of the bounds); c of the order of the largest diagonal entry of P
    # avoids the cycling seen with c = 1 on the observed-cells box.
    c = max(1.0, float(qp.P.diagonal().max()) if qp.n else 1.0)
    seen: set[bytes] = set()
    previous = b""
    status, ok, iterations = "max_iter_reached", False, 0
    for iterations in range(1, int(opts["max_iter"]) + 1):
        Ax = qp.A @ x
        upper = ~eq & fin_u & (y + c * (Ax - qp.u) > 0)
        lower = ~eq & fin_l & ~upper & (y + c * (Ax - qp.l) < 0)
        key = np.packbits(np.r_[upper, lower]).tobytes()
        if iterations > 1 and key == previous:
            status, ok = "solved", True
            break
        if key in seen:
            status = "cycling"
            break
        seen.add(key)
        previous = key
        active = eq | upper | lower
        bounds = np.where(upper, qp.u, qp.l)[active]
        x, y_act = _kkt_solve(qp, active, bounds, x, y[active], cache)
        y = np.zeros(qp.m)
        y[active] = y_act
        if complete is not None:
            x = complete(x, y)
        if time.perf_counter() - start > settings.time_limit:
            status = "time_limit"
            break
    elapsed = time.perf_counter() - start
    return RawSolution(x=x, y=y, status=status, ok=ok, iterations=iterations,
                       setup_time=0.0, solve_time=elapsed)
