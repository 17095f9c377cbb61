"""The Huber-conjugate dual (D) of the Gini projection and its certificate (App. F.3-F.4).

In the App. F.4 scaling ``F(s) = sum phi(s_ij)``, ``phi(s) = 1/2 s^2 +
iota_[-1,1](s)`` (half of Eq. 5), the Lagrangian of Prop. 4.1 is
``L = F(s) - <lambda, P s - t> + <mu, D s>``; with ``u = P' lambda - D' mu``
the dual is::

    max_{lambda, mu}  <lambda, t> - sum_ij phi*(u_ij),   phi* = Huber (Eq. 24-25)

and ``u_ij in d phi(s_ij)`` is ``s = clip(u, -1, 1)``. A primal point and a
dual point with equal values prove each other optimal (weak duality), so
:func:`huber_certificate` needs nothing from the solver.

Multipliers are not unique once a cell sits on the box: any ``u_ij`` of its
sign with ``|u_ij| >= 1`` is optimal there. :func:`curl_free_multipliers`
selects the ``u*`` that App. F.4 describes, additive (``D u* = 0``): ``u* = s``
on a connected design, else the dual-optimal ``u`` of least curl (two LPs
over the box cells); ``lambda`` is the least-norm solution of
``P' lambda - D' mu = u*`` and ``mu`` follows.

App. F.4 claims such a curl-free ``u*`` always exists. That holds on every
connected design (``u* = s``) and whenever the box does not pin the offsets
between components of a disconnected one, but not in general: with
``t = [[0, ., 1, .], [., -1, ., 0.75]]`` the box binds at the unobserved
cell (0, 3), every dual optimum has ``u_03 = 1.25`` while an additive ``u``
would need 1.0, and the least curl is 0.25 (the "projection onto ker D"
argument ignores that ``phi*`` is linear, not quadratic, beyond the box).
Strong duality still holds, so ``curl_free`` is reported, not required.

Example
-------
>>> import numpy as np
>>> from evalcert.data import ScoreMatrix
>>> S = ScoreMatrix.from_array(np.array([[0.5, np.nan], [0.1, -0.2]]))
>>> s = np.array([[0.5, 0.2], [0.1, -0.2]])
>>> lam, mu = curl_free_multipliers(S, s, np.zeros((2, 2), dtype=bool))
>>> cert = huber_certificate(S, s, lam, mu)
>>> cert.passed, cert.curl_free, round(cert.dual_value, 12) == round(cert.primal_value, 12)
(True, True, True)
"""

from __future__ import annotations

import dataclasses

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

from evalcert.data import ScoreMatrix
from evalcert.errors import CertificateError, InputError, SolverError
from evalcert.results import ResultMixin, format_table
from evalcert.solvers.backends.base import SolveSettings
from evalcert.solvers.backends.cvxpy_ import _run
from evalcert.solvers.certificates import Tolerance
from evalcert.solvers.rectangles import curl, curl_adjoint, rectangle_operator

__all__ = ["huber_conjugate", "GiniCertificate", "huber_certificate", "curl_free_multipliers"]


def huber_conjugate(u: np.ndarray) -> np.ndarray:
    """``phi*(u)`` of ``phi(s) = 1/2 s^2 + iota_[-1,1](s)``: Huber with threshold 1 (Eq. 24-25).

    Examples
    --------
    >>> huber_conjugate(np.array([0.5, -2.0]))
    array([0.125, 1.5  ])
    """
    a = np.abs(u)
    return np.where(a <= 1.0, 0.5 * u ** 2, a - 0.5)


