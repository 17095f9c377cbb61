"""More QP solvers through qpsolvers: PIQP, ProxQP, DAQP, HiGHS and CVXOPT.

`qpsolvers <https://github.com/qpsolvers/qpsolvers>`_ gives one call for a
dozen QP solvers. evalcert hands it the standard-form QP
``l <= Ax <= u`` split into equalities ``A_eq x = b`` (rows with ``l == u``)
and one-sided inequalities ``G x <= h`` (``a x <= u`` and ``-a x <= -l`` for
every finite side), and maps the returned multipliers back to one ``y`` per
row in evalcert's sign convention::

    y[eq] = y_eq,    y[upper rows] += z_upper,    y[lower rows] -= z_lower

so that ``Px + q + A'y = 0`` at a KKT point. Whether the answer is accepted is
decided by evalcert's certificate (:func:`~evalcert.solvers.certificates.qp_certificate`)
on that ``(x, y)``, never by the solver's status.

Each solver gets the accuracy tier through its own parameters (:data:`OPTIONS`,
one table), 100x tighter than the certificate demands, like the other
backends (:func:`~evalcert.solvers.backends.base.solver_options`). DAQP is a
dense solver: a problem whose dense matrices would exceed :data:`DENSE_LIMIT`
entries is refused (status ``too large for a dense solver``) instead of
allocating them.

quadprog (0.1.14, installable here) is not offered: it crashes the Python
process (segmentation fault, not an exception) on a 60-variable clipped-linear
QP with ``lam = 1e-6`` (cond(P) ~ 1e6), and on any singular ``P`` (the
all-cells box has auxiliaries without curvature).

Example
-------
>>> import numpy as np, scipy.sparse as sp
>>> from evalcert.solvers.certificates import QP, qp_certificate
>>> qp = QP(sp.identity(2, format="csc"), np.array([-1.0, -1.0]),
...         sp.csc_matrix(np.array([[1.0, 1.0]])), np.array([-np.inf]), np.array([1.0]))
>>> raw = solve(qp, "piqp")
>>> raw.ok, np.round(raw.x, 6).tolist(), bool(qp_certificate(qp, raw.x, raw.y).passed)
(True, [0.5, 0.5], True)
"""

from __future__ import annotations

import time
import warnings
from typing import Callable

import numpy as np
import scipy.sparse as sp

from evalcert.solvers.backends.base import RawSolution, SolveSettings
from evalcert.quiet import native_stdout, solver_log_enabled
from evalcert.solvers.certificates import QP

__all__ = ["SOLVERS", "OPTIONS", "DENSE_ONLY", "DENSE_LIMIT", "options", "solve"]

#: qpsolvers' solver name -> the Python module that provides the solver.
SOLVERS = {"piqp": "piqp", "proxqp": "proxsuite", "daqp": "daqp", "highs": "highspy",
           "cvxopt": "cvxopt"}

#: Solvers that only take dense matrices.
DENSE_ONLY = frozenset({"daqp"})

#: Largest ``n (n + m)`` handed to a dense solver (32 MB of float64 per matrix).
DENSE_LIMIT = 4_000_000

#: Tolerance tier ``eps`` (100x tighter than the certificate) and the settings
#: -> each solver's own parameters. HiGHS accepts feasibility tolerances down
#: to 1e-10 only.
OPTIONS: dict[str, Callable[[float, SolveSettings], dict]] = {
    "piqp": lambda eps, s: {"eps_abs": eps, "eps_rel": eps, "eps_duality_gap_abs": eps,
                            "eps_duality_gap_rel": eps, "check_duality_gap": True,
                            "max_iter": 500},
    "proxqp": lambda eps, s: {"eps_abs": eps, "eps_rel": eps, "check_duality_gap": True,
                              "eps_duality_gap_abs": eps, "eps_duality_gap_rel": eps,
                              "max_iter": 100_000},
    "daqp": lambda eps, s: {"primal_tol": eps, "dual_tol": eps, "iter_limit": 100_000},
    "highs": lambda eps, s: {"primal_feasibility_tolerance": max(eps, 1e-10),
                             "dual_feasibility_tolerance": max(eps, 1e-10),
                             "time_limit": float(s.time_limit)},
    "cvxopt": lambda eps, s: {"abstol": eps, "reltol": eps, "feastol": eps, "maxiters": 500},
}


def options(solver: str, settings: SolveSettings) -> dict:
    """The parameters ``solver`` is given for ``settings`` (plus ``settings.options``).

    Examples
    --------
    >>> from evalcert.solvers.certificates import Tolerance
    >>> settings = SolveSettings(tolerance=Tolerance(1e-6, 1e-6), options={"max_iter": 50})
    >>> opts = options("piqp", settings)
    >>> bool(abs(opts["eps_abs"] - 1e-8) < 1e-20), opts["max_iter"]
    (True, 50)
    >>> options("highs", settings)["primal_feasibility_tolerance"]  # HiGHS stops at 1e-10
    1e-08
    """
    eps = min(settings.tolerance.abs_tol, settings.tolerance.rel_tol) * 1e-2
    opts = OPTIONS[solver](eps, settings)
    opts.update(settings.options)
    return opts


