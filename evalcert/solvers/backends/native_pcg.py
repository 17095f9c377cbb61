"""The PCG path of the native solver: one active set's equality-constrained QP
by preconditioned conjugate gradients, O(nnz(P)) per step: on the Schur
complement of the eliminable (item) block when the QP names one, else
projected PCG on the full system.

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


class _CGStop:
    """The stopping rule both CG loops share: stop at ``target``, or after 50
    steps without halving the best residual; report progress; raise
    :class:`_TimeUp` past ``deadline``."""

    def __init__(self, target: float, deadline: float, progress):
        self.target, self.deadline, self.progress = target, deadline, progress
        self.best, self.since_best = np.inf, 0

    def __call__(self, res: float) -> bool:
        if self.progress is not None:
            self.progress.update(1)
            self.progress.set_postfix_str(f"pcg residual {res:.2e}", refresh=False)
        if res <= self.target or self.since_best > 50:
            return True
        if res < 0.5 * self.best:
            self.best, self.since_best = res, 0
        else:
            self.since_best += 1
        if time.perf_counter() > self.deadline:
            raise _TimeUp
        return False


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
    multipliers of ``C`` are eliminated exactly (:func:`_schur_operator`) and
    conjugate gradients run on the K-square Schur complement, preconditioned
    by its diagonal and started from the current point (:func:`_schur_cg`):
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
    n = qp.n
    if "A_csr" not in cache:
        # P is symmetric: its CSR view (P.T of a CSC matrix, no copy) has the
        # faster product; rows of A are sliced in CSR.
        P = qp.P.tocsc()
        cache.update(A_csr=qp.A.tocsr(), P_rows=P.T, P_csc=P, P_diag=P.diagonal())
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
    C_x = A_act[general]
    C = C_x.tocoo()                               # C_x Z on the free coordinates, as
    cols = rep[C.col]                             # triplets: a tied column merged into
    keep = free[cols]                             # its hub repeats the hub's column
    C = sp.coo_matrix((C.data[keep], (C.row[keep], cols[keep])), shape=C_x.shape)
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
    # the gradient at the tied variables is P_k' x + q_k (P is symmetric)
    P_k = cache["P_csc"][:, k]
    q_u = up(qp.q + P_k @ off[k])
    schur = _schur_operator(qp, cache, x, free, k, h, hubs, C, d, q_u)
    if schur is not None:
        z, y_g = _schur_cg(schur, rtol, float(np.abs(q_u).max()), deadline, progress)
    else:   # CSC sums the repeated (hub) entries per column, not by sorting one long row
        z, y_g = _full_cg(qp, P, x, free, rep, hubs, C.tocsc(), d, q_u, up, expand, cache,
                          rtol, deadline, progress)
    x_new = expand(z) + off
    g_k = P_k.T @ x_new + qp.q[k] + (C_x.T @ y_g)[k]
    y = np.zeros(m)
    y[general] = y_g
    y[t_rows] = -a_k * g_k
    return x_new, y


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


def _split(qp: QP, cache: dict):
    """``P`` split once per QP for the item-eliminated (Schur) operator, or None.

    ``E = qp.eliminable`` (``P_EE = diag(d_E)``, ``d_E > 0``), ``F`` the rest.
    ``P_EF`` is kept as CSR with one row per eliminated variable and its
    column indices renumbered into ``F`` (a last, dummy column receives the
    diagonal entries, which the products then ignore), so ``P_EF @ x_F``
    gathers from, and ``P_EF' @ u`` scatters into, a vector of size
    ``|F| + 1`` (K + 3 for the clipped-linear fit: it stays in cache, unlike
    the 10^6-long vectors of a product with all of ``P``)."""
    if "split" in cache:
        return cache["split"]
    out = None
    if qp.eliminable is not None and len(qp.eliminable):
        n = qp.n
        E = np.asarray(qp.eliminable, dtype=np.int64)
        P = qp.P.tocsc()
        d_E = P.diagonal()[E]
        is_E = np.zeros(n, dtype=bool)
        is_E[E] = True
        F = np.flatnonzero(~is_E)
        nF = len(F)
        itype = np.int32 if nF + 1 < 2 ** 31 - 1 and P.nnz < 2 ** 31 - 1 else np.int64
        pos_F = np.full(n, nF, dtype=itype)
        pos_F[F] = np.arange(nF, dtype=itype)
        E_range = slice(int(E[0]), int(E[-1]) + 1) if np.all(np.diff(E) == 1) else None
        if E_range is not None:            # a range of columns: views of P's arrays
            s, e = int(P.indptr[E[0]]), int(P.indptr[E[-1] + 1])
            data, rows = P.data[s:e], P.indices[s:e]
            indptr = (P.indptr[E[0]:E[-1] + 2] - s).astype(itype)
        else:
            cols = P[:, E]
            data, rows, indptr = cols.data, cols.indices, cols.indptr.astype(itype)
        P_EF = sp.csr_matrix((data, pos_F[rows], indptr), shape=(len(E), nF + 1))
        P_FF = P[:, F][F, :].tocsr()
        P_FF.resize((nF + 1, nF + 1))
        pos_E = np.full(n, -1, dtype=np.int64)
        pos_E[E] = np.arange(len(E))
        if np.all(d_E > 0):
            out = dict(E=E, F=F, nF=nF, d_E=d_E, is_E=is_E, pos_F=pos_F,
                       pos_E=pos_E, P_EF=P_EF, P_FF=P_FF, P_FF_diag=P_FF.diagonal())
    cache["split"] = out
    return out


def _schur_operator(qp: QP, cache: dict, x: np.ndarray, free: np.ndarray, k: np.ndarray,
                    h: np.ndarray, hubs: np.ndarray, C: sp.coo_matrix, d: np.ndarray,
                    q_u: np.ndarray):
    """The reduced KKT system of one active set with ``E`` eliminated exactly.

    With ``H = Z'PZ = [[D, B'], [B, H_RR]]`` on the free coordinates (``D``
    the diagonal block of the free eliminable variables, ``R`` the other free
    ones: agents and the hubs in use), gradient ``g`` and general rows
    ``C = [C_E, C_R]`` (``Cz = d``), eliminating ``z_E`` and then the few
    multipliers ``y`` exactly leaves ``M z_R = rhs`` with

        S = H_RR - B D^-1 B',  C~ = C_R - C_E D^-1 B',  T = C_E D^-1 C_E',
        M = S + C~' T^-1 C~,   rhs = -g_R + B D^-1 g_E + C~' T^-1 (d + C_E D^-1 g_E),

    symmetric positive definite, of size K + 2 here; ``M v`` costs one
    gather and one scatter over the cells, and ``M z_R - rhs`` is exactly the
    projected gradient of the full system (the rows of ``E`` and ``C`` hold
    exactly). None when ``qp`` has no eliminable block or ``T`` is singular.
    """
    s = _split(qp, cache)
    if s is None:
        return None
    E, F, nF, d_E, is_E = s["E"], s["F"], s["nF"], s["d_E"], s["is_E"]
    P_EF, P_EF_T, P_FF, pos_F = s["P_EF"], s["P_EF"].T, s["P_FF"], s["pos_F"]
    free_E = free[E]
    free_F = np.zeros(nF + 1, dtype=bool)
    free_F[:nF] = free[F]
    inv_d = np.where(free_E, 1.0 / d_E, 0.0)
    tied_E = is_E[k]
    t_E, t_E_hub = s["pos_E"][k[tied_E]], pos_F[h[tied_E]]
    t_F, t_F_hub = pos_F[k[~tied_E]], pos_F[h[~tied_E]]

    def expand(v):                         # x_F = Z_F v (tied agents take their hub's value)
        x = v.copy()
        x[t_F] = v[t_F_hub]
        return x

    def up(v):                             # Z_F' v on the free coordinates
        return v * free_F + np.bincount(t_F_hub, weights=v[t_F], minlength=nF + 1)

    neg_inv_d = -inv_d
    d_hub = np.bincount(t_E_hub, weights=d_E[t_E], minlength=nF + 1)   # sum of tied d_j

    def S_apply(v):                        # one gather and one scatter pass over the cells
        x = expand(v)
        a = P_EF @ x                       # B'v on free E rows; P_EF x_F on tied ones
        tied = np.bincount(t_E_hub, weights=a[t_E], minlength=nF + 1) + d_hub * v
        a *= neg_inv_d                     # -D^-1 B'v on free rows (0 on tied ones) ...
        a[t_E] = v[t_E_hub]                # ... and the hub's value on tied rows
        return up(P_FF @ x + P_EF_T @ a) + tied

    g_E = q_u[E] * free_E
    g_R = np.r_[q_u[F], 0.0] * free_F
    # C's columns: on E (free items: each once per row, rows in order) as CSR
    # arrays, no conversion; on F (agents and hubs, where tied columns repeat
    # their hub's) summed, dense
    n_g = C.shape[0]
    in_E = is_E[C.col]
    C_E = sp.csr_matrix((C.data[in_E], s["pos_E"][C.col[in_E]],
                         np.searchsorted(C.row[in_E], np.arange(n_g + 1))), shape=(n_g, len(E)))
    C_E_dense = C_E.toarray()
    in_F = ~in_E
    C_t = np.bincount(C.row[in_F].astype(np.int64) * (nF + 1) + pos_F[C.col[in_F]],
                      weights=C.data[in_F],
                      minlength=n_g * (nF + 1)).reshape(n_g, nF + 1)
    del in_E, in_F
    if n_g:
        C_E_scaled = C_E.copy()                # C_E D^-1, scaled in place (no broadcasting)
        C_E_scaled.data *= inv_d[C_E.indices]
        T = C_E_scaled @ C_E_dense.T
        del C_E_scaled
        try:
            L = np.linalg.cholesky(T)
        except np.linalg.LinAlgError:
            return None
        if np.diag(L).min() <= 1e-12 * np.diag(L).max():
            return None
        T_inv = np.linalg.inv(T)
    # B D^-1 [C_E', g_E] (for C~ and rhs): one scatter pass per column
    B_scaled = np.stack([up(P_EF_T @ (u * inv_d))
                         for u in [*C_E_dense, g_E]], axis=1)
    del C_E_dense
    C_t = (C_t - B_scaled[:, :n_g].T) * free_F
    r_y = d + C_E @ (g_E * inv_d)
    T_inv = T_inv if n_g else np.zeros((0, 0))
    rhs = -g_R + B_scaled[:, n_g] + C_t.T @ (T_inv @ r_y)
    v0 = np.zeros(nF + 1)                  # the warm start: the current point
    v0[:nF] = x[F]
    v0 *= free_F
    # diag(S) on the agents: P_ii - sum_j P_ij^2 / d_j (squares held only here)
    squares = sp.csr_matrix((P_EF.data ** 2, P_EF.indices, P_EF.indptr), shape=P_EF.shape)
    diag = np.r_[s["P_FF_diag"][:nF], 0.0] - squares.T @ inv_d
    del squares
    # a hub's entry: its members' own entries (tied agents' Schur diagonal,
    # tied items' d_j), an estimate without the cross terms (no pass)
    diag[pos_F[hubs]] = 0.0
    diag += np.bincount(t_F_hub, weights=diag[t_F], minlength=nF + 1) + d_hub
    diag += np.einsum("ir,ij,jr->r", C_t, T_inv, C_t)
    if np.any(diag[free_F] <= 0):
        return None

    def M(v):
        return S_apply(v) + C_t.T @ (T_inv @ (C_t @ v))

    def recover(v):                        # (z on all n coordinates, y of the general rows)
        y = T_inv @ (C_t @ v - r_y)
        z = np.zeros(qp.n)
        z[F] = v[:nF]
        z[E] = -(g_E + P_EF @ expand(v) + C_E.T @ y) * inv_d
        return z, y

    return dict(M=M, rhs=rhs, minv=np.where(free_F, 1.0 / np.where(free_F, diag, 1.0), 0.0),
                v0=v0, recover=recover)


def _schur_cg(op: dict, rtol: float, g_size: float, deadline: float, progress):
    """PCG on ``M z_R = rhs`` of :func:`_schur_operator` from the current
    point (warm start), preconditioned by ``diag(M)`` (a hub's entry estimated from its
    members' entries): ``(z, y_general)``.
    Stops when ``max |rhs - M z_R|`` (the projected gradient of the full
    system) is below ``rtol`` times the largest of 1, the linear term
    (``g_size``), ``rhs`` and ``M z_R``, or stops falling."""
    M, rhs, minv, v = op["M"], op["rhs"], op["minv"], op["v0"]
    Mv = M(v)
    r = rhs - Mv
    target = rtol * max(1.0, g_size, float(np.abs(rhs).max()), float(np.abs(Mv).max()))
    w = minv * r
    p = w.copy()
    rho = float(r @ w)
    stop = _CGStop(target, deadline, progress)
    for it in range(1, 10 * len(v) + 100):
        if stop(float(np.abs(r).max())):
            break
        Mp = M(p)
        curv = float(p @ Mp)
        if curv <= 0:
            break
        alpha = rho / curv
        v += alpha * p
        r = rhs - M(v) if it % 50 == 0 else r - alpha * Mp     # refresh against drift
        w = minv * r
        rho_new = float(r @ w)
        p = w + (rho_new / rho) * p
        rho = rho_new
    return op["recover"](v)