@dataclasses.dataclass(frozen=True)
class GiniCertificate(ResultMixin):
    """Optimality of ``s`` for Prop. 4.1 via the Huber dual (D), recomputed from data.

    All quantities are in the App. F.4 scaling ``F(s) = 1/2 sum s_ij^2``.

    Attributes
    ----------
    primal_value : float
        ``F(s)``.
    dual_value : float
        (D) at ``(lambda, mu)``: ``<lambda, t> - sum phi*(u_ij)``.
    duality_gap, relative_gap : float
        ``primal_value - dual_value`` and ``|gap| / max(1, F(s))``.
    observation_residual : float
        ``||P_Omega s - t||_inf``.
    curl_residual : float
        ``||D s||_inf`` (rectangle constraints).
    box_violation : float
        ``max(|s_ij| - 1, 0)``.
    stationarity_residual : float
        ``||s - clip(u)||_inf``: zero iff ``u_ij in d phi(s_ij)`` (``u = s`` off
        the box, same sign and ``|u| >= 1`` on it).
    u_curl : float
        ``||D u||_inf``: the multipliers' ``u*`` is additive (App. F.4) when 0.
    curl_free : bool
        ``u_curl`` within tolerance (always on a connected design; see the
        module docstring for when no curl-free dual optimum exists).
    passed : bool
        Primal feasibility, stationarity and the duality gap all within
        ``tolerance`` (weak duality then proves ``s`` optimal).
    tolerance : Tolerance
    reference : (int, int)
        Reference row and column of the rectangle basis ``D``.
    s : ndarray, shape (K, J)
    lambda_ : ndarray, shape (n_observed,)
        Multipliers of ``P_Omega s = t`` in the order of ``ScoreMatrix.cells()``.
    mu : ndarray, shape (K-1, J-1)
        Multipliers of ``D s = 0``, one per basis rectangle.

    Examples
    --------
    >>> S = ScoreMatrix.from_array(np.array([[0.5, np.nan], [0.1, -0.2]]))
    >>> s = np.array([[0.5, 0.2], [0.1, -0.2]])  # the additive completion
    >>> lam, mu = curl_free_multipliers(S, s, np.zeros((2, 2), dtype=bool))
    >>> cert = huber_certificate(S, s, lam, mu)
    >>> cert.passed, cert.reference, round(cert.primal_value, 6)
    (True, (0, 0), 0.17)
    >>> cert.verify(S).passed  # recomputed from the data and the stored s, lambda, mu
    True
    """

    primal_value: float
    dual_value: float
    duality_gap: float
    relative_gap: float
    observation_residual: float
    curl_residual: float
    box_violation: float
    stationarity_residual: float
    u_curl: float
    curl_free: bool
    passed: bool
    tolerance: Tolerance
    reference: tuple[int, int]
    s: np.ndarray = dataclasses.field(repr=False)
    lambda_: np.ndarray = dataclasses.field(repr=False)
    mu: np.ndarray = dataclasses.field(repr=False)

    def summary(self) -> str:
        rows = [("primal F(s) = 1/2 sum s^2", self.primal_value),
                ("Huber dual (D)", self.dual_value),
                ("duality gap (rel)", self.relative_gap),
                ("||P s - t||", self.observation_residual),
                ("||D s|| (curl of s)", self.curl_residual),
                ("box violation", self.box_violation),
                ("||s - clip(u)|| (stationarity)", self.stationarity_residual),
                ("||D u*|| (curl of u*)", self.u_curl)]
        verdict = "PASSED" if self.passed else "FAILED"
        curl_text = "curl-free" if self.curl_free else "NOT curl-free"
        return (f"Huber-dual certificate {verdict}, u* {curl_text} (tolerance "
                f"{self.tolerance.summary()})\n" + format_table(rows, ["quantity", "value"]))

    def raise_if_failed(self, solver: str = "", status: str = "") -> None:
        """Raise :class:`CertificateError` naming the failing quantities."""
        if self.passed:
            return
        raise CertificateError(
            f"solver {solver!r} reported {status!r} but the Huber-dual certificate of the Gini "
            f"projection failed: ||P s - t|| {self.observation_residual:.3g}, ||D s|| "
            f"{self.curl_residual:.3g}, box violation {self.box_violation:.3g}, stationarity "
            f"{self.stationarity_residual:.3g}, relative gap {self.relative_gap:.3g} (tolerance "
            f"{self.tolerance.summary()}); use solver='clarabel' or tighten solver_options",
            solver=solver, status=status, certificate=self)

    def verify(self, S: ScoreMatrix, tolerance: Tolerance | None = None) -> "GiniCertificate":
        """Recompute this certificate from ``S`` and the stored ``s``, ``lambda``, ``mu``.

        Raises :class:`~evalcert.errors.CertificateError` if it fails.
        """
        if self.s.shape != S.shape or self.lambda_.shape != (S.n_observed,):
            raise InputError(f"this certificate is for a {self.s.shape} matrix with "
                             f"{len(self.lambda_)} observed cells; the data are {S.shape} with "
                             f"{S.n_observed}: it belongs to another matrix")
        out = huber_certificate(S, self.s, self.lambda_, self.mu, tolerance or self.tolerance,
                                self.reference)
        out.raise_if_failed(solver="verify", status="recomputed")
        return out