def _split(qp: QP) -> tuple[sp.csr_matrix, np.ndarray, sp.csr_matrix, np.ndarray,
                            np.ndarray, np.ndarray, np.ndarray]:
    """``(G, h, A_eq, b_eq)`` and the row indices of equalities, upper and lower sides."""
    A = qp.A.tocsr().astype(float)  # integer entries: qpsolvers 4.3 hands them to DAQP as is
    eq = np.flatnonzero(qp.l == qp.u)
    up = np.flatnonzero((qp.l != qp.u) & np.isfinite(qp.u))
    lo = np.flatnonzero((qp.l != qp.u) & np.isfinite(qp.l))
    G = sp.vstack([A[up], -A[lo]]).tocsc()
    h = np.r_[qp.u[up], -qp.l[lo]]
    return G, h, A[eq].tocsc(), qp.l[eq], eq, up, lo


def solve(qp: QP, solver: str, settings: SolveSettings = SolveSettings(),
          x0: np.ndarray | None = None, y0: np.ndarray | None = None,
          cache: dict | None = None) -> RawSolution:
    """Solve ``qp`` with ``solver`` (a key of :data:`SOLVERS`) through qpsolvers.

    ``x0`` is passed as the primal initial guess (solvers that take none
    ignore it); ``y0`` and ``cache`` are accepted for the common backend
    signature and unused: qpsolvers sets every problem up afresh.

    Examples
    --------
    >>> import importlib.util
    >>> from evalcert.solvers.certificates import QP, qp_certificate
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))  # min x^2/2 - 2x on [-1, 1]
    >>> installed = [s for s, mod in SOLVERS.items() if importlib.util.find_spec(mod)]
    >>> all(qp_certificate(qp, sol.x, sol.y).passed
    ...     for sol in (solve(qp, s) for s in installed[:1]))  # the first installed solver
    True
    """
    import qpsolvers

    start = time.perf_counter()
    G, h, A_eq, b_eq, eq, up, lo = _split(qp)
    P = qp.P.tocsc().astype(float)
    if solver in DENSE_ONLY:
        size = qp.n * (qp.n + G.shape[0] + A_eq.shape[0])
        if size > DENSE_LIMIT:
            return RawSolution(None, None, f"too large for a dense solver ({size:.3g} entries "
                               f"> {DENSE_LIMIT:.3g})", False, -1, 0.0, 0.0)
        P, G, A_eq = P.toarray(), G.toarray(), A_eq.toarray()
    problem = qpsolvers.Problem(P, qp.q, G if G.shape[0] else None, h if G.shape[0] else None,
                                A_eq if A_eq.shape[0] else None, b_eq if A_eq.shape[0] else None)
    setup = time.perf_counter() - start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with native_stdout():  # highspy's banner is printed from C++ on stdout
                sol = qpsolvers.solve_problem(problem, solver=solver, initvals=x0,
                                              verbose=solver_log_enabled(),
                                              **options(solver, settings))
        except Exception as exc:  # noqa: BLE001 - a solver's crash is its failure, reported
            return RawSolution(None, None, f"error: {type(exc).__name__}: {str(exc)[:160]}",
                               False, -1, setup, time.perf_counter() - start - setup)
    solve_time = time.perf_counter() - start - setup
    x = None if sol.x is None or not np.all(np.isfinite(sol.x)) else np.asarray(sol.x, float)
    y = None
    if x is not None:
        y = np.zeros(qp.m)
        if len(eq) and sol.y is not None:
            y[eq] = sol.y
        if G.shape[0] and sol.z is not None:
            z = np.asarray(sol.z, dtype=float)
            np.add.at(y, up, z[:len(up)])
            np.add.at(y, lo, -z[len(up):])
        if not np.all(np.isfinite(y)):
            y = None
    found = bool(sol.found) and x is not None and y is not None
    return RawSolution(x=x, y=y, status="solved" if found else "not solved", ok=found,
                       iterations=_iterations(sol), setup_time=setup, solve_time=solve_time)


def _iterations(sol) -> int:
    """The iteration count, where qpsolvers passes the solver's info through."""
    info = getattr(sol, "extras", {}) or {}
    for key in ("iterations", "iter", "iter_count", "simplex_iteration_count"):
        value = info.get(key)
        if isinstance(value, (int, np.integer)):
            return int(value)
    inner = info.get("info")
    value = getattr(inner, "iter", None)
    return int(value) if isinstance(value, (int, np.integer)) else -1
