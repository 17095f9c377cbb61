"""evalcert's own QP solver: a primal-dual active-set method (no CVXPY, no OSQP).

For ``min 1/2 x'Px + q'x  s.t.  l <= Ax <= u`` it guesses which rows sit on a
bound, solves the equality-constrained QP of that guess exactly (one sparse
KKT factorisation), and updates the guess from the multipliers and the
violations (Hintermueller, Ito & Kunisch, SIAM J. Optim. 13, 2002: the
semismooth Newton method on ``y = max(0, y + c(Ax - u)) + min(0, y + c(Ax - l))``).
On the clipped-linear problem the Hessian on ``(theta, b)`` is an M-matrix
and few box constraints bind, so it stops in a handful of iterations with an
answer exact to rounding. When the QP names a diagonal block of ``P``
(``QP.eliminable``: the item difficulties of Eq. 7) the KKT systems are
reduced by Schur complements to about K x K, so 10^5 items cost little more
than 10^3. The KKT systems are regularised (quasi-definite,
``delta = 1e-9`` relative) and refined iteratively, which copes with
variables that no active row pins (an unused auxiliary) and with redundant
active rows. It stops with :class:`~evalcert.errors.SolverError` if the
active set cycles or the budget runs out, never with a guess.
"""

from __future__ import annotations

import sys
import time
from typing import Callable

import numpy as np
import scipy.sparse as sp
import scipy.linalg as sla
import scipy.sparse.linalg as spla

from evalcert.errors import InputError
from evalcert.solvers.backends.base import RawSolution, SolveSettings, solver_options
from evalcert.solvers.certificates import QP

__all__ = ["solve"]

NAME = "native"


class _SchurBase:
    """The part of the Schur complement that depends on ``P`` only.

    With variables split into ``E = qp.eliminable`` (``P[E, E]`` diagonal,
    ``d > 0``) and the rest ``F``, eliminating ``x_E`` from the regularised
    KKT system leaves ``S_FF = P_FF + delta I - P_FE d^-1 P_EF`` on ``x_F``
    (for the clipped-linear fit: a K x K matrix, however many items there
    are). It is computed once per solve and shared by every active set.
    """

    def __init__(self, qp: QP, delta: float):
        E = np.asarray(qp.eliminable)
        F = np.setdiff1d(np.arange(qp.n), E)
        P = qp.P.tocsc()
        self.n, self.E, self.F, self.delta = qp.n, E, F, delta
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
        corner = (-base.delta * sp.identity(m) - A_E.multiply(1.0 / base.d) @ A_E.T).tocsr()
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


