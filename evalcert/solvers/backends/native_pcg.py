"""The PCG path of the native solver: one active set's equality-constrained QP
by projected preconditioned conjugate gradients, O(nnz(P)) per step.

Used by :func:`evalcert.solvers.backends.native.solve` on designs whose
factorisation would cost more than ``native.DIRECT_FLOPS``.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from evalcert.solvers.certificates import QP

__all__: list[str] = []


class _TimeUp(Exception):
    """The time limit expired inside a KKT solve."""


class _Unsupported(Exception):
    """The active set has a structure the PCG path does not handle."""


def _pcg_kkt_solve(qp: QP, active: np.ndarray, rhs_bounds: np.ndarray, x: np.ndarray,
                   cache: dict, deadline: float, progress, rtol: float = 1e-12
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The equality-constrained QP of an active set by projected PCG, O(nnz(P)) per step.

    Active rows of the form ``x_k - x_h = beta`` (two entries +-1), where the
    hub ``x_h`` has no Hessian entry (the all-cells box rows ``theta_i - c``,
    ``b_j - c``), tie ``x_k`` to ``x_h``: they are substituted,
    ``x = Z z + offset``. The few remaining active rows (the gauge
    ``sum_j b_j = 0``) stay as constraints ``C z = d``, and conjugate
    gradients run on ``min 1/2 z'Z'PZ z + (Z'(P offset + q))'z`` in the null
    space of ``C``, preconditioned by the diagonal of ``Z'PZ`` (the
    constraint preconditioner of Gould, Hribar & Nocedal, SIAM J. Sci.
    Comput. 23, 2001). Multipliers: ``y_C`` by least squares on the final
    gradient, and for each tie row from the stationarity of its ``x_k``.
    Stops when the projected gradient is below ``rtol`` of the problem's
    scale or stops falling (what rounding allows).
    """
    n = qp.n
    if "A_csr" not in cache:
        # P is symmetric: its CSR view (P.T of a CSC matrix, no copy) has the
        # faster product; rows of A are sliced in CSR.
        P = qp.P.tocsc()
        cache.update(A_csr=qp.A.tocsr(), P_rows=P.T, P_diag=P.diagonal())
        cache["hub"] = cache["P_diag"] == 0
    P, hub = cache["P_rows"], cache["hub"]
    A_act = cache["A_csr"][active]
    m = A_act.shape[0]
    per_row = np.diff(A_act.indptr)
    two = np.flatnonzero(per_row == 2)
    c0, c1 = A_act.indices[A_act.indptr[two]], A_act.indices[A_act.indptr[two] + 1]
    v0, v1 = A_act.data[A_act.indptr[two]], A_act.data[A_act.indptr[two] + 1]
    tie = (np.abs(v0) == 1) & (v0 == -v1) & (hub[c0] != hub[c1])
    t_rows = two[tie]
    k = np.where(hub[c0[tie]], c1[tie], c0[tie])
    h = np.where(hub[c0[tie]], c0[tie], c1[tie])
    a_k = np.where(hub[c0[tie]], v1[tie], v0[tie])
    is_general = np.ones(m, dtype=bool)
    is_general[t_rows] = False
    general = np.flatnonzero(is_general)
    hubs = np.flatnonzero(np.bincount(h, minlength=n))
    if len(general) > 200 or len(hubs) > 8 or (len(k) and np.bincount(k).max() > 1):
        raise _Unsupported
    rep = np.arange(n)
    off = np.zeros(n)
    rep[k] = h
    off[k] = rhs_bounds[t_rows] * a_k
    fixed = hub.copy()
    fixed[hubs] = False
    off[fixed] = x[fixed]
    free = (rep == np.arange(n)) & ~fixed
    diag = np.where(free, cache["P_diag"], 0.0)
    for g in hubs:
        e = (rep == g).astype(float)
        diag[g] = float(e @ (P @ e))
    if np.any(diag[free] <= 0):
        raise _Unsupported
    minv = np.where(free, 1.0 / np.where(free, diag, 1.0), 0.0)
    Z = sp.csr_matrix((np.ones(n), rep, np.arange(n + 1)), shape=(n, n))
    C_x = A_act[general]
    C = (C_x @ Z).tocsr()
    C = C.multiply(free[None, :]).tocsr()
    d = rhs_bounds[general] - C_x @ off

    groups = [(g, k[h == g]) for g in hubs]

    def up(v: np.ndarray) -> np.ndarray:          # Z' v on the free coordinates
        out = v * free
        for g, members in groups:
            out[g] += v[members].sum()
        return out

    def expand(v: np.ndarray) -> np.ndarray:      # Z v
        out = v.copy()
        out[k] = v[h]
        return out

    CMC = (C.multiply(minv[None, :]) @ C.T).toarray()
    if len(general) and np.linalg.matrix_rank(CMC) < len(general):
        raise _Unsupported

    def lsq(r: np.ndarray) -> np.ndarray:          # multipliers of C minimising ||r + C'y||_M^-1
        return -np.linalg.solve(CMC, C @ (minv * r)) if len(general) else np.zeros(0)

    z = np.where(free, x, 0.0)
    if len(general):
        z += minv * (C.T @ np.linalg.solve(CMC, d - C @ z))
    q_u = up(qp.q + P @ off)

    def grad(zz: np.ndarray) -> np.ndarray:
        return up(P @ expand(zz)) + q_u

    r = grad(z)
    target = rtol * max(1.0, float(np.abs(q_u).max()), float(np.abs(r - q_u).max()))
    y_g = lsq(r)
    projected = r + C.T @ y_g
    w = minv * projected
    p = -w
    rho = float(r @ w)
    best, since_best = np.inf, 0
    for it in range(1, 10 * n + 100):
        res = float(np.abs(projected).max())
        if progress is not None:
            progress.update(1)
            progress.set_postfix_str(f"pcg residual {res:.2e}", refresh=False)
        if res <= target or since_best > 50:
            break
        if res < 0.5 * best:
            best, since_best = res, 0
        else:
            since_best += 1
        if time.perf_counter() > deadline:
            raise _TimeUp
        Hp = up(P @ expand(p))
        curv = float(p @ Hp)
        if curv <= 0:
            break
        alpha = rho / curv
        z += alpha * p
        r = grad(z) if it % 50 == 0 else r + alpha * Hp   # refresh against drift
        y_g = lsq(r)
        projected = r + C.T @ y_g
        w = minv * projected
        rho_new = float(r @ w)
        p = -w + (rho_new / rho) * p
        rho = rho_new
    x_new = expand(z) + off
    g_x = P @ x_new + qp.q + C_x.T @ y_g
    y = np.zeros(m)
    y[general] = y_g
    y[t_rows] = -a_k * g_x[k]
    return x_new, y
