"""The native solver's convergent second method: a primal active-set method with Bland's rule.

The primal-dual active-set iteration of :mod:`evalcert.solvers.backends.native`
is a semismooth Newton method: fast, but only guaranteed to converge when
the Hessian is an M-matrix. On the observed-cells box with bootstrap
weights, or with variables that no row pins, it can revisit an active set
(status ``"cycling"``). This module finishes such solves with the classical
primal active-set method (Nocedal & Wright, *Numerical Optimization*, 2nd
ed., Algorithm 16.3) on ``min 1/2 x'Px + q'x  s.t.  l <= Ax <= u``:

* start from a feasible point (the caller's, or a phase-1 LP by HiGHS);
* keep a working set ``W`` of rows held at a bound; solve the equality QP
  of ``W`` exactly (the same KKT solves as the first method) and step
  towards its solution ``x_W`` as far as feasibility allows,
  ``alpha = min(1, min_i slack_i / (a_i'p))``, adding the blocking row;
* at ``x = x_W``, stop if every multiplier has the sign of its bound
  (``y_i >= 0`` at an upper bound, ``<= 0`` at a lower one: the KKT
  conditions hold), else drop a row with a wrong sign.

Every step with ``alpha > 0`` strictly lowers the objective; only steps of
length 0 at a degenerate vertex can repeat working sets. After
``DEGENERATE_STEPS`` of them in a row the choice of the row to add and to
drop follows Bland's smallest-index rule, which cannot cycle, until the
objective falls again.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import scipy.sparse as sp

from evalcert.solvers.certificates import QP

__all__ = ["primal_active_set", "violation", "DEGENERATE_STEPS"]

#: Length-0 steps in a row after which rows are chosen by Bland's rule.
DEGENERATE_STEPS = 10


def violation(qp: QP, x: np.ndarray, Ax: np.ndarray | None = None) -> float:
    """Largest violation ``max(l - Ax, Ax - u, 0)`` of the rows at ``x``.

    Examples
    --------
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.zeros(1), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))
    >>> violation(qp, np.array([1.5])), violation(qp, np.array([0.0]))
    (0.5, 0.0)
    """
    Ax = qp.A @ x if Ax is None else Ax
    with np.errstate(invalid="ignore"):
        v = np.maximum(np.where(np.isfinite(qp.u), Ax - qp.u, 0.0),
                       np.where(np.isfinite(qp.l), qp.l - Ax, 0.0))
    return float(max(v.max(initial=0.0), 0.0))


def feasible_point(qp: QP, tol: float) -> np.ndarray | None:
    """A point with ``l <= Ax <= u`` (phase 1: an LP with a zero objective, by
    HiGHS through :func:`scipy.optimize.linprog`), or ``None`` if there is none."""
    from scipy.optimize import linprog

    A = qp.A.tocsr()
    eq = qp.l == qp.u
    up = ~eq & np.isfinite(qp.u)
    lo = ~eq & np.isfinite(qp.l)
    A_ub = sp.vstack([A[up], -A[lo]]).tocsr()
    b_ub = np.r_[qp.u[up], -qp.l[lo]]
    res = linprog(np.zeros(qp.n), A_ub=A_ub if A_ub.shape[0] else None,
                  b_ub=b_ub if A_ub.shape[0] else None,
                  A_eq=A[eq] if eq.any() else None, b_eq=qp.l[eq] if eq.any() else None,
                  bounds=(None, None), method="highs",
                  options={"primal_feasibility_tolerance": 1e-10})
    if res.status != 0 or res.x is None or violation(qp, res.x) > tol:
        return None
    return np.asarray(res.x, dtype=float)


def primal_active_set(qp: QP, x: np.ndarray, kkt: Callable, max_iter: int, deadline: float
                      ) -> tuple[np.ndarray, np.ndarray, str, bool, int]:
    """Solve ``qp`` from ``x`` by the primal active-set method with Bland's rule.

    Parameters
    ----------
    qp : QP
    x : ndarray
        A start; if it violates a row by more than rounding, a feasible
        point is found first (:func:`feasible_point`).
    kkt : callable
        ``kkt(active, bounds, x, y_active, tight) -> (x, y_active, exact)``:
        the equality-constrained QP of a working set, as in
        :func:`evalcert.solvers.backends.native.solve`.
    max_iter : int
        Working-set changes allowed.
    deadline : float
        ``time.perf_counter()`` value after which it stops (status ``"time_limit"``).

    Returns
    -------
    x, y, status, ok, iterations
        ``status`` is ``"solved"``, ``"infeasible"`` (no feasible point),
        ``"kkt_not_converged"`` (the last equality QP was not solved to
        rounding), ``"max_iter_reached"`` or ``"time_limit"``.

    Examples
    --------
    ``min (x1 - 2)^2 + (x2 - 2)^2`` on ``x1 + x2 <= 1``, ``x >= 0``:

    >>> import scipy.linalg as sla
    >>> qp = QP(P=2.0 * sp.eye(2, format="csc"), q=np.array([-4.0, -4.0]),
    ...         A=sp.csc_matrix(np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]])),
    ...         l=np.array([-np.inf, 0.0, 0.0]), u=np.array([1.0, np.inf, np.inf]))
    >>> def kkt(active, bounds, x, y_act, tight):  # a dense KKT solve
    ...     A = qp.A.toarray()[active]
    ...     K = np.block([[qp.P.toarray(), A.T], [A, np.zeros((len(A), len(A)))]])
    ...     z = sla.lstsq(K, np.r_[-qp.q, bounds])[0]
    ...     return z[:2], z[2:], True
    >>> x, y, status, ok, it = primal_active_set(qp, np.zeros(2), kkt, 50, np.inf)
    >>> status, np.round(x, 12).tolist(), (np.round(y, 12) + 0.0).tolist()  # + 0.0: no -0.0
    ('solved', [0.5, 0.5], [3.0, 0.0, 0.0])
    """
    n, m = qp.n, qp.m
    eq = qp.l == qp.u
    fin_u, fin_l = np.isfinite(qp.u), np.isfinite(qp.l)
    bound_scale = max(1.0, float(np.abs(qp.u[fin_u]).max(initial=0.0)),
                      float(np.abs(qp.l[fin_l]).max(initial=0.0)))
    feas_tol = 1e-9 * bound_scale
    x = np.asarray(x, dtype=float).copy()
    if violation(qp, x) > feas_tol:
        start = feasible_point(qp, feas_tol)
        if start is None:
            return x, np.zeros(m), "infeasible", False, 0
        x = start
    A = qp.A.tocsr()
    working = eq.copy()
    upper = np.zeros(m, dtype=bool)         # which bound a working row holds
    y = np.zeros(m)
    degenerate = 0
    for iterations in range(1, max_iter + 1):
        if time.perf_counter() > deadline:
            return x, y, "time_limit", False, iterations
        bounds = np.where(upper, qp.u, qp.l)[working]
        x_w, y_w, exact = kkt(working, bounds, x, y[working], True)
        p = x_w - x
        if float(np.abs(p).max(initial=0.0)) <= 1e-11 * max(1.0, float(np.abs(x).max())):
            x = x_w
            y = np.zeros(m)
            y[working] = y_w
            grad_scale = max(1.0, float(np.abs(qp.q).max(initial=0.0)),
                             float(np.abs(qp.P @ x).max(initial=0.0)))
            signed = np.where(upper, y, -y)
            wrong = np.flatnonzero(working & ~eq & (signed < -1e-9 * grad_scale))
            if len(wrong) == 0:
                return (x, y, "solved", True, iterations) if exact else \
                    (x, y, "kkt_not_converged", False, iterations)
            drop = wrong[0] if degenerate >= DEGENERATE_STEPS else wrong[np.argmin(signed[wrong])]
            working[drop] = False
            continue
        Ax, Ap = A @ x, A @ p
        tiny = 1e-11 * float(np.abs(Ap).max())
        with np.errstate(divide="ignore", invalid="ignore"):
            to_u = ~working & fin_u & (Ap > tiny)
            to_l = ~working & fin_l & (Ap < -tiny)
            ratio = np.full(m, np.inf)
            ratio[to_u] = np.maximum(qp.u[to_u] - Ax[to_u], 0.0) / Ap[to_u]
            ratio[to_l] = np.minimum(qp.l[to_l] - Ax[to_l], 0.0) / Ap[to_l]
        alpha = float(ratio.min(initial=np.inf))
        if alpha >= 1.0:
            x = x_w
            y = np.zeros(m)
            y[working] = y_w
            degenerate = 0
            continue
        ties = np.flatnonzero(ratio <= alpha + 1e-12 * max(alpha, 1e-300))
        add = ties[0] if degenerate >= DEGENERATE_STEPS or len(ties) == 1 else \
            ties[np.argmax(np.abs(Ap[ties]))]
        degenerate = degenerate + 1 if alpha == 0.0 else 0
        x = x + alpha * p
        working[add] = True
        upper[add] = bool(to_u[add])
        y = np.zeros(m)
    return x, y, "max_iter_reached", False, max_iter
