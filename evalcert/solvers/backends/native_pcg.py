"""The PCG path of the native solver: one active set's equality-constrained QP
by preconditioned conjugate gradients, O(nnz(P)) per step: on the Schur
complement of the eliminable (item) block when the QP names one, else
projected PCG on the full system.

Used by :func:`evalcert.solvers.backends.native.solve` on designs whose
factorisation would cost more than ``native.DIRECT_FLOPS``. The Schur
operator and its CG are in :mod:`~evalcert.solvers.backends.native_schur`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from evalcert.solvers.backends.native_schur import _CGStop, _schur_cg, _schur_operator
from evalcert.solvers.certificates import QP

__all__: list[str] = []

#: The Schur path holds the general active rows (the gauge) densely on all
#: variables while it sets up an active set: up to this many entries (32 MB),
#: else the projected PCG on the full system runs. One dense row and a few
#: passes over it replaced ~15 masked copies of its triplets per active-set
#: step (the gauge of 10^6 items: ~50 ms a step).
DENSE_GENERAL = 2 ** 22


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
    ``sum_j b_j = 0``) stay as constraints ``C z = d`` of
    ``min 1/2 z'Z'PZ z + (Z'(P offset + q))'z``.

    When ``qp.eliminable`` names a diagonal block of ``P`` (the items of the
    clipped-linear fit), the free eliminable variables and then the
    multipliers of ``C`` are eliminated exactly
    (:func:`~evalcert.solvers.backends.native_schur._schur_operator`) and
    conjugate gradients run on the K-square Schur complement, preconditioned
    by its diagonal and started from the current point
    (:func:`~evalcert.solvers.backends.native_schur._schur_cg`):
    each step is one gather and one scatter over the cells with vectors of
    size K, and it needs fewer steps than the full system (39 against 66 CG
    steps for a whole fit at 10^4 x 10^6 with 5 x 10^6 cells). Otherwise
    projected PCG runs on all free coordinates in the null space of ``C``,
    preconditioned by the diagonal of ``Z'PZ`` (the constraint
    preconditioner of Gould, Hribar & Nocedal, SIAM J. Sci. Comput. 23,
    2001), with ``y_C`` by least squares on the final gradient. Multipliers
    of the tie rows come from the stationarity of their ``x_k``. Stops when
    the projected gradient is below ``rtol`` of the problem's scale or stops
    falling (what rounding allows).
    """
    red = _reduction(qp, active, rhs_bounds, x, cache)
    if red["schur"] is not None:
        z, y_g = _schur_cg(red["schur"], x, rtol, red["g_size"], deadline, progress)
    else:   # CSC sums the repeated (hub) entries per column, not by sorting one long row
        z, y_g = _full_cg(qp, cache["P_rows"], x, red["free"], red["rep"], red["hubs"],
                          red["C"].tocsc(), red["d"], red["q_u"], red["up"], red["expand"],
                          cache, rtol, deadline, progress)
    k, t_rows, general = red["k"], red["t_rows"], red["general"]
    x_new = red["expand"](z) + red["off"]
    g_k = red["P_k"].T @ x_new + qp.q[k] + (red["C_x"].T @ y_g)[k]
    y = np.zeros(red["m"])
    y[general] = y_g
    y[t_rows] = -red["a_k"] * g_k
    return x_new, y


def _reduction(qp: QP, active: np.ndarray, rhs_bounds: np.ndarray, x: np.ndarray,
               cache: dict) -> dict:
    """The substitution of the tie rows and, when it applies, the Schur
    operator of one active set (everything of :func:`_pcg_kkt_solve` but the
    CG run and the multipliers).

    The last one is kept in ``cache["pcg_last"]`` and reused when the next
    solve has the same QP object, active set and bounds (and the same values
    of the variables held fixed): the primal-dual iteration solves a settled
    active set once loosely and then once more to rounding, and this second
    solve then costs its CG steps only, not the passes over item-length
    vectors (and one or two over the cells) that set the operator up. The caller
    (:func:`evalcert.solvers.backends.native.solve`) drops it at the end of
    a solve. The tie rows of ``A`` are found once per QP (:func:`_tie_rows`,
    kept in ``cache``); each active set only gathers its own."""
    n = qp.n
    if "A_csr" not in cache:
        # P is symmetric: its CSR view (P.T of a CSC matrix, no copy) has the
        # faster product; rows of A are sliced in CSR.
        P = qp.P.tocsc()
        cache.update(A_csr=qp.A.tocsr(), P_rows=P.T, P_csc=P)
        if "P_diag" not in cache:
            cache["P_diag"] = P.diagonal()
        cache["hub"] = cache["P_diag"] == 0
        cache["ties"] = _tie_rows(cache["A_csr"], cache["hub"])
    key = np.packbits(active).tobytes()
    last = cache.pop("pcg_last", None)
    if last is not None and last["qp"] is qp and last["key"] == key and \
            np.array_equal(last["bounds"], rhs_bounds) and \
            np.array_equal(last["x_fixed"], x[last["fixed"]]):
        cache["pcg_last"] = last
        return last
    del last                              # before building the next one (peak memory)
    hub, ties = cache["hub"], cache["ties"]
    rows = np.flatnonzero(active)
    m = len(rows)
    is_tie = ties["is_tie"][rows]
    t_rows = np.flatnonzero(is_tie)
    general = np.flatnonzero(~is_tie)
    del is_tie
    of_tie = rows[t_rows]
    k, h, a_k = ties["k"][of_tie], ties["h"][of_tie], ties["a"][of_tie].astype(float)
    del of_tie
    hubs = ties["hubs"][np.bincount(ties["hub_pos"][h], minlength=len(ties["hubs"])) > 0]
    if len(general) > 200 or len(hubs) > 8 or (len(k) and np.bincount(k).max() > 1):
        raise _Unsupported
    rep = np.arange(n)
    off = np.zeros(n)
    rep[k] = h
    off[k] = rhs_bounds[t_rows] * a_k
    fixed = hub.copy()
    fixed[hubs] = False
    fixed = np.flatnonzero(fixed)
    off[fixed] = x[fixed]
    free = np.ones(n, dtype=bool)
    free[k] = False
    free[fixed] = False
    C_x = cache["A_csr"][rows[general]]
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

    # P's columns of the tied variables (hubs have none): P off = P_k off_k, and
    # the gradient at the tied variables is P_k' x + q_k (P is symmetric).
    # (A third of the items at 5 x 10^6 cells: slicing them beat two products
    # with all of P, measured.)
    P_k = cache["P_csc"][:, k]
    q_u = up(qp.q + P_k @ off[k])
    schur = None
    if len(general) * n <= DENSE_GENERAL:
        # C_x Z on the free coordinates, dense (a tied column merged into its hub's)
        C_Z = np.stack([up(row) for row in C_x.toarray()]) if len(general) else \
            np.zeros((0, n))
        schur = _schur_operator(qp, cache, free, k, h, hubs, C_Z, d, q_u)
        del C_Z
    C = None
    if schur is None:                             # the same as triplets, for _full_cg
        C = C_x.tocoo()
        cols = rep[C.col]
        keep = free[cols]
        C = sp.coo_matrix((C.data[keep], (C.row[keep], cols[keep])), shape=C_x.shape)
    red = dict(qp=qp, key=key, bounds=rhs_bounds.copy(), fixed=fixed, x_fixed=x[fixed],
               m=m, k=k, t_rows=t_rows, a_k=a_k, general=general, hubs=hubs, rep=rep,
               off=off, free=free, C=C, C_x=C_x, d=d, P_k=P_k, q_u=q_u, up=up,
               expand=expand, g_size=float(np.abs(q_u).max()), schur=schur)
    cache["pcg_last"] = red
    return red