def huber_certificate(S: ScoreMatrix, s: np.ndarray, lambda_: np.ndarray, mu: np.ndarray,
                      tolerance: Tolerance = Tolerance(),
                      reference: tuple[int, int] = (0, 0)) -> GiniCertificate:
    """Evaluate the dual (D) of App. F.4 at ``(lambda, mu)`` and the KKT residuals of ``s``.

    Parameters
    ----------
    S : ScoreMatrix
        The observed scores ``t`` (NaN = not in Omega).
    s : ndarray, shape (K, J)
        Candidate projection.
    lambda_ : ndarray, shape (n_observed,)
        Multipliers of ``P_Omega s = t`` (order of ``S.cells()``).
    mu : ndarray, shape (K-1, J-1)
        Multipliers of the basis rectangles ``D s = 0``.
    tolerance : Tolerance
    reference : (int, int)
        Reference row and column of ``D``.

    Returns
    -------
    GiniCertificate

    Examples
    --------
    >>> S = ScoreMatrix.from_array(np.array([[0.5, np.nan], [0.1, -0.2]]))
    >>> s = np.array([[0.5, 0.2], [0.1, -0.2]])
    >>> lam, mu = curl_free_multipliers(S, s, np.zeros((2, 2), dtype=bool))
    >>> cert = huber_certificate(S, s, lam, mu)
    >>> cert.passed, abs(round(cert.duality_gap, 12))  # abs: the gap may round to -0.0
    (True, 0.0)
    >>> bad = huber_certificate(S, s + 0.05, lam, mu)  # misses the observed scores
    >>> bad.passed, round(bad.observation_residual, 6)
    (False, 0.05)
    """
    obs = S.observed
    t = S.values[obs]
    u = -curl_adjoint(mu, S.shape, reference)
    u[obs] += lambda_
    primal = 0.5 * float(np.sum(s ** 2))
    dual = float(lambda_ @ t - np.sum(huber_conjugate(u)))
    gap = primal - dual
    u_curl = float(np.max(np.abs(curl(u, reference)), initial=0.0))
    residuals = dict(observation_residual=float(np.max(np.abs(s[obs] - t))),
                     curl_residual=float(np.max(np.abs(curl(s, reference)), initial=0.0)),
                     box_violation=float(max(np.max(np.abs(s)) - 1.0, 0.0)),
                     stationarity_residual=float(np.max(np.abs(s - np.clip(u, -1.0, 1.0)))))
    passed = (all(tolerance.accepts(v, 1.0) for v in residuals.values())
              and tolerance.accepts(abs(gap), abs(primal)))
    return GiniCertificate(primal_value=primal, dual_value=dual, duality_gap=gap,
                           relative_gap=abs(gap) / max(1.0, abs(primal)), u_curl=u_curl,
                           curl_free=tolerance.accepts(u_curl, float(np.max(np.abs(u)))),
                           passed=bool(passed), tolerance=tolerance, reference=reference,
                           s=np.asarray(s, dtype=float), lambda_=np.asarray(lambda_, dtype=float),
                           mu=np.asarray(mu, dtype=float), **residuals)


def _solve_lp(problem: cp.Problem, settings: SolveSettings) -> float:
    status, *_ = _run(problem, "clarabel", settings, warm=False)
    if status != cp.OPTIMAL:
        raise SolverError(f"selecting the curl-free multipliers failed with status {status!r}; "
                          "the projection itself is fine: loosen the tolerance",
                          solver="clarabel", status=status)
    return float(problem.value)


