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
1e-9 of the scale of ``P`` on the variables and of ``A P^-1 A'`` on the rows)
and refined iteratively to rounding, which copes with variables that no
active row pins (an unused auxiliary) and with redundant active rows. The
iteration stops at the first exact KKT point; if the active set truly
cycles (degenerate points, where the semismooth Newton method has no
convergence guarantee) the solve is finished by the primal active-set
method with Bland's rule (:mod:`~evalcert.solvers.backends.native_primal`),
and ``RawSolution.path`` says so. A solve that cannot finish (budget, time,
a KKT system not solvable to rounding) returns ``ok=False`` with the
status, which :class:`~evalcert.solvers.ClippedLinear` raises as
:class:`~evalcert.errors.SolverError`: never a guess. The PCG path lives in
:mod:`~evalcert.solvers.backends.native_pcg` (its Schur-complement operator
and CG in :mod:`~evalcert.solvers.backends.native_schur`) and the direct one
in :mod:`~evalcert.solvers.backends.native_kkt`.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from evalcert.errors import InputError
from evalcert.progress import DELAY, progress_bar
from evalcert.solvers.backends.base import RawSolution, SolveSettings, solver_options
from evalcert.solvers.backends.native_kkt import _kkt_solve
from evalcert.solvers.backends.native_pcg import _pcg_kkt_solve, _Unsupported
from evalcert.solvers.backends.native_schur import _TimeUp
from evalcert.solvers.backends.native_primal import primal_active_set, violation
from evalcert.solvers.certificates import QP

__all__ = ["solve"]

NAME = "native"


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


#: Above this many flops (one factorisation per active-set step) the native
#: solver takes the PCG path; ``solver_options={"path": "direct" | "pcg"}``
#: forces one. Measured with the item-eliminated PCG (whole fits, CPU): PCG
#: 4x faster at 300 x 3000 with 10^5 cells (1.2e7 flops), 5x at 500 x 5000
#: (4.4e7), 2.7x at 100 x 1000 with 5 x 10^4 cells (2.9e6); at 5e7 the
#: direct path made the 10^5-cell fit of ``bench_scale.py --quick`` cost 3x
#: per cell what the larger ones did. Small designs keep the direct path.
DIRECT_FLOPS = 5e6
#: A rough rate of sparse factorisation on one shared core (for refusing early).
FLOPS_PER_SECOND = 1e9
#: An active set that changes at most 1/SETTLED of its rows is solved to
#: rounding at once (see :func:`_active_set`).
SETTLED = 1000
#: The PCG path's tolerance while the active set still changes (it only has
#: to tell which rows bind; the last solve is to rounding). At 1e-7 instead of
#: 1e-9 the designs of ``bench_scale.py`` (10^5 to 2 x 10^7 cells) take the
#: same active-set steps and 10-20% fewer CG steps; at 1e-6 some took one
#: more active-set step.
LOOSE_RTOL = 1e-7


def _is_kkt_point(qp: QP, x: np.ndarray, y: np.ndarray, upper: np.ndarray, lower: np.ndarray,
                  feas_tol: float, Ax: np.ndarray) -> bool:
    """Whether ``(x, y)`` from an exact KKT solve of the active set ``upper | lower``
    is optimal: stationarity and complementarity hold by construction, so
    what is left is primal feasibility (to ``feas_tol``) and the multipliers'
    signs (``y >= 0`` at upper bounds, ``<= 0`` at lower ones, to rounding of
    the gradient's scale); ``Ax`` is ``qp.A @ x``."""
    if violation(qp, x, Ax) > feas_tol:
        return False
    grad_tol = 1e-12 * max(1.0, float(np.abs(qp.q).max(initial=0.0)),
                           float(np.abs(y).max(initial=0.0)))
    return not (np.any(y[upper] < -grad_tol) or np.any(y[lower] > grad_tol))


