"""The direct path of the native solver: one active set's equality-constrained QP
by regularised factorisations (Schur complements on ``qp.eliminable``, a sparse
LU otherwise) and iterative refinement to rounding.

Used by :func:`evalcert.solvers.backends.native.solve` on designs whose first
factorisation costs less than ``native.DIRECT_FLOPS``, and by the primal
active-set method of :mod:`~evalcert.solvers.backends.native_primal`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from evalcert.solvers.certificates import QP

__all__: list[str] = []


class _SchurBase:
    """The part of the Schur complement that depends on ``P`` only.

    With variables split into ``E = qp.eliminable`` (``P[E, E]`` diagonal,
    ``d > 0``) and the rest ``F``, eliminating ``x_E`` from the regularised
    KKT system leaves ``S_FF = P_FF + delta I - P_FE d^-1 P_EF`` on ``x_F``
    (for the clipped-linear fit: a K x K matrix, however many items there
    are). It is computed once per solve and shared by every active set.
    ``delta_d`` is the regularisation of the rows (see :func:`_regularisation`).
    """

    def __init__(self, qp: QP, delta: float, delta_d: float):
        E = np.asarray(qp.eliminable)
        F = np.setdiff1d(np.arange(qp.n), E)
        P = qp.P.tocsc()
        self.n, self.E, self.F, self.delta, self.delta_d = qp.n, E, F, delta, delta_d
        self.d = P.diagonal()[E] + delta
        P_F = P[F]
        self.P_FE = P_F[:, E].tocsr()
        self.P_FE_scaled = self.P_FE.multiply(1.0 / self.d).tocsr()
        self.S_FF = (P_F[:, F] + delta * sp.identity(len(F))
                     - self.P_FE_scaled @ self.P_FE.T).tocsr()


class _ReducedFactor:
    """Factorisation of the regularised KKT matrix on ``(x_F, y_active)``.

    The matrix is ``G = [[S_FF, A_F' - P_FE d^-1 A_E'], [., -delta I - A_E d^-1 A_E']]``.
    Active rows that touch exactly one eliminated variable, not shared with
    another such row (the all-cells box rows ``b_j - c``), have a diagonal
    corner block; they are eliminated too, leaving a K + few square matrix
    that is factorised densely (or by a sparse LU above 1500 rows).
    """

    def __init__(self, base: _SchurBase, A_act: sp.csr_matrix):
        self.base = base
        m = A_act.shape[0]
        nF = len(base.F)
        A_F = A_act[:, base.F]
        A_E = A_act[:, base.E].tocsr()
        cross = (A_F.T - base.P_FE_scaled @ A_E.T).tocsr()
        corner = (-base.delta_d * sp.identity(m) - A_E.multiply(1.0 / base.d) @ A_E.T).tocsr()
        self.B = sp.vstack([base.P_FE, A_E]).tocsr()  # [P_FE; A_E]
        per_row = np.diff(A_E.indptr)
        single = np.flatnonzero(per_row == 1)
        var = A_E.indices[A_E.indptr[single]]
        Y = single[np.bincount(var, minlength=len(base.E))[var] == 1]
        G = sp.bmat([[base.S_FF, cross], [cross.T, corner]], format="csr")
        self.Z = np.r_[np.arange(nF), nF + np.setdiff1d(np.arange(m), Y)]
        self.Y = nF + Y
        self.c = corner.diagonal()[Y]
        G_Z = G[self.Z]
        self.G_ZY = G_Z[:, self.Y].tocsr()
        reduced = G_Z[:, self.Z] - self.G_ZY.multiply(1.0 / self.c) @ self.G_ZY.T
        self.dense = reduced.shape[0] <= 1500
        self.lu = sla.lu_factor(reduced.toarray()) if self.dense else \
            spla.splu(reduced.tocsc(), permc_spec="COLAMD")

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        b = self.base
        n, E, F = b.n, b.E, b.F
        r_E = rhs[E]
        r_G = np.r_[rhs[F], rhs[n:]] - self.B @ (r_E / b.d)
        r_Y = r_G[self.Y]
        r_Z = r_G[self.Z] - self.G_ZY @ (r_Y / self.c)
        z = sla.lu_solve(self.lu, r_Z) if self.dense else self.lu.solve(r_Z)
        sol = np.empty(len(r_G))
        sol[self.Z] = z
        sol[self.Y] = (r_Y - self.G_ZY.T @ z) / self.c
        out = np.empty(len(rhs))
        out[F], out[n:] = sol[:len(F)], sol[len(F):]
        out[E] = (r_E - self.B.T @ sol) / b.d
        return out


def _regularisation(qp: QP) -> tuple[float, float]:
    """``(delta, delta_d)``: 1e-9 of the scale of ``P`` on the variables and
    1e-9 of the scale of ``A P^-1 A'`` on the rows.

    A single ``delta`` relative to ``P`` on both blocks made the row block of
    a QP with large weights (``P ~ 1e6``, so ``A P^-1 A' ~ 1e-6``) mostly
    regularisation: iterative refinement then crept (contraction ~0.9999)
    and stopped short, leaving active rows off their bounds by 0.2.

    Examples
    --------
    >>> qp = QP(P=sp.diags([2e6, 4e6], format="csc"), q=np.zeros(2),
    ...         A=sp.csc_matrix(np.array([[1.0, -1.0]])), l=np.zeros(1), u=np.ones(1))
    >>> _regularisation(qp)
    (0.004, 2.5e-16)
    """
    p = float(np.abs(qp.P.diagonal()).max()) if qp.n else 0.0
    p = p if p > 0 else 1.0
    a = float(np.abs(qp.A.data).max()) if qp.A.nnz else 1.0
    return 1e-9 * p, 1e-9 * a * a / p


def _kkt_solve(qp: QP, active: np.ndarray, rhs_bounds: np.ndarray, x: np.ndarray,
               y_act: np.ndarray, cache: dict) -> tuple[np.ndarray, np.ndarray, bool]:
    """Solve ``[P A'; A 0][x; y] = [-q; b]`` on the active rows: ``(x, y, converged)``.

    The regularised matrix (``+delta`` on ``P``, ``-delta_d`` on the rows,
    :func:`_regularisation`) is factorised once, by Schur complements when
    ``qp.eliminable`` names a diagonal block of ``P`` and by a sparse LU
    otherwise, and the exact system is then solved by iterative refinement
    until both blocks of the residual are at rounding level of their own
    scale (``converged``). ``cache`` maps an active set to its
    factorisation (plus the shared Schur base); it is valid only while ``P``
    and ``A`` stay the same (refits change ``q`` and the bounds only).
    """
    key = np.packbits(active).tobytes()
    if key in cache:
        A_act, factor = cache[key]
    else:
        A_act = qp.A[active].tocsr()
        n, m = qp.n, A_act.shape[0]
        delta, delta_d = _regularisation(qp)
        if qp.eliminable is not None:
            base = cache.get("schur")
            if base is None or (base.delta, base.delta_d) != (delta, delta_d):
                base = cache["schur"] = _SchurBase(qp, delta, delta_d)
            factor = _ReducedFactor(base, A_act)
        else:
            K_reg = sp.bmat([[qp.P + delta * sp.identity(n), A_act.T],
                             [A_act, -delta_d * sp.identity(m)]], format="csc")
            factor = spla.splu(K_reg, permc_spec="COLAMD")
        stale = [k for k in cache if isinstance(k, bytes)]
        if len(stale) >= 8:  # refits revisit few active sets; bound the memory
            for old in stale:
                del cache[old]
        cache[key] = (A_act, factor)
    n = qp.n
    rhs = np.r_[-qp.q, rhs_bounds]
    z = np.r_[x, y_act]
    if "abs_P" not in cache:
        cache["abs_P"] = abs(qp.P)
    bound_scale = max(1.0, float(np.abs(rhs_bounds).max(initial=0.0)))
    abs_A = abs(A_act)
    converged = False
    for _ in range(30):  # iterative refinement on the exact (unregularised) system
        resid = rhs - np.r_[qp.P @ z[:n] + A_act.T @ z[n:], A_act @ z[:n]]
        # converged: each block's residual at rounding level of the sizes of its
        # terms (a blockwise Oettli-Prager backward error; the rows' floor is
        # the scale of the bounds, as a solution at 0 has terms of size 0)
        az = np.abs(z)
        size_x = np.abs(rhs[:n]) + cache["abs_P"] @ az[:n] + abs_A.T @ az[n:]
        size_y = np.abs(rhs[n:]) + abs_A @ az[:n]
        converged = float(np.abs(resid[:n]).max(initial=0.0)) <= \
            1e-13 * float(size_x.max(initial=0.0)) and \
            float(np.abs(resid[n:]).max(initial=0.0)) <= \
            1e-13 * max(float(size_y.max(initial=0.0)), 1e-3 * bound_scale)
        if converged:
            break
        z = z + factor.solve(resid)
    return z[:n], z[n:], converged