def _least_curl_multipliers(S: ScoreMatrix, s: np.ndarray, on_box: np.ndarray,
                            reference: tuple[int, int], settings: SolveSettings) -> np.ndarray:
    """The dual-optimal ``u`` of least curl for a disconnected design.

    ``u = s + nu`` with ``nu`` on box cells of the sign of ``s``
    (``u in d phi(s)``) must be orthogonal to every additive matrix ``n_k``
    that vanishes on Omega (``theta = b = 1`` on component ``k``, 0
    elsewhere) for ``u`` to lie in ``im P' + im D'``. Two LPs, so that the
    solver's accuracy enters linearly: the least ``sum_k |<n_k, u>|`` (zero up
    to the accuracy of ``s``), then the least ``||D u||_1`` keeping it.
    """
    K, J = S.shape
    box = np.flatnonzero(on_box.ravel())
    if len(box) == 0:
        return s
    conn = S.connectivity()
    null = np.stack([((conn.agent_component[:, None] == k).astype(float)
                      - (conn.item_component[None, :] == k)).ravel()
                     for k in range(1, conn.n_components)])
    nu = cp.Variable(len(box))
    u = s.ravel() + sp.csr_matrix((np.ones(len(box)), (box, np.arange(len(box)))),
                                  shape=(K * J, len(box))) @ nu
    signs = [cp.multiply(np.sign(s.ravel()[box]), nu) >= 0]
    orthogonality = _solve_lp(cp.Problem(cp.Minimize(cp.norm1(null @ u)), signs), settings)
    slack = 1e-2 * settings.tolerance.abs_tol
    _solve_lp(cp.Problem(cp.Minimize(cp.norm1(rectangle_operator(K, J, reference) @ u)),
                         signs + [cp.norm1(null @ u) <= orthogonality + slack]), settings)
    return np.asarray(u.value).reshape(K, J)


def curl_free_multipliers(S: ScoreMatrix, s: np.ndarray, on_box: np.ndarray,
                          reference: tuple[int, int] = (0, 0),
                          settings: SolveSettings = SolveSettings()
                          ) -> tuple[np.ndarray, np.ndarray]:
    """``(lambda, mu)`` with ``P' lambda - D' mu = u*`` and ``lambda`` of least norm.

    ``u* = s`` on a connected design. ``D' mu`` has zero row and column sums,
    so ``lambda`` must match the row and column sums of ``u*``:
    ``B lambda = [rowsums; colsums]`` with ``B`` the unsigned incidence matrix
    of the observation graph; ``lambda = B' omega`` solves it with
    ``B B' omega = rhs`` grounded at one node per component. Then
    ``mu = (P' lambda - u*)`` off the reference row and column.

    Examples
    --------
    >>> S = ScoreMatrix.from_array(np.array([[0.5, np.nan], [0.1, -0.2]]))
    >>> s = np.array([[0.5, 0.2], [0.1, -0.2]])  # its additive completion, off the box
    >>> lam, mu = curl_free_multipliers(S, s, np.zeros((2, 2), dtype=bool))
    >>> (np.round(lam, 6) + 0.0).tolist(), (np.round(mu, 6) + 0.0).tolist()  # + 0.0: no -0.0
    ([0.7, -0.1, 0.0], [[0.2]])
    """
    K, J = S.shape
    conn = S.connectivity()
    u = s if conn.is_connected else _least_curl_multipliers(S, s, on_box, reference, settings)
    rows, cols, _ = S.cells()
    n_obs = len(rows)
    B = sp.csr_matrix((np.ones(2 * n_obs), (np.r_[rows, K + cols], np.tile(np.arange(n_obs), 2))),
                      shape=(K + J, n_obs))
    rhs = np.r_[u.sum(axis=1), u.sum(axis=0)]
    labels = np.r_[conn.agent_component, conn.item_component]
    grounded = np.zeros(K + J, dtype=bool)
    grounded[np.unique(labels, return_index=True)[1]] = True
    keep = ~grounded
    omega = np.zeros(K + J)
    if keep.any():
        lap = (B @ B.T).tocsc()[keep][:, keep]
        omega[keep] = np.atleast_1d(spsolve(lap.tocsc(), rhs[keep]))
    lambda_ = B.T @ omega
    Z = -u.copy()
    Z[rows, cols] += lambda_
    i0, j0 = reference
    mu = np.delete(np.delete(Z, i0, axis=0), j0, axis=1)
    return lambda_, mu