def _active_set(qp: QP, x: np.ndarray, y: np.ndarray, c: float, max_iter: int,
                complete, kkt, deadline: float):
    """The primal-dual active-set iteration from ``(x, y)`` with constant ``c``.

    ``kkt(active, bounds, x, y_active, tight) -> (x, y_active, exact)`` solves
    one equality-constrained QP; an inexact solve that reproduces its active
    set is repeated with ``tight=True`` before the method stops. A set that
    differs from the last one in at most ``1/SETTLED`` of its rows is solved
    tightly at once (on large designs the last loose step changes a few dozen
    of ~10^5 rows, and this spares the repeat), without counting as the
    switch to tight solves that turns a revisited set into a cycle.

    It stops (``"solved"``) as soon as an exact solve satisfies the KKT
    conditions: every row within rounding of its bounds and every multiplier
    of the sign of its bound. Testing this, and not only whether the next
    active set repeats, matters at degenerate points: a row that sits on its
    bound with multiplier 0 leaves the next set (the update's test is strict),
    and when the rows left free a variable of zero curvature (an auxiliary)
    the KKT solution depends on the start, so a set seen before is not
    necessarily a cycle. A true cycle returns status ``"cycling"``."""
    x, y = x.copy(), y.copy()
    eq = qp.l == qp.u
    fin_u, fin_l = np.isfinite(qp.u), np.isfinite(qp.l)
    can_up, can_lo = ~eq & fin_u, ~eq & fin_l      # rows that may sit on their upper/lower bound
    feas_tol = 1e-12 * max(1.0, float(np.abs(qp.u[fin_u]).max(initial=0.0)),
                           float(np.abs(qp.l[fin_l]).max(initial=0.0)))
    seen: set[bytes] = set()
    previous = b""
    status, ok, iterations = "max_iter_reached", False, 0
    tight = exact = False
    last_upper = last_lower = None
    settled = False
    Ax = qp.A @ x                   # kept for the current x: one product per step
    work = np.empty(qp.m)           # y + c (Ax - u), then y + c (Ax - l), in place
    for iterations in range(1, max_iter + 1):
        np.subtract(Ax, qp.u, out=work)
        work *= c
        work += y
        upper = work > 0
        upper &= can_up
        np.subtract(Ax, qp.l, out=work)
        work *= c
        work += y
        lower = work < 0
        lower &= can_lo
        lower &= ~upper
        key = np.packbits(np.r_[upper, lower]).tobytes()
        if iterations > 1 and key == previous:
            if tight or (settled and exact):    # an exact solve reproduced its set
                status, ok = ("solved", True) if exact else ("kkt_not_converged", False)
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
        rows = np.flatnonzero(active)
        settled = not tight and last_upper is not None and SETTLED * (
            np.count_nonzero(upper != last_upper) + np.count_nonzero(lower != last_lower)) \
            <= len(rows)
        last_upper, last_lower = upper, lower
        bounds = np.where(upper[rows], qp.u[rows], qp.l[rows])
        try:
            x, y_act, exact = kkt(active, bounds, x, y[rows], tight or settled)
        except _TimeUp:
            status = "time_limit"
            break
        tight = tight or (exact and not settled)
        y = np.zeros(qp.m)
        y[rows] = y_act
        if complete is not None:
            x = complete(x, y)
        Ax = qp.A @ x
        if exact and _is_kkt_point(qp, x, y, upper, lower, feas_tol, Ax):
            status, ok = "solved", True
            break
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
    * ``pcg``: preconditioned conjugate gradients (:func:`_pcg_kkt_solve`)
      on the Schur complement of ``qp.eliminable`` (K x K for the
      clipped-linear fit; projected PCG on the full system without one),
      one pass over the cells per step, so time and memory grow with the
      observed cells; for active sets it cannot handle (many general rows)
      it falls back to ``direct``.

    If the primal-dual iteration cycles, the primal active-set method
    (:func:`~evalcert.solvers.backends.native_primal.primal_active_set`)
    finishes the solve and ``path`` ends in ``", then primal active set
    after cycling"``. Statuses: ``"solved"``, ``"time_limit"``,
    ``"max_iter_reached"``, ``"kkt_not_converged"``, ``"infeasible"``.

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
    progress = progress_bar(settings.verbose, desc=f"native ({path})", unit="step", delay=DELAY)
    used = set()

    def kkt(active, bounds, x, y_act, tight):
        """Solve one active set: ``(x, y_active, exact)``. The PCG path solves
        loosely (``LOOSE_RTOL``) while the active set still changes, to rounding once
        it has settled (or starts to repeat)."""
        if path == "pcg":
            try:
                out = _pcg_kkt_solve(qp, active, bounds, x, cache, deadline, progress,
                                     rtol=1e-12 if tight else LOOSE_RTOL)
                used.add("pcg")
                return out + (tight,)
            except _Unsupported:
                pass
        if "schur" not in cache and cache["direct_cost"] / FLOPS_PER_SECOND > \
                deadline - time.perf_counter():
            raise _TimeUp     # the first factorisation alone would overrun the limit
        used.add("direct")
        return _kkt_solve(qp, active, bounds, x, y_act, cache)

    # The update constant c trades multipliers (scale of P) against violations
    # (scale of the bounds). c = 1 cycles on the observed-cells box; 100 times
    # the largest diagonal entry of P solved every case seen but the
    # degenerate ones (a row on its bound with multiplier 0 next to a
    # variable of zero curvature, bootstrap weights on the observed-cells
    # box): there the method cycles whatever c, and the primal active-set
    # method with Bland's rule (native_primal), which cannot, finishes the
    # solve from the less infeasible of the start and the last iterate (a
    # phase-1 LP makes it feasible first if needed).
    if "P_diag" not in cache:       # kept for the PCG path's set-up too
        cache["P_diag"] = qp.P.diagonal()
    scale = max(1.0, float(cache["P_diag"].max()) if qp.n else 1.0)
    max_iter = int(opts["max_iter"])
    fallback = ""
    try:
        x, y, status, ok, iterations = _active_set(qp, x_start, y_start, 100.0 * scale,
                                                   max_iter, complete, kkt, deadline)
        if status == "cycling":
            fallback = ", then primal active set after cycling"
            begin = x_start if violation(qp, x_start) <= violation(qp, x) else x
            budget = max(max_iter, 2 * qp.m + 100)   # about two changes per row
            x, y, status, ok, more = primal_active_set(qp, begin, kkt, budget, deadline)
            iterations += more
    except _TimeUp:
        status, ok = "time_limit", False
    finally:
        progress.close()
        cache.pop("pcg_last", None)    # the last active set's PCG operator: per solve only
    elapsed = time.perf_counter() - start
    return RawSolution(x=x, y=y, status=status, ok=ok, iterations=iterations,
                       setup_time=0.0, solve_time=elapsed,
                       path="+".join(sorted(used)) + fallback)
