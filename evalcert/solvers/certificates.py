"""Optimality certificates for convex QPs, recomputed from the problem data.

Every QP evalcert solves is written in one standard form (the OSQP form)::

    minimise    1/2 x'Px + q'x + r
    subject to  l <= Ax <= u          (rows with l == u are equalities)

with one multiplier ``y_k`` per row: ``y_k > 0`` means the upper bound of row
``k`` pushes, ``y_k < 0`` the lower bound. With ``y+ = max(y, 0)`` and
``y- = max(-y, 0)`` the KKT conditions are

* primal feasibility   ``l <= Ax <= u``
* stationarity         ``Px + q + A'y = 0``
* dual feasibility     ``y_k <= 0`` where ``u_k = +inf``, ``y_k >= 0`` where ``l_k = -inf``
* complementarity      ``y+ (u - Ax) = 0`` and ``y- (Ax - l) = 0``

and the Lagrangian dual objective is ``r - 1/2 x'Px - u'y+ + l'y-``, so that
the duality gap ``primal - dual = x'Px + q'x + u'y+ - l'y-`` vanishes exactly
at a KKT point. :func:`qp_certificate` computes all of it with numpy from
``(P, q, A, l, u)`` and a primal/dual point, never from what a solver reports.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.sparse as sp

from evalcert.errors import CertificateError
from evalcert.results import ResultMixin, format_table

__all__ = ["QP", "Tolerance", "Certificate", "qp_certificate", "DEFAULT_TOLERANCE"]


@dataclasses.dataclass(frozen=True)
class QP:
    """A convex QP in standard form (see module docstring).

    Attributes
    ----------
    P : scipy.sparse matrix, shape (n, n)
        Symmetric positive semidefinite Hessian.
    q : ndarray, shape (n,)
    A : scipy.sparse matrix, shape (m, n)
    l, u : ndarray, shape (m,)
        Row bounds; ``-inf`` / ``+inf`` for one-sided rows.
    r : float
        Constant term of the objective.
    eliminable : ndarray of int, optional
        Variables whose block of ``P`` is diagonal with a positive diagonal
        (no ``P`` entries between two of them); a solver may eliminate them
        first. A structural hint only: it never changes the problem.
    """

    P: sp.csc_matrix
    q: np.ndarray
    A: sp.csc_matrix
    l: np.ndarray
    u: np.ndarray
    r: float = 0.0
    eliminable: np.ndarray | None = dataclasses.field(default=None, repr=False)

    @property
    def n(self) -> int:
        return self.P.shape[0]

    @property
    def m(self) -> int:
        return self.A.shape[0]

    def objective(self, x: np.ndarray) -> float:
        return float(0.5 * x @ (self.P @ x) + self.q @ x + self.r)


@dataclasses.dataclass(frozen=True)
class Tolerance(ResultMixin):
    """Acceptance thresholds: a residual ``e`` of a quantity with scale ``s``
    passes when ``e <= abs_tol + rel_tol * max(1, s)``."""

    abs_tol: float = 1e-6
    rel_tol: float = 1e-6

    def accepts(self, error: float, scale: float) -> bool:
        return bool(error <= self.abs_tol + self.rel_tol * max(1.0, scale))

    def summary(self) -> str:
        return f"abs {self.abs_tol:g}, rel {self.rel_tol:g}"


DEFAULT_TOLERANCE = Tolerance()


@dataclasses.dataclass(frozen=True)
class Certificate(ResultMixin):
    """KKT residuals and duality gap of a primal/dual point, recomputed by evalcert.

    Attributes
    ----------
    primal_residual : float
        ``max`` violation of ``l <= Ax <= u`` (infinity norm).
    dual_residual : float
        ``||Px + q + A'y||_inf`` plus any sign violation of ``y``.
    complementary_slackness : float
        ``max_k max(y+_k (u_k - a_k x), y-_k (a_k x - l_k))``.
    primal_objective, dual_objective : float
    duality_gap : float
        ``primal_objective - dual_objective`` (signed).
    relative_gap : float
        ``|duality_gap| / max(1, |primal_objective|)``.
    passed : bool
        Every quantity within ``tolerance`` (scaled by the size of its terms).
    tolerance : Tolerance
    binding : list of dict
        Problem-specific description of the active inequality constraints and
        their multipliers (which cells or extremes sit on the box).
    x, y : ndarray
        The primal and dual point the certificate is about.
    """

    primal_residual: float
    dual_residual: float
    complementary_slackness: float
    primal_objective: float
    dual_objective: float
    duality_gap: float
    relative_gap: float
    passed: bool
    tolerance: Tolerance
    binding: list[dict[str, Any]]
    x: np.ndarray = dataclasses.field(repr=False)
    y: np.ndarray = dataclasses.field(repr=False)

    def summary(self) -> str:
        rows = [("primal residual", self.primal_residual),
                ("dual residual", self.dual_residual),
                ("complementary slackness", self.complementary_slackness),
                ("duality gap (abs)", self.duality_gap),
                ("duality gap (rel)", self.relative_gap)]
        verdict = "PASSED" if self.passed else "FAILED"
        return (f"certificate {verdict} (tolerance {self.tolerance.summary()}; "
                f"{len(self.binding)} binding constraint group(s))\n"
                + format_table(rows, ["quantity", "value"]))

    def raise_if_failed(self, solver: str = "", status: str = "") -> None:
        """Raise :class:`CertificateError` naming the failing quantities."""
        if self.passed:
            return
        raise CertificateError(
            f"solver {solver!r} reported {status!r} but evalcert's certificate check failed: "
            f"primal residual {self.primal_residual:.3g}, dual residual {self.dual_residual:.3g}, "
            f"complementary slackness {self.complementary_slackness:.3g}, relative duality gap "
            f"{self.relative_gap:.3g} (tolerance {self.tolerance.summary()}); tighten the solver "
            "tolerances or use another backend (clarabel is the most accurate)",
            solver=solver, status=status, certificate=self)


def _inf_norm(v: np.ndarray) -> float:
    return float(np.max(np.abs(v))) if v.size else 0.0


def qp_certificate(qp: QP, x: np.ndarray, y: np.ndarray,
                   tolerance: Tolerance = DEFAULT_TOLERANCE,
                   binding: list[dict[str, Any]] | None = None) -> Certificate:
    """Recompute the KKT residuals and the duality gap of ``(x, y)`` for ``qp``.

    Parameters
    ----------
    qp : QP
    x : ndarray, shape (n,)
        Primal point.
    y : ndarray, shape (m,)
        Row multipliers in the sign convention of the module docstring.
    tolerance : Tolerance
    binding : list of dict, optional
        Problem-specific description of active constraints, stored as is.

    Returns
    -------
    Certificate
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != (qp.n,) or y.shape != (qp.m,):
        raise ValueError(f"point of shape {x.shape}/{y.shape} for a QP with n={qp.n}, m={qp.m}")
    Ax = qp.A @ x
    Px = qp.P @ x
    Aty = qp.A.T @ y
    finite_u = np.isfinite(qp.u)
    finite_l = np.isfinite(qp.l)
    viol = np.concatenate([np.where(finite_u, Ax - qp.u, 0.0), np.where(finite_l, qp.l - Ax, 0.0)])
    primal_res = max(0.0, float(viol.max())) if viol.size else 0.0
    y_pos = np.maximum(y, 0.0)
    y_neg = np.maximum(-y, 0.0)
    sign_violation = max(_inf_norm(y_pos[~finite_u]), _inf_norm(y_neg[~finite_l]))
    stationarity = Px + qp.q + Aty
    dual_res = _inf_norm(stationarity) + sign_violation
    slack_u = np.where(finite_u, qp.u - Ax, 0.0)
    slack_l = np.where(finite_l, Ax - qp.l, 0.0)
    comp = max(_inf_norm(y_pos * slack_u), _inf_norm(y_neg * slack_l))
    support = float(np.sum(np.where(finite_u, qp.u, 0.0) * y_pos)
                    - np.sum(np.where(finite_l, qp.l, 0.0) * y_neg))
    xPx = float(x @ Px)
    primal = 0.5 * xPx + float(qp.q @ x) + qp.r
    dual = qp.r - 0.5 * xPx - support
    gap = primal - dual
    rel_gap = abs(gap) / max(1.0, abs(primal))
    scale_primal = max(_inf_norm(Ax), _inf_norm(np.where(finite_u, qp.u, 0.0)),
                       _inf_norm(np.where(finite_l, qp.l, 0.0)))
    scale_dual = max(_inf_norm(Px), _inf_norm(qp.q), _inf_norm(Aty))
    passed = (tolerance.accepts(primal_res, scale_primal)
              and tolerance.accepts(dual_res, scale_dual)
              and tolerance.accepts(comp, scale_dual)
              and tolerance.accepts(abs(gap), abs(primal)))
    return Certificate(primal_residual=primal_res, dual_residual=dual_res,
                       complementary_slackness=comp, primal_objective=primal,
                       dual_objective=dual, duality_gap=gap, relative_gap=rel_gap,
                       passed=bool(passed), tolerance=tolerance, binding=list(binding or []),
                       x=x, y=y)
