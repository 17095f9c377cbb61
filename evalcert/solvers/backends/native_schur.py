"""The Schur path of the native solver's PCG (:mod:`~evalcert.solvers.backends.native_pcg`):
one active set's reduced KKT system with the eliminable (item) block
eliminated exactly, and preconditioned conjugate gradients on it.

``P`` is split once per QP (:func:`_split`); each active set then gets its
operator (:func:`_schur_operator`, a few passes over item-length vectors and
one scatter pass over the cells) and its CG run (:func:`_schur_cg`, one
gather and one scatter pass over the cells per step, on vectors of size K).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from evalcert.solvers.certificates import QP

__all__: list[str] = []


class _TimeUp(Exception):
    """The time limit expired inside a KKT solve."""


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
        d_E = (cache["P_diag"] if "P_diag" in cache else P.diagonal())[E]
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
        P_FF = _rows_in(P, F, E_range, is_E, pos_F, nF)
        pos_E = np.full(n, -1, dtype=np.int64)
        pos_E[E] = np.arange(len(E))
        # the one value of P's cells (the off-diagonal entries of P_EF), if any
        cells = P_EF.data[P_EF.indices != nF]
        p_cell = float(cells[0]) if len(cells) and np.all(cells == cells[0]) else None
        del cells
        if np.all(d_E > 0):
            # E as a slice when it is a range (the items): views, not gathers
            out = dict(E=E_range if E_range is not None else E, F=F, nF=nF, d_E=d_E,
                       inv_d_E=1.0 / d_E, is_E=is_E, pos_F=pos_F,
                       pos_E=pos_E, P_EF=P_EF, P_FF=P_FF, P_FF_diag=P_FF.diagonal(),
                       cell_value=p_cell)
    cache["split"] = out
    return out


def _rows_in(P: sp.csc_matrix, F: np.ndarray, E_range: slice | None, is_E: np.ndarray,
             pos_F: np.ndarray, nF: int) -> sp.csr_matrix:
    """``P_FF`` (padded to ``nF + 1``): the entries of ``P``'s columns of ``F``
    whose row is in ``F`` too, renumbered into ``F``. When ``E`` is a range
    the columns of ``F`` are two ranges, read as views of ``P``'s arrays (no
    copy of the ~10^7 entries of the agents' columns); one pass over them and
    temporaries of one byte an entry. CSR, as ``P_FF`` is symmetric."""
    if E_range is not None:
        blocks = [(0, E_range.start), (E_range.stop, P.shape[1])]
    else:
        cols = P[:, F]
        P, blocks = cols, [(0, nF)]
    data, rows, counts = [], [], []
    for lo, hi in blocks:
        s, e = int(P.indptr[lo]), int(P.indptr[hi])
        keep = ~is_E[P.indices[s:e]]
        ptr = P.indptr[lo:hi + 1] - s
        full = np.flatnonzero(ptr[1:] > ptr[:-1])          # reduceat: nonempty columns only
        count = np.zeros(hi - lo, dtype=np.int64)
        if len(full):
            count[full] = np.add.reduceat(keep, ptr[full], dtype=np.int64)
        data.append(P.data[s:e][keep])
        rows.append(pos_F[P.indices[s:e][keep]])
        counts.append(count)
    indptr = np.zeros(nF + 2, dtype=np.int64)
    np.cumsum(np.concatenate(counts), out=indptr[1:nF + 1])
    indptr[nF + 1] = indptr[nF]                    # the dummy column: empty
    return sp.csc_matrix((np.concatenate(data), np.concatenate(rows), indptr),
                         shape=(nF + 1, nF + 1)).T


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
    inv_d = s["inv_d_E"] * free_E
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
    U = np.empty((len(d_E), n_g + 1 + (p_cell is not None)))
    np.multiply(C_E.T, inv_d[:, None], out=U[:, :n_g])
    np.multiply(g_E, inv_d, out=U[:, n_g])
    if p_cell is not None:
        U[:, n_g + 1] = inv_d
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
