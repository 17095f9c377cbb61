"""The Gini projection onto the additive manifold (Prop. 4.1, App. F) with a Huber-dual certificate.

Paper 000, Eq. 5-6 (= Eq. 17 with the rectangle constraints of Eq. 18)::

    minimise   sum_ij s_ij^2                    over all K x J cells
    s.t.       |s_ij| <= 1,   s_ij = t_ij on Omega,   D s = 0

Scaling. App. F.3-F.4 writes the objective as ``F(s) = sum phi(s_ij)`` with
``phi(s) = 1/2 s^2 + iota_[-1,1](s)``, half of Eq. 5. evalcert certifies in
that scaling: with ``L = F(s) - <lambda, P s - t> + <mu, D s>`` and
``u = P' lambda - D' mu``, the dual (D) is::

    max_{lambda, mu}  <lambda, t> - sum_ij phi*(u_ij),   phi* = Huber (Eq. 25)

and the KKT condition ``u_ij in d phi(s_ij)`` is ``s = clip(u, -1, 1)``. The
objective reported as ``objective`` is Eq. 5 itself, ``2 F(s)``; the
multipliers of Eq. 5 are ``2 lambda`` and ``2 mu``.

Three forms, one result type:

* ``method="rectangles"``: the QP in ``s`` with the ``(K-1)(J-1)`` basis
  rectangles of Lemma F.1 as rows (:mod:`evalcert.solvers.rectangles`), for
  small matrices; the solver's own multipliers are checked with
  :func:`~evalcert.solvers.certificates.qp_certificate`.
* ``method="additive"``: ``s = theta - b`` (gauge ``sum_j b_j = 0``), with
  ``sum_ij (theta_i - b_j)^2`` in O(K + J) terms and the box on all cells as
  ``max theta - min b <= 1``, ``max b - min theta <= 1``.
* ``penalised=True``: the end of App. F.4, ``sum_Omega 1/2 (t - (theta_i -
  b_j))^2 + box + lam (||theta||^2 + ||b||^2)``, which is one half of Eq. 7
  with ridge ``2 lam``: solved by :class:`~evalcert.solvers.ClippedLinear`.

The certificate (:mod:`evalcert.solvers.gini_dual`) evaluates (D) at the
least-curl multipliers (curl-free on connected designs) and needs nothing
from the solver. If the design is connected the
constraints alone fix ``s`` (the only additive completion of ``t``), so the
objective matters only for the offsets between components of a disconnected
design.

Example
-------
>>> import numpy as np
>>> from evalcert.data import ScoreMatrix
>>> t = np.subtract.outer([0.6, 0.1, -0.3], [0.0, -0.4, 0.2])
>>> t[0, 1] = np.nan
>>> res = gini_projection(ScoreMatrix.from_array(t))
>>> round(float(res.s[0, 1]), 6), res.certificate.passed, res.certificate.curl_free
(1.0, True, True)
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from evalcert.data import ScoreMatrix
from evalcert.errors import InfeasibleError, InputError, SolverError
from evalcert.results import ResultMixin, Stopwatch, Timings, format_table
from evalcert.solvers.backends import CVXPY_SOLVERS, check_backend
from evalcert.solvers.backends.base import SolveSettings
from evalcert.solvers.backends.cvxpy_ import _run, solve_qp
from evalcert.solvers.certificates import QP, Certificate, Tolerance, qp_certificate
from evalcert.solvers.clipped_linear import ClippedLinear, ClippedLinearResult
from evalcert.solvers.gini_dual import GiniCertificate, curl_free_multipliers, huber_certificate
from evalcert.solvers.rectangles import (additive_completion, rectangle_operator,
                                         reference_parameters)

__all__ = ["GiniProjectionResult", "gini_projection", "rectangle_qp", "MAX_RECTANGLE_CELLS"]

Method = Literal["additive", "rectangles"]

#: Largest K * J for ``method="rectangles"`` (K*J variables, ~2 K*J rows).
MAX_RECTANGLE_CELLS = 40_000

#: Cells between components this close to the box are tried as active when polishing.
POLISH_DELTA = 1e-3

_PENALISED_HINT = ("use the penalised form gini_projection(S, penalised=True, lam=...) "
                   "(CLI: evalcert gini --penalised; App. F.4, = Eq. 7), which fits noisy scores")


@dataclasses.dataclass(frozen=True)
class GiniProjectionResult(ResultMixin):
    """One Gini projection (Prop. 4.1) or its penalised form (App. F.4).

    Attributes
    ----------
    status : str
        The solver's own status string.
    objective : float
        Eq. 5, ``sum_ij s_ij^2`` (hard forms); the App. F.4 penalised
        objective (penalised form).
    solver : str
    method : {"rectangles", "additive", "penalised"}
    iterations : int
    timings : Timings
    certificate : GiniCertificate or None
        Huber-dual certificate at the least-curl multipliers (hard forms).
    solver_certificate : Certificate or None
        KKT check of the solver's own multipliers on :func:`rectangle_qp`
        (``method="rectangles"``).
    s : ndarray, shape (K, J)
        The projection on every cell.
    theta, b : ndarray
        ``s = theta - b``, gauge ``sum_j b_j = 0`` (from Lemma F.1, Eq. 21,
        for the hard forms).
    lambda_ : ndarray or None
        Multipliers of ``P_Omega s = t`` (App. F.4 scaling, order of ``S.cells()``).
    mu : ndarray or None
        Multipliers of the basis rectangles, shape (K-1, J-1).
    on_box : ndarray of bool, shape (K, J)
        Cells with ``|s_ij| = 1`` (to tolerance).
    agents, items : tuple of str
    lam : float or None
        Ridge weight of the penalised form.
    clipped_linear : ClippedLinearResult or None
        The Eq. 7 fit behind the penalised form (ridge ``2 lam``).
    solver_deviation : float or None
        Hard forms: ``max |s_solver - s|`` between the solver's point and the
        polished ``s`` returned (see :func:`_polish`; 0 if polishing did not
        pass the certificate and the solver's point is returned as it is).

    Examples
    --------
    >>> t = np.subtract.outer([0.6, 0.1, -0.3], [0.0, -0.4, 0.2])
    >>> t[0, 1] = np.nan  # the additive completion, 1.0, lies on the box
    >>> res = gini_projection(ScoreMatrix.from_array(t))
    >>> res.method, res.s.shape, int(res.on_box.sum()), res.certificate.passed
    ('additive', (3, 3), 1, True)
    >>> bool(np.allclose(res.theta[:, None] - res.b[None, :], res.s))
    True
    """

    status: str
    objective: float
    solver: str
    method: str
    iterations: int
    timings: Timings
    certificate: GiniCertificate | None
    solver_certificate: Certificate | None
    s: np.ndarray
    theta: np.ndarray
    b: np.ndarray
    lambda_: np.ndarray | None
    mu: np.ndarray | None
    on_box: np.ndarray
    agents: tuple[str, ...]
    items: tuple[str, ...]
    lam: float | None = None
    clipped_linear: ClippedLinearResult | None = None
    solver_deviation: float | None = None

    def to_frame(self, what: str = "agents") -> "pd.DataFrame":
        """The estimates as a table: ``"agents"`` (agent, theta) or ``"items"`` (item, b)."""
        import pandas as pd

        if what == "items":
            return pd.DataFrame({"item": list(self.items), "b": self.b})
        return pd.DataFrame({"agent": list(self.agents), "theta": self.theta})

    def summary(self) -> str:
        K, J = self.s.shape
        head = (f"Gini projection (Prop. 4.1), {self.method} form: {K} agents x {J} items, "
                f"{int(self.on_box.sum())} cell(s) on the box")
        if self.lam is not None:
            head += f", lam={self.lam:g} (Eq. 7 with ridge {2 * self.lam:g})"
        lines = [head, f"solver {self.solver}: status {self.status}, {self.iterations} iterations, "
                       f"objective {self.objective:.10g}", f"timings: {self.timings.summary()}"]
        if self.solver_deviation is not None:
            lines.append(f"solver point within {self.solver_deviation:.3g} of the polished s")
        for cert in (self.certificate, self.solver_certificate):
            if cert is not None:
                lines.append(cert.summary())
        if self.clipped_linear is not None:
            lines.append(self.clipped_linear.certificate.summary())
        order = np.argsort(-self.theta, kind="stable")[:40]
        ranking = [(r + 1, self.agents[k], self.theta[k]) for r, k in enumerate(order)]
        lines += ["", "ranking by theta:", format_table(ranking, ["rank", "agent", "theta"])]
        return "\n".join(lines)


def rectangle_qp(S: ScoreMatrix, reference: tuple[int, int] = (0, 0)) -> QP:
    """Prop. 4.1 in the variables ``x = vec(s)`` as a standard-form QP (App. F.4 scaling).

    ``minimise 1/2 x'x`` subject to the rows ``P_Omega x = t`` (one per observed
    cell), ``D x = 0`` (the basis rectangles of Lemma F.1) and ``-1 <= x <= 1``.
    In the sign convention of :mod:`evalcert.solvers.certificates`, the row
    multipliers ``y = [y_Omega; y_D; y_box]`` give ``lambda = -y_Omega``,
    ``mu = y_D`` and ``u = s + y_box``.

    Examples
    --------
    >>> t = np.subtract.outer([0.6, 0.1, -0.3], [0.0, -0.4, 0.2])
    >>> t[0, 1] = np.nan
    >>> qp = rectangle_qp(ScoreMatrix.from_array(t))
    >>> qp.n, qp.m  # 9 cells; 8 observed + 4 rectangle + 9 box rows
    (9, 21)
    >>> from evalcert.solvers.backends import solve_qp as solve_by_name
    >>> sol = solve_by_name("native", qp)
    >>> sol.ok, round(float(sol.x[1]), 6)
    (True, 1.0)
    """
    K, J = S.shape
    n = K * J
    idx = np.flatnonzero(S.observed.ravel())
    P_obs = sp.csr_matrix((np.ones(len(idx)), (np.arange(len(idx)), idx)), shape=(len(idx), n))
    D = rectangle_operator(K, J, reference)
    A = sp.vstack([P_obs, D, sp.identity(n, format="csr")]).tocsc()
    t = S.values.ravel()[idx]
    m_d = D.shape[0]
    return QP(P=sp.identity(n, format="csc"), q=np.zeros(n), A=A,
              l=np.concatenate([t, np.zeros(m_d), -np.ones(n)]),
              u=np.concatenate([t, np.zeros(m_d), np.ones(n)]))


def _require_feasible(S: ScoreMatrix, tolerance: Tolerance) -> np.ndarray:
    """Raise :class:`InfeasibleError` unless some additive ``s`` in the box matches ``t`` on Omega.

    Additivity is tested exactly along a spanning forest
    (:func:`~evalcert.solvers.rectangles.additive_completion`). The box then
    bounds the differences of the per-component offsets ``x``:
    ``-1 - s0_ij <= x_k(i) - x_l(j) <= 1 - s0_ij``, a system of difference
    constraints that is feasible iff its graph has no negative cycle.

    Returns the additive completion ``s0`` (offset 0 in every component).
    """
    theta, b, residual, _ = additive_completion(S)
    tol = tolerance.abs_tol + tolerance.rel_tol
    worst = np.nanmax(np.abs(residual))
    if worst > tol:
        i, j = np.unravel_index(np.nanargmax(np.abs(residual)), S.shape)
        n_bad = int(np.sum(np.abs(residual) > tol))
        raise InfeasibleError(
            f"the observed scores are not additive, so no s satisfies s = t on Omega and the "
            f"rectangle constraints D s = 0 (Prop. 4.1): cell ({S.agents[i]}, {S.items[j]}) "
            f"deviates by {residual[i, j]:+.3g} from the additive fit along a spanning tree "
            f"({n_bad} cell(s) beyond tolerance {tol:g}); {_PENALISED_HINT}")
    s0 = theta[:, None] - b[None, :]
    conn = S.connectivity()
    m = conn.n_components
    hi = np.full((m, m), -np.inf)
    lo = np.full((m, m), np.inf)
    for k in range(m):
        rows_k = s0[conn.agent_component == k]
        np.maximum.at(hi[k], conn.item_component, rows_k.max(axis=0))
        np.minimum.at(lo[k], conn.item_component, rows_k.min(axis=0))
    weight = np.minimum(np.where(np.eye(m, dtype=bool), 0.0, np.inf), 1.0 + lo)
    weight = np.minimum(weight, (1.0 - hi).T)
    for k in range(m):
        weight = np.minimum(weight, weight[:, k, None] + weight[None, k, :])
    if np.min(np.diag(weight)) < -tol:
        inside = np.equal.outer(conn.agent_component, conn.item_component)
        i, j = np.unravel_index(np.argmax(np.where(inside, np.abs(s0), 0.0)), S.shape)
        where = (f"the additive completion within a component has s = {s0[i, j]:+.4g} at "
                 f"({S.agents[i]}, {S.items[j]})" if abs(s0[i, j]) > 1.0 + tol else
                 f"no choice of offsets between the {m} components of the design keeps every "
                 "cell in [-1, 1]")
        raise InfeasibleError(f"the observed scores are additive but leave the box: {where}; "
                              f"{_PENALISED_HINT}")
    return s0


def _polish(S: ScoreMatrix, s: np.ndarray, s0: np.ndarray) -> np.ndarray:
    """The exact optimum on the active set of the solver's ``s`` (as OSQP polishes).

    Every feasible point is ``s0_ij + x_k(i) - x_l(j)``, one offset per
    component of the design (Lemma F.1 with :func:`_require_feasible`), so a
    connected design has ``s0`` as its only feasible point. Otherwise the
    cells between components that ``s`` puts within ``POLISH_DELTA`` of the
    box are held at +-1 and the least-squares offsets solved from the KKT
    system. Interior-point solvers approach a weakly active box slowly
    (the error in ``s`` goes like the square root of the gap), which this removes.
    """
    conn = S.connectivity()
    if conn.is_connected:
        return s0
    K, J = S.shape
    m, n = conn.n_components, K * J
    rc, cc = np.meshgrid(conn.agent_component, conn.item_component, indexing="ij")
    M = sp.csr_matrix((np.repeat([1.0, -1.0], n), (np.tile(np.arange(n), 2),
                                                    np.r_[rc.ravel(), cc.ravel()])), shape=(n, m))
    near = (rc != cc).ravel() & (np.abs(s.ravel()) >= 1.0 - POLISH_DELTA)
    active = M[near].toarray()
    kkt = np.block([[(M.T @ M).toarray(), active.T], [active, np.zeros((len(active),) * 2)]])
    rhs = np.r_[-(M.T @ s0.ravel()), np.sign(s.ravel()[near]) - s0.ravel()[near]]
    offsets = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:m]
    return s0 + (M @ offsets).reshape(K, J)


def _certify(S: ScoreMatrix, s: np.ndarray, reference: tuple[int, int],
             settings: SolveSettings) -> tuple[GiniCertificate, np.ndarray]:
    tol = settings.tolerance
    on_box = np.abs(s) >= 1.0 - (tol.abs_tol + tol.rel_tol)
    lambda_, mu = curl_free_multipliers(S, s, on_box, reference, settings)
    return huber_certificate(S, s, lambda_, mu, tol, reference), on_box


def _check_status(status: str, ok: bool, solver: str) -> None:
    if ok:
        return
    if "infeasible" in status:
        raise InfeasibleError(f"solver {solver!r} reports {status!r} for the Gini projection "
                              f"although the feasibility check passed (the data sit at the "
                              f"tolerance edge); {_PENALISED_HINT}")
    raise SolverError(f"solver {solver!r} did not solve the Gini projection: status {status!r}; "
                      "try solver='clarabel' (the most accurate) or loosen the tolerance",
                      solver=solver, status=status)


def _solve_additive(S: ScoreMatrix, solver: str, settings: SolveSettings, sw: Stopwatch
                    ) -> tuple[np.ndarray, str, int]:
    """Prop. 4.1 in the additive parameterisation ``s = theta - b``, gauge ``sum_j b_j = 0``.

    With the gauge, ``sum_ij (theta_i - b_j)^2 = J ||theta||^2 + K ||b||^2``, and the
    box on all K x J cells is ``max theta - min b <= 1``, ``max b - min theta <= 1``.
    ``s = t`` is imposed on the cells of a spanning forest only: once
    :func:`_require_feasible` has found ``t`` additive, the other observed
    cells follow, and leaving out these redundant rows keeps the solvers from
    failing on data that are additive only to rounding (the certificate
    checks ``s = t`` on every observed cell).
    """
    K, J = S.shape
    with sw("build"):
        rows, cols = additive_completion(S)[3].T
        t = S.values[rows, cols]
        theta, b = cp.Variable(K), cp.Variable(J)
        problem = cp.Problem(
            cp.Minimize(0.5 * (J * cp.sum_squares(theta) + K * cp.sum_squares(b))),
            [theta[rows] - b[cols] == t, cp.sum(b) == 0,
             cp.max(theta) - cp.min(b) <= 1, cp.max(b) - cp.min(theta) <= 1])
    status, iterations, setup, solve_time = _run(problem, solver, settings, warm=False)
    sw.seconds["compile"] = setup
    sw.seconds["solve"] = solve_time
    _check_status(status, status == cp.OPTIMAL and theta.value is not None, solver)
    return np.subtract.outer(theta.value, b.value), status, iterations


def _penalised(S: ScoreMatrix, lam: float, solver: str, tolerance: Tolerance,
               time_limit: float, solver_options: dict | None) -> GiniProjectionResult:
    """The penalised form of App. F.4: one half of Eq. 7 with ridge ``2 lam``."""
    if not (isinstance(lam, (int, float)) and np.isfinite(lam) and lam >= 0):
        raise InputError(f"lam must be a finite number >= 0, got {lam!r}")
    model = ClippedLinear(lam=2.0 * lam, box="all", solver=solver, tolerance=tolerance,
                          time_limit=time_limit, solver_options=solver_options).fit(S)
    fit = model.result_
    s = model.predict()
    return GiniProjectionResult(
        status=fit.status, objective=0.5 * fit.objective, solver=solver, method="penalised",
        iterations=fit.iterations, timings=fit.timings, certificate=None,
        solver_certificate=None, s=s, theta=fit.theta, b=fit.b, lambda_=None, mu=None,
        on_box=np.abs(s) >= 1.0 - (tolerance.abs_tol + tolerance.rel_tol),
        agents=S.agents, items=S.items, lam=float(lam), clipped_linear=fit)


def gini_projection(S: ScoreMatrix, method: Method = "additive", *, penalised: bool = False,
                    lam: float = 5e-7, solver: str = "clarabel",
                    tolerance: Tolerance | None = None, reference: tuple[int, int] = (0, 0),
                    time_limit: float = 600.0,
                    solver_options: dict | None = None) -> GiniProjectionResult:
    """Project observed scores onto the additive manifold under Gini entropy (Prop. 4.1).

    Solves Eq. 5-6 (``min sum s_ij^2`` over all cells, ``|s_ij| <= 1``,
    ``s = t`` on Omega, ``D s = 0``) and certifies the answer with the Huber
    dual (D) of App. F.4 at least-curl multipliers (see the module docstring
    for the scaling). With ``penalised=True`` it fits the noisy-data form
    at the end of App. F.4 instead.

    Parameters
    ----------
    S : ScoreMatrix
        Observed scores ``t`` (NaN = unobserved).
    method : {"additive", "rectangles"}
        ``additive``: ``s = theta - b`` (any size). ``rectangles``: the QP in
        ``s`` with the basis rectangles of Lemma F.1 (``K * J <=
        MAX_RECTANGLE_CELLS``), whose solver multipliers are also certified.
    penalised : bool
        Fit ``sum_Omega 1/2 (t - (theta_i - b_j))^2 + box + lam (||theta||^2
        + ||b||^2)``, i.e. Eq. 7 / 2 with ridge ``2 lam``, via
        :class:`~evalcert.solvers.ClippedLinear` (which imposes ``sum b = 0``;
        the paper's form leaves the gauge to the ridge, ``sum theta + sum b =
        0``, so ``s`` differs by O(lam)). ``method`` is ignored.
    lam : float
        Ridge weight of the penalised form (the default is ``ClippedLinear``'s
        ``1e-6`` halved: the same problem).
    solver : str
        A CVXPY backend (``clarabel``, the default and most accurate, ``osqp``,
        ``scs``, ``ecos``); the penalised form takes any ``ClippedLinear`` backend.
    tolerance : Tolerance, optional
        What the certificates must meet (default abs and rel 1e-6); also the
        tolerance of the additivity check.
    reference : (int, int)
        Reference row and column of the rectangle basis ``D``.
    time_limit : float
    solver_options : dict, optional
        Passed to the solver as they are.

    Returns
    -------
    GiniProjectionResult

    Raises
    ------
    InfeasibleError
        Hard form: the observed scores are not additive, or every additive
        completion leaves [-1, 1]. The message points to ``penalised=True``.
    SolverError, CertificateError
        The solver failed, or its answer did not pass evalcert's certificate.

    Examples
    --------
    >>> t = np.subtract.outer([0.6, 0.1, -0.3], [0.0, -0.4, 0.2])
    >>> t[0, 1] = np.nan
    >>> res = gini_projection(ScoreMatrix.from_array(t), "rectangles")
    >>> round(float(res.s[0, 1]), 6), res.certificate.passed, res.solver_certificate.passed
    (1.0, True, True)
    >>> t[0, 2] += 0.1  # no longer additive: only the penalised form fits it
    >>> res = gini_projection(ScoreMatrix.from_array(t), penalised=True)
    >>> res.method, res.lam, res.clipped_linear.certificate.passed
    ('penalised', 5e-07, True)
    """
    tolerance = tolerance or Tolerance()
    check_backend(solver)
    if penalised:
        return _penalised(S, lam, solver, tolerance, time_limit, solver_options)
    K, J = S.shape
    if solver not in CVXPY_SOLVERS:
        raise InputError(f"the hard Gini projection is solved through CVXPY; choose solver from "
                         f"{sorted(CVXPY_SOLVERS)} (got {solver!r})")
    if method not in ("additive", "rectangles"):
        raise InputError(f"method must be 'additive' or 'rectangles', got {method!r}")
    if method == "rectangles" and K * J > MAX_RECTANGLE_CELLS:
        raise InputError(f"method='rectangles' builds {K * J} variables and "
                         f"{(K - 1) * (J - 1)} rectangle rows; above {MAX_RECTANGLE_CELLS} cells "
                         "use method='additive' (same optimum)")
    if not (0 <= reference[0] < K and 0 <= reference[1] < J):
        raise InputError(f"reference {reference} is outside the {K} x {J} matrix")
    s0 = _require_feasible(S, tolerance)
    sw = Stopwatch()
    settings = SolveSettings(tolerance=tolerance, time_limit=time_limit,
                             options=dict(solver_options or {}))
    solver_cert = None
    if method == "rectangles":
        with sw("build"):
            qp = rectangle_qp(S, reference)
        raw = solve_qp(qp, solver, settings)
        sw.seconds["compile"], sw.seconds["solve"] = raw.setup_time, raw.solve_time
        _check_status(raw.status, raw.ok, solver)
        status, iterations, s = raw.status, raw.iterations, raw.x.reshape(K, J)
        with sw("certify"):
            y_box = raw.y[qp.m - K * J:].reshape(K, J)
            cells = np.argwhere(y_box != 0.0)
            binding = [{"agent": S.agents[i], "item": S.items[j], "bound": float(np.sign(s[i, j])),
                        "multiplier": float(y_box[i, j])} for i, j in cells
                       if abs(abs(s[i, j]) - 1.0) <= tolerance.abs_tol + tolerance.rel_tol]
            solver_cert = qp_certificate(qp, raw.x, raw.y, tolerance, binding)
        solver_cert.raise_if_failed(solver=solver, status=status)
    else:
        s, status, iterations = _solve_additive(S, solver, settings, sw)
    with sw("certify"):
        polished = _polish(S, s, s0)
        cert, on_box = _certify(S, polished, reference, settings)
        if not cert.passed:
            polished = s
            cert, on_box = _certify(S, s, reference, settings)
    cert.raise_if_failed(solver=solver, status=status)
    deviation = float(np.max(np.abs(polished - s)))
    s = polished
    theta, b = reference_parameters(s, reference)
    shift = b.mean()
    return GiniProjectionResult(
        status=status, objective=2.0 * cert.primal_value, solver=solver, method=method,
        iterations=iterations, timings=sw.timings(), certificate=cert,
        solver_certificate=solver_cert, s=s, theta=theta - shift, b=b - shift,
        lambda_=cert.lambda_, mu=cert.mu, on_box=on_box, agents=S.agents, items=S.items,
        solver_deviation=deviation)
