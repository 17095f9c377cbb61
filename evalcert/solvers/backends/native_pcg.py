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

#: The Schur path holds the general active rows (the gauge) densely on all
#: variables while it sets up an active set: up to this many entries (32 MB),
#: else the projected PCG on the full system runs. One dense row and a few
#: passes over it replaced ~15 masked copies of its triplets per active-set
#: step (the gauge of 10^6 items: ~50 ms a step).
DENSE_GENERAL = 2 ** 22


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
    a solve."""
    n = qp.n
    if "A_csr" not in cache:
        # P is symmetric: its CSR view (P.T of a CSC matrix, no copy) has the
        # faster product; rows of A are sliced in CSR.
        P = qp.P.tocsc()
        cache.update(A_csr=qp.A.tocsr(), P_rows=P.T, P_csc=P, P_diag=P.diagonal())
        cache["hub"] = cache["P_diag"] == 0
    key = np.packbits(active).tobytes()
    last = cache.pop("pcg_last", None)
    if last is not None and last["qp"] is qp and last["key"] == key and \
            np.array_equal(last["bounds"], rhs_bounds) and \
            np.array_equal(last["x_fixed"], x[last["fixed"]]):
        cache["pcg_last"] = last
        return last
    del last                              # before building the next one (peak memory)
    hub = cache["hub"]
    A_act = cache["A_csr"][active]
    m = A_act.shape[0]
    per_row = np.diff(A_act.indptr)
    two = np.flatnonzero(per_row == 2)
    start = A_act.indptr[two]
    c0, c1 = A_act.indices[start], A_act.indices[start + 1]
    v0, v1 = A_act.data[start], A_act.data[start + 1]
    hub0 = hub[c0]
    tie = (np.abs(v0) == 1) & (v0 == -v1) & (hub0 != hub[c1])
    t_rows = two[tie]
    c0, c1, v0, v1, hub0 = c0[tie], c1[tie], v0[tie], v1[tie], hub0[tie]
    k = np.where(hub0, c1, c0)
    h = np.where(hub0, c0, c1)
    a_k = np.where(hub0, v1, v0)
    del start, c0, c1, v0, v1, hub0
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
    fixed = np.flatnonzero(fixed)
    off[fixed] = x[fixed]
    free = rep == np.arange(n)
    free[fixed] = False
    C_x = A_act[general]
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
    the 10^6-long vectors of a product with all of ``P``). ``cell_value`` is
    the value all off-diagonal entries of ``P_EF`` share (-2 in a plain fit),
    or None (weights): with it, ``diag(S)`` needs no array of squares."""
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
        # the one value of P's cells (the off-diagonal entries of P_EF), if any
        cells = P_EF.data[P_EF.indices != nF]
        p_cell = float(cells[0]) if len(cells) and np.all(cells == cells[0]) else None
        del cells
        if np.all(d_E > 0):
            out = dict(E=E, F=F, nF=nF, d_E=d_E, is_E=is_E, pos_F=pos_F,
                       pos_E=pos_E, P_EF=P_EF, P_FF=P_FF, P_FF_diag=P_FF.diagonal(),
                       cell_value=p_cell)
    cache["split"] = out
    return out


def _schur_operator(qp: QP, cache: dict, free: np.ndarray, k: np.ndarray, h: np.ndarray,
                    hubs: np.ndarray, C: np.ndarray, d: np.ndarray, q_u: np.ndarray):
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
    exactly). ``C`` is dense, ``C_x Z`` on all variables (zero off the free
    ones). None when ``qp`` has no eliminable block or ``T`` is singular.
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
    # C (dense, on all n coordinates, zero off the free ones): its columns on
    # E and on F (agents and hubs; a last, dummy column for the products)
    n_g = C.shape[0]
    C_E = C[:, E]
    C_t = np.zeros((n_g, nF + 1))
    C_t[:, :nF] = C[:, F]
    if n_g:
        T = (C_E * inv_d) @ C_E.T
        try:
            L = np.linalg.cholesky(T)
        except np.linalg.LinAlgError:
            return None
        if np.diag(L).min() <= 1e-12 * np.diag(L).max():
            return None
        T_inv = np.linalg.inv(T)
    # B D^-1 [C_E', g_E] (for C~ and rhs) and, when all of P's cells hold one
    # value p (a plain fit: p = -2), the sums for diag(S) below as p B D^-1 1:
    # one scatter pass over the cells for all the columns
    p_cell = s["cell_value"]
    U = np.empty((len(E), n_g + 1 + (p_cell is not None)))
    U[:, :n_g] = C_E.T
    U[:, n_g] = g_E
    U[:, n_g + 1:] = 1.0
    U *= inv_d[:, None]
    BU = P_EF_T @ U
    del U
    B_scaled = np.stack([up(BU[:, c]) for c in range(n_g + 1)], axis=1)
    C_t = (C_t - B_scaled[:, :n_g].T) * free_F
    r_y = d + C_E @ (g_E * inv_d)
    T_inv = T_inv if n_g else np.zeros((0, 0))
    rhs = -g_R + B_scaled[:, n_g] + C_t.T @ (T_inv @ r_y)
    # diag(S) on the agents: P_ii - sum_j P_ij^2 / d_j (squares held only here)
    if p_cell is not None:
        sums = p_cell * BU[:, n_g + 1]
    else:
        squares = sp.csr_matrix((P_EF.data ** 2, P_EF.indices, P_EF.indptr), shape=P_EF.shape)
        sums = squares.T @ inv_d
        del squares
    del BU
    diag = np.r_[s["P_FF_diag"][:nF], 0.0] - sums
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

    def start(x):                          # the warm start: the current point
        v0 = np.zeros(nF + 1)
        v0[:nF] = x[F]
        v0 *= free_F
        return v0

    return dict(M=M, rhs=rhs, minv=np.where(free_F, 1.0 / np.where(free_F, diag, 1.0), 0.0),
                start=start, recover=recover)


def _schur_cg(op: dict, x: np.ndarray, rtol: float, g_size: float, deadline: float,
              progress):
    """PCG on ``M z_R = rhs`` of :func:`_schur_operator` from the current
    point ``x`` (warm start), preconditioned by ``diag(M)`` (a hub's entry estimated from its
    members' entries): ``(z, y_general)``.
    Stops when ``max |rhs - M z_R|`` (the projected gradient of the full
    system) is below ``rtol`` times the largest of 1, the linear term
    (``g_size``), ``rhs`` and ``M z_R``, or stops falling."""
    M, rhs, minv, v = op["M"], op["rhs"], op["minv"], op["start"](x)
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