def _kkt_solve(qp: QP, active: np.ndarray, rhs_bounds: np.ndarray, x: np.ndarray,
               y_act: np.ndarray, cache: dict) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``[P A'; A 0][x; y] = [-q; b]`` on the active rows.

    The regularised matrix (``+delta`` on ``P``, ``-delta`` on the rows) is
    factorised once, by Schur complements when ``qp.eliminable`` names a
    diagonal block of ``P`` and by a sparse LU otherwise, and the exact system
    is then solved by iterative refinement. ``cache`` maps an active set to its
    factorisation (plus the shared Schur base); it is valid only while ``P``
    and ``A`` stay the same (refits change ``q`` and the bounds only).
    """
    key = np.packbits(active).tobytes()
    if key in cache:
        A_act, factor = cache[key]
    else:
        A_act = qp.A[active].tocsr()
        n, m = qp.n, A_act.shape[0]
        delta = 1e-9 * max(1.0, float(np.abs(qp.P.diagonal()).max()) if n else 1.0)
        if qp.eliminable is not None:
            base = cache.get("schur")
            if base is None or base.delta != delta:
                base = cache["schur"] = _SchurBase(qp, delta)
            factor = _ReducedFactor(base, A_act)
        else:
            K_reg = sp.bmat([[qp.P + delta * sp.identity(n), A_act.T],
                             [A_act, -delta * sp.identity(m)]], format="csc")
            factor = spla.splu(K_reg, permc_spec="COLAMD")
        stale = [k for k in cache if isinstance(k, bytes)]
        if len(stale) >= 8:  # refits revisit few active sets; bound the memory
            for old in stale:
                del cache[old]
        cache[key] = (A_act, factor)
    n = qp.n
    rhs = np.r_[-qp.q, rhs_bounds]
    z = np.r_[x, y_act]
    norm = max(1.0, float(np.abs(rhs).max()))
    for _ in range(30):  # iterative refinement on the exact (unregularised) system
        resid = rhs - np.r_[qp.P @ z[:n] + A_act.T @ z[n:], A_act @ z[:n]]
        if float(np.abs(resid).max()) <= 1e-13 * norm:
            break
        z = z + factor.solve(resid)
    return z[:n], z[n:]


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


def _direct_cost(qp: QP) -> float:
    """Flops of the direct path's first factorisation: forming the Schur
    complement (``sum_j d_j^2`` over eliminated columns of degree ``d_j``) and
    factorising the ``n_F``-square remainder (``n_F^3 / 3``). Without an
    eliminable block the whole KKT matrix goes to a sparse LU, counted as
    ``n^3 / 3`` above 5000 variables (free below: such QPs factorise fast)."""
    if qp.eliminable is None:
        return float(qp.n) ** 3 / 3.0 if qp.n > 5000 else 0.0
    P = qp.P.tocsc()
    deg = np.diff(P.indptr)[np.asarray(qp.eliminable)] - 1.0
    n_F = qp.n - len(qp.eliminable)
    return float(np.sum(deg * deg)) + n_F ** 3 / 3.0


#: Above this many flops (one factorisation per active-set step, ~0.1 s each
#: here) the native solver takes the PCG path, which measured faster at every
#: size above it; ``solver_options={"path": "direct" | "pcg"}`` forces one.
DIRECT_FLOPS = 5e7
#: A rough rate of sparse factorisation on one shared core (for refusing early).
FLOPS_PER_SECOND = 1e9


def _active_set(qp: QP, x: np.ndarray, y: np.ndarray, c: float, max_iter: int,
                complete, kkt, deadline: float):
    """The primal-dual active-set iteration from ``(x, y)`` with constant ``c``.

    ``kkt(active, bounds, x, y_active, tight) -> (x, y_active, exact)`` solves
    one equality-constrained QP; an inexact solve that reproduces its active
    set is repeated with ``tight=True`` before the method stops."""
    x, y = x.copy(), y.copy()
    eq = qp.l == qp.u
    fin_u, fin_l = np.isfinite(qp.u), np.isfinite(qp.l)
    seen: set[bytes] = set()
    previous = b""
    status, ok, iterations = "max_iter_reached", False, 0
    tight = False
    for iterations in range(1, max_iter + 1):
        Ax = qp.A @ x
        upper = ~eq & fin_u & (y + c * (Ax - qp.u) > 0)
        lower = ~eq & fin_l & ~upper & (y + c * (Ax - qp.l) < 0)
        key = np.packbits(np.r_[upper, lower]).tobytes()
        if iterations > 1 and key == previous:
            if tight:
                status, ok = "solved", True
                break
            tight = True        # an inexact (loose) solve settled the set: solve it exactly
        elif key in seen:
            if tight:
                status = "cycling"
                break
            tight = True        # inexact solves can revisit a set near the optimum: go exact
            seen.clear()
        seen.add(key)
        previous = key
        active = eq | upper | lower
        bounds = np.where(upper, qp.u, qp.l)[active]
        try:
            x, y_act, exact = kkt(active, bounds, x, y[active], tight)
        except _TimeUp:
            status = "time_limit"
            break
        tight = tight or exact
        y = np.zeros(qp.m)
        y[active] = y_act
        if complete is not None:
            x = complete(x, y)
        if time.perf_counter() > deadline:
            status = "time_limit"
            break
    return x, y, status, ok, iterations


def solve(qp: QP, settings: SolveSettings = SolveSettings(), x0: np.ndarray | None = None,
          y0: np.ndarray | None = None,
          complete: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
          cache: dict | None = None) -> RawSolution:
    """Solve ``qp`` by the primal-dual active-set method.

    Each active set's equality-constrained QP is solved on one of two paths,
    picked by the cost of a factorisation (``solver_options={"path": ...}``
    forces one; ``RawSolution.path`` says which ran):

    * ``direct``: Schur complements and sparse/dense factorisations, refined
      to rounding; used while the first factorisation costs less than
      ``DIRECT_FLOPS``;
    * ``pcg``: projected preconditioned conjugate gradients
      (:func:`_pcg_kkt_solve`), one sparse product with ``P`` per step, so
      time and memory grow with the observed cells; for active sets it
      cannot handle (many general rows) it falls back to ``direct``.

    Parameters
    ----------
    qp : QP
    settings : SolveSettings
        ``max_iter`` (via :func:`solver_options`) bounds the active-set
        updates; ``time_limit`` is checked between PCG steps and active-set
        updates (status ``"time_limit"`` when it expires); ``verbose`` shows
        a progress bar past 3 s.
    x0, y0 : ndarray, optional
        Starting point; a good one (the previous fit) makes a refit take one
        or two factorisations.
    complete : callable, optional
        ``complete(x, y) -> x`` applied after every KKT solve, to place
        variables the active rows leave free (auxiliaries of a max/min) at
        values that do not switch rows on spuriously.
    cache : dict, optional
        Factorisations kept by the caller across solves that share ``P`` and
        ``A`` (refits on new scores): a warm refit whose active set does not
        change costs one back-substitution.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))  # min x^2/2 - 2x on [-1, 1]
    >>> sol = solve(qp)
    >>> sol.ok, np.round(sol.x, 8).tolist(), np.round(sol.y, 8).tolist()
    (True, [1.0], [1.0])
    """
    from tqdm.auto import tqdm

    opts = solver_options(NAME, settings)
    start = time.perf_counter()
    deadline = start + float(settings.time_limit)
    cache = {} if cache is None else cache
    if "direct_cost" not in cache:
        cache["direct_cost"] = _direct_cost(qp)
    path = opts.get("path") or ("pcg" if cache["direct_cost"] > DIRECT_FLOPS else "direct")
    if path not in ("direct", "pcg"):
        raise InputError(f"solver_options path must be 'direct' or 'pcg', got {path!r}")
    x_start = np.zeros(qp.n) if x0 is None else np.asarray(x0, dtype=float)
    y_start = np.zeros(qp.m) if y0 is None else np.asarray(y0, dtype=float)
    progress = tqdm(desc=f"native ({path})", unit="step", delay=3.0, file=sys.stderr,
                    disable=not settings.verbose, leave=False)
    used = set()

    def kkt(active, bounds, x, y_act, tight):
        """Solve one active set: ``(x, y_active, exact)``. The PCG path solves
        loosely (1e-9) while the active set still changes, to rounding once
        it has settled (or starts to repeat)."""
        if path == "pcg":
            try:
                out = _pcg_kkt_solve(qp, active, bounds, x, cache, deadline, progress,
                                     rtol=1e-12 if tight else 1e-9)
                used.add("pcg")
                return out + (tight,)
            except _Unsupported:
                pass
        if "schur" not in cache and cache["direct_cost"] / FLOPS_PER_SECOND > \
                deadline - time.perf_counter():
            raise _TimeUp     # the first factorisation alone would overrun the limit
        used.add("direct")
        return _kkt_solve(qp, active, bounds, x, y_act, cache) + (True,)

    # The update constant c trades multipliers (scale of P) against violations
    # (scale of the bounds). c = 1 cycles on the observed-cells box; 100 times
    # the largest diagonal entry of P solved every case seen (saturated sparse
    # designs included). If the active set still cycles, the method restarts
    # once with c 100 times larger, then gives up with status "cycling".
    scale = max(1.0, float(qp.P.diagonal().max()) if qp.n else 1.0)
    try:
        for c in (100.0 * scale, 1e4 * scale):
            x, y, status, ok, iterations = _active_set(qp, x_start, y_start, c,
                                                       int(opts["max_iter"]), complete, kkt,
                                                       deadline)
            if status != "cycling":
                break
    finally:
        progress.close()
    elapsed = time.perf_counter() - start
    return RawSolution(x=x, y=y, status=status, ok=ok, iterations=iterations,
                       setup_time=0.0, solve_time=elapsed, path="+".join(sorted(used)))