def _tie_rows(A: sp.csr_matrix, hub: np.ndarray) -> dict:
    """The rows of ``A`` that tie a variable to a hub, found once per QP:
    ``x_k - x_h`` or ``x_h - x_k`` (two entries +-1) with ``x_h`` a hub and
    ``x_k`` not. ``is_tie`` marks them; ``k``, ``h`` and ``a`` (the
    coefficient of ``x_k``, +-1) are set on them (0 elsewhere); ``hubs`` lists
    the hubs and ``hub_pos`` maps a variable to its place there."""
    m = A.shape[0]
    two = np.flatnonzero(np.diff(A.indptr) == 2)
    start = A.indptr[two]
    c0, c1 = A.indices[start], A.indices[start + 1]
    v0, v1 = A.data[start], A.data[start + 1]
    hub0 = hub[c0]
    tie = (np.abs(v0) == 1) & (v0 == -v1) & (hub0 != hub[c1])
    rows = two[tie]
    c0, c1, v0, v1, hub0 = c0[tie], c1[tie], v0[tie], v1[tie], hub0[tie]
    is_tie = np.zeros(m, dtype=bool)
    is_tie[rows] = True
    k = np.zeros(m, dtype=A.indices.dtype)
    h = np.zeros(m, dtype=A.indices.dtype)
    a = np.zeros(m, dtype=np.int8)
    k[rows] = np.where(hub0, c1, c0)
    h[rows] = np.where(hub0, c0, c1)
    a[rows] = np.where(hub0, v1, v0)
    hubs = np.flatnonzero(hub)
    hub_pos = np.zeros(len(hub), dtype=np.int64)
    hub_pos[hubs] = np.arange(len(hubs))
    return dict(is_tie=is_tie, k=k, h=h, a=a, hubs=hubs, hub_pos=hub_pos)


def _full_cg(qp, P, x, free, rep, hubs, C, d, q_u, up, expand, cache, rtol, deadline,
             progress):
    """Projected PCG on all free coordinates, preconditioned by the diagonal
    of ``Z'PZ`` (when the QP names no eliminable block): ``(z, y_general)``."""
    n = qp.n
    diag = np.where(free, cache["P_diag"], 0.0)
    for g in hubs:
        e = (rep == g).astype(float)
        diag[g] = float(e @ (P @ e))
    if np.any(diag[free] <= 0):
        raise _Unsupported
    minv = np.where(free, 1.0 / np.where(free, diag, 1.0), 0.0)
    general = C.shape[0]
    CMC = (C.multiply(minv[None, :]) @ C.T).toarray()
    if general and np.linalg.matrix_rank(CMC) < general:
        raise _Unsupported

    def lsq(r: np.ndarray) -> np.ndarray:          # multipliers of C minimising ||r + C'y||_M^-1
        return -np.linalg.solve(CMC, C @ (minv * r)) if general else np.zeros(0)

    z = np.where(free, x, 0.0)
    if general:
        z += minv * (C.T @ np.linalg.solve(CMC, d - C @ z))

    def grad(zz: np.ndarray) -> np.ndarray:
        return up(P @ expand(zz)) + q_u

    r = grad(z)
    target = rtol * max(1.0, float(np.abs(q_u).max()), float(np.abs(r - q_u).max()))
    y_g = lsq(r)
    projected = r + C.T @ y_g
    w = minv * projected
    p = -w
    rho = float(r @ w)
    stop = _CGStop(target, deadline, progress)
    for it in range(1, 10 * n + 100):
        if stop(float(np.abs(projected).max())):
            break
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
    return z, y_g
