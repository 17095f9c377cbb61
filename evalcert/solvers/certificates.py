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

**Suboptimality bound.** Residuals alone do not bound how far ``f(x)`` is from
the optimum ``f*``: with weights spanning 1e-6..1e6 a residual scaled by the
largest term hides the small-weight cells (issue 10, item 6). The certificate
therefore also computes a *true* lower bound ``g <= f*`` from a repaired copy of
the returned multipliers, and reports ``f(x) - f* <= f(x) - g``:

1. signs: multipliers of the wrong sign on one-sided rows are set to zero, so
   that ``y+'(Ax - u) - y-'(Ax - l) <= 0`` at every feasible ``x``;
2. equality multipliers (free in sign) are moved by least squares to shrink
   the stationarity residual ``e = Px + q + A'y``;
3. variables without curvature (zero column of ``P``, e.g. the auxiliaries of
   the all-cells box) get an exactly balanced ``e_k = 0`` by scaling down the
   larger side of their multipliers (which keeps every sign).

Weak duality gives ``f* >= min_z L(z, y)`` for the Lagrangian ``L``, and with
``P >= diag(g)`` (``g_i = P_ii - sum_{j != i} |P_ij|``, the Gershgorin bound:
``P - diag(g)`` is diagonally dominant, hence PSD) the minimum separates::

    L(z, y) >= L(x, y) + sum_i min_{z_i in X_i} [e_i (z_i - x_i) + g_i/2 (z_i - x_i)^2]

where ``X_i = [-R, R]`` and ``R`` is a radius containing an optimal point:
the problem's own ``QP.x_bound`` when it states one (then the bound is
rigorous). Otherwise ``X_i`` is the real line where ``g_i > 0`` (the
quadratic term bounds the minimum: rigorous), and only on coordinates with
no curvature floor (``g_i <= 0``: the all-cells box's auxiliaries, ``lam = 0``)
*and* a nonzero residual is ``R = 4 max(1, ||x||_inf)`` assumed; the
certificate records this (``radius_assumed``).

When that cheap bound is not already far inside the tolerance, a tighter one
is tried and the larger kept: with ``w ~ P^-1 e`` from a few conjugate-gradient
steps (any ``w`` is valid), ``min_d 1/2 d'Pd + e'd >= -w'Pw/(2t) + min_d
[(1-t)/2 d'diag(g)d + (e - Pw)'d]`` (``t = 1 - 1e-3``), and a single equality
row (the gauge of Eq. 7) gets the multiplier step that minimises
``e'P^-1 e``: it removes the weak direction of ``P`` (curvature ``2 lam``,
shifting every ``theta`` and ``b`` together) that Gershgorin cannot see. The bound is computed in floating point with an
explicit allowance for rounding (a few ulps of every term summed).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from evalcert.errors import CertificateError, require_positive
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
    x_bound : float, optional
        A radius ``R`` such that some optimal ``x*`` has ``||x*||_inf <= R``
        (for Eq. 7 with the all-cells box, ``R = 2``). Optional; when given,
        the certificate's suboptimality bound also covers directions without
        curvature. It must be a true statement about the problem.

    Examples
    --------
    Minimise ``x^2/2 - 2x`` subject to ``-1 <= x <= 1``:

    >>> import numpy as np, scipy.sparse as sp
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))
    >>> qp.n, qp.m, qp.objective(np.array([1.0]))
    (1, 1, -1.5)
    """

    P: sp.csc_matrix
    q: np.ndarray
    A: sp.csc_matrix
    l: np.ndarray
    u: np.ndarray
    r: float = 0.0
    eliminable: np.ndarray | None = dataclasses.field(default=None, repr=False)
    x_bound: float | None = None

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
    passes when ``e <= abs_tol + rel_tol * max(1, s)``.

    Examples
    --------
    >>> tol = Tolerance(abs_tol=1e-8, rel_tol=1e-8)
    >>> tol.accepts(1e-9, scale=1.0), tol.accepts(1e-6, scale=1.0), tol.accepts(1e-6, scale=1e3)
    (True, False, True)
    """

    abs_tol: float = 1e-6
    rel_tol: float = 1e-6

    def __post_init__(self) -> None:
        require_positive("abs_tol", self.abs_tol, allow_zero=True)
        require_positive("rel_tol", self.rel_tol, allow_zero=True)  # 0 and 0: exact (ILP)

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
    lower_bound : float
        A certified lower bound on the optimal value ``f*``, from the repaired
        multipliers (module docstring); ``-inf`` when none could be proven.
    suboptimality_bound : float
        ``max(0, primal_objective - lower_bound)``: ``f(x) - f* <=`` this.
    relative_suboptimality_bound : float
        ``suboptimality_bound / |primal_objective|`` (0 when both are 0): the
        optimum is at least ``(1 - this)`` times the reported objective.
    radius, radius_assumed : float, bool
        ``radius_assumed=False``: the bound is rigorous (up to the rounding
        allowance), using the problem's own ``QP.x_bound`` if it states one
        (``radius``; ``inf`` when none was needed). ``radius_assumed=True``:
        the stationarity residual is nonzero on a variable without curvature
        and the bound assumes an optimum with ``|x*_i| <= radius`` there
        (``4 max(1, ||x||_inf)``); the summary says so.

    Examples
    --------
    Minimise ``x^2/2 - 2x`` subject to ``-1 <= x <= 1``: the optimum ``x = 1`` with the
    upper bound pushing (``y = 1``) passes; a point inside the box does not.

    >>> import numpy as np, scipy.sparse as sp
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))
    >>> cert = qp_certificate(qp, np.array([1.0]), np.array([1.0]))
    >>> cert.passed, cert.primal_objective, abs(round(cert.duality_gap, 12))
    (True, -1.5, 0.0)
    >>> qp_certificate(qp, np.array([0.9]), np.array([1.0])).passed
    False
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
    lower_bound: float = -np.inf
    suboptimality_bound: float = np.inf
    relative_suboptimality_bound: float = np.inf
    radius: float = np.inf
    radius_assumed: bool = True

    def summary(self) -> str:
        rows = [("primal residual", self.primal_residual),
                ("dual residual", self.dual_residual),
                ("complementary slackness", self.complementary_slackness),
                ("duality gap (abs)", self.duality_gap),
                ("duality gap (rel)", self.relative_gap),
                ("certified lower bound on optimum", self.lower_bound),
                ("suboptimality bound (abs)", self.suboptimality_bound),
                ("suboptimality bound (rel)", self.relative_suboptimality_bound)]
        verdict = "PASSED" if self.passed else "FAILED"
        note = (f"\nthe suboptimality bound assumes an optimum with ||x*||_inf <= {self.radius:.3g}"
                " (the problem declares no radius)" if self.radius_assumed else "")
        return (f"certificate {verdict} (tolerance {self.tolerance.summary()}; "
                f"{len(self.binding)} binding constraint group(s))\n"
                + format_table(rows, ["quantity", "value"]) + note)

    def raise_if_failed(self, solver: str = "", status: str = "") -> None:
        """Raise :class:`CertificateError` naming the failing quantities."""
        if self.passed:
            return
        raise CertificateError(
            f"solver {solver!r} reported {status!r} but evalcert's certificate check failed: "
            f"primal residual {self.primal_residual:.3g}, dual residual {self.dual_residual:.3g}, "
            f"complementary slackness {self.complementary_slackness:.3g}, relative duality gap "
            f"{self.relative_gap:.3g}, suboptimality bound {self.suboptimality_bound:.3g} "
            f"(tolerance {self.tolerance.summary()}); tighten the solver "
            "tolerances or use another backend (clarabel is the most accurate)",
            solver=solver, status=status, certificate=self)


def _inf_norm(v: np.ndarray) -> float:
    return float(np.max(np.abs(v))) if v.size else 0.0


_EPS = float(np.finfo(float).eps)
#: Without ``QP.x_bound`` the bound assumes an optimal point within this many
#: times ``max(1, ||x||_inf)`` of the origin (and says so in the certificate).
DEFAULT_RADIUS_FACTOR = 4.0


#: Nonzeros of ``P`` or ``A`` handled at once where their absolute values are
#: needed: the certificate's temporaries stay O(this), not O(nnz).
_CHUNK = 1 << 20


def _compressed(M: sp.spmatrix) -> sp.spmatrix:
    return M if M.format in ("csr", "csc") else M.tocsc()


def _abs_product(M: sp.spmatrix, v: np.ndarray) -> np.ndarray:
    """``|M| @ v`` by slices of about ``_CHUNK`` nonzeros (no copy of ``M``)."""
    M = _compressed(M)
    n_out, n_in = M.shape
    major = M.indptr
    out = np.zeros(n_out)
    cuts = np.unique(np.r_[np.searchsorted(major, np.arange(0, M.nnz, _CHUNK), side="right") - 1,
                           len(major) - 1])
    for a, b in zip(cuts[:-1], cuts[1:]):
        lo, hi = major[a], major[b]
        ptr = major[a:b + 1] - lo
        data = np.abs(M.data[lo:hi])
        if M.format == "csc":       # columns a..b: their share of every row
            out += sp.csc_matrix((data, M.indices[lo:hi], ptr), shape=(n_out, b - a)) @ v[a:b]
        else:                       # rows a..b
            out[a:b] = sp.csr_matrix((data, M.indices[lo:hi], ptr), shape=(b - a, n_in)) @ v
    return out


class _Curved:
    """``P`` on its curved coordinates (nonzero rows), with approximate solves by
    Jacobi-preconditioned conjugate gradients. Any approximation is safe: the
    bound holds for every ``w`` (see :func:`_lower_bound`); a better one is tighter.

    Products with ``P_RR`` embed the vector in the full space and multiply by
    ``P`` itself (its other rows and columns are zero): no copy of ``P``."""

    def __init__(self, P: sp.spmatrix, null: np.ndarray):
        self.P = _compressed(P)
        self.idx = np.flatnonzero(~null)
        diag = self.P.diagonal()[self.idx]
        self.M = sp.diags(np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), 1.0))
        self.op = spla.LinearOperator((len(self.idx), len(self.idx)), matvec=self.matvec,
                                      dtype=float)

    def _embed(self, v: np.ndarray) -> np.ndarray:
        full = np.zeros(self.P.shape[1])
        full[self.idx] = np.ravel(v)
        return full

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """``P_RR v``."""
        return (self.P @ self._embed(v))[self.idx]

    def abs_matvec(self, v: np.ndarray) -> np.ndarray:
        """``|P_RR| v``."""
        return _abs_product(self.P, self._embed(v))[self.idx]

    def solve(self, v: np.ndarray) -> np.ndarray:
        """Approximately ``P_RR^{-1} v_R`` (length of the curved coordinates)."""
        rhs = v[self.idx]
        if not np.any(rhs):
            return np.zeros_like(rhs)
        w, _ = spla.cg(self.op, rhs, rtol=1e-12, atol=0.0, maxiter=CG_ITERATIONS, M=self.M)
        return w if np.all(np.isfinite(w)) else np.zeros_like(rhs)


#: Conjugate-gradient iterations per solve with ``P`` in the certificate (cost:
#: this many products with ``P``).
CG_ITERATIONS = 100


def _repaired_multipliers(qp: QP, y: np.ndarray, Px: np.ndarray, null: np.ndarray,
                          curved: _Curved | None) -> np.ndarray:
    """Steps 1-3 of the module docstring: a sign-feasible ``y`` with a smaller
    stationarity residual and exact balance on variables without curvature."""
    y = np.where(np.isfinite(qp.u), y, np.minimum(y, 0.0))
    y = np.where(np.isfinite(qp.l), y, np.maximum(y, 0.0))
    eq = np.flatnonzero(qp.l == qp.u)
    A = qp.A.tocsc()
    if eq.size:
        resid = Px + qp.q + A.T @ y
        A_eq = A[eq].T.tocsc()
        col = A_eq.toarray().ravel() if eq.size == 1 else None
        if col is not None and curved is not None and not np.any(col[null]):
            # One equality row (the gauge): the step that minimises the exact
            # dual penalty (e + d a)' P^-1 (e + d a), which also removes the
            # weak direction of P (curvature 2 lam) that the row reaches.
            w, u = curved.solve(resid), curved.solve(col)
            au = float(col[curved.idx] @ u)
            step = np.array([-float(col[curved.idx] @ w) / au]) if au > 0 else np.zeros(1)
            y = y.copy()
            y[eq] += step
        elif col is not None:
            norm = float(col @ col)
            step = np.array([-(col @ resid) / norm]) if norm > 0 else np.zeros(1)
        else:
            step = spla.lsqr(A_eq, -resid, atol=1e-14, btol=1e-14, iter_lim=100)[0]
        if col is None or curved is None or np.any(col[null]):
            trial = y.copy()
            trial[eq] += step
            if np.linalg.norm(Px + qp.q + A.T @ trial) < np.linalg.norm(resid):
                y = trial
    if np.any(null):
        At = A.T.tocsr()
        for k in np.flatnonzero(null):
            lo, hi = At.indptr[k], At.indptr[k + 1]
            rows, coef = At.indices[lo:hi], At.data[lo:hi]
            t = coef * y[rows]
            total = qp.q[k] + t.sum()
            side = t > 0 if total > 0 else t < 0
            mass = abs(float(t[side].sum()))
            if total != 0 and mass >= abs(total):
                y[rows[side]] *= 1.0 - abs(total) / mass
    return y


def _curvature_floor(P: sp.spmatrix) -> tuple[np.ndarray, np.ndarray]:
    """Gershgorin floors ``g`` with ``P >= diag(g)`` (minus a rounding allowance)
    and the mask of zero columns.

    Row sums of ``|P|`` and stored entries per row from ``P``'s own arrays
    (``|P| 1`` by slices; a bincount of the row indices of CSC): no copy of ``P``."""
    P = _compressed(P)
    n = P.shape[0]
    absrow = _abs_product(P, np.ones(P.shape[1]))
    if P.format == "csc":           # stored entries per row: bincounts of slices of indices
        per_row = np.zeros(n, dtype=np.int64)
        for lo in range(0, P.nnz, _CHUNK):
            per_row += np.bincount(P.indices[lo:lo + _CHUNK], minlength=n)
    else:
        per_row = np.diff(P.indptr)
    g = 2.0 * P.diagonal() - absrow - 8.0 * _EPS * absrow * (1 + per_row)
    return g, absrow == 0


def _coordinate_minimum(e: np.ndarray, g: np.ndarray, x: np.ndarray,
                        radius: np.ndarray) -> float:
    """``sum_i min_{|z_i| <= radius_i} e_i (z_i - x_i) + max(g_i, 0)/2 (z_i - x_i)^2``
    (each term a 1-D convex quadratic on an interval, ``radius_i`` may be inf;
    ``-inf`` if the minimum is unbounded)."""
    g = np.maximum(g, 0.0)
    flat = (g <= 0) & (e != 0)
    if np.any(flat & ~np.isfinite(radius)):
        return -np.inf
    d = np.where(g > 0, -e / np.where(g > 0, g, 1.0), 0.0)
    d = np.where(flat, -np.sign(e) * (np.where(flat, radius, 0.0) + np.abs(x)), d)
    # (a point outside the radius still gives a valid bound: z ranges over
    # [-radius, radius] whatever x is)
    d = np.clip(d, -radius - x, radius - x)
    return float(np.sum(e * d + 0.5 * g * d * d))


def _lower_bound(qp: QP, x: np.ndarray, y: np.ndarray, Px: np.ndarray, Ax: np.ndarray,
                 primal: float, floor: tuple[np.ndarray, np.ndarray],
                 refine: bool) -> tuple[float, float, bool]:
    """A lower bound on the optimum from the repaired multipliers (module
    docstring), the radius it used, and whether that radius was assumed.
    ``floor`` is :func:`_curvature_floor` of ``qp.P``; ``refine`` adds the
    solves with ``P`` (conjugate gradients): tighter, dearer."""
    g, null = floor
    curved = _Curved(qp.P, null) if refine else None
    y = _repaired_multipliers(qp, y, Px, null, curved)
    e = Px + qp.q + qp.A.T @ y
    scale = np.abs(Px) + np.abs(qp.q) + _abs_product(qp.A.T, np.abs(y))
    # The radius: the problem's own when stated; otherwise one is assumed, and
    # only where P has no curvature floor (elsewhere the quadratic term bounds
    # the minimum without it).
    assumed = qp.x_bound is None and bool(np.any((g <= 0) & (e != 0)))
    if qp.x_bound is not None:
        radius = float(qp.x_bound)
        radii = np.full(qp.n, radius)
    else:
        radius = DEFAULT_RADIUS_FACTOR * max(1.0, _inf_norm(x))
        radii = np.where(g > 0, np.inf, radius)
    finite_u, finite_l = np.isfinite(qp.u), np.isfinite(qp.l)
    terms = (np.maximum(y, 0.0) * np.where(finite_u, Ax - qp.u, 0.0)
             - np.maximum(-y, 0.0) * np.where(finite_l, Ax - qp.l, 0.0))
    lagrangian = primal + float(terms.sum())
    slack = 16 * _EPS * (abs(primal) + float(np.abs(terms).sum())
                         + float(np.abs(x) @ (scale + 1.0)) + abs(qp.r))
    # Null coordinates separate exactly (zero rows and columns of P). On the
    # curved ones take the better of two valid bounds: the Gershgorin one, and
    # with w ~ P^-1 e, r = e - Pw, t = 1 - 1e-3:
    #   min_d 1/2 d'Pd + e'd >= -w'Pw / (2t) + min_d [(1-t)/2 d'diag(g)d + r'd].
    R = np.flatnonzero(~null)
    gershgorin = _coordinate_minimum(e[R], g[R], x[R], radii[R])
    solved = -np.inf
    if curved is not None:
        w = curved.solve(e)
        Pw = curved.matvec(w)
        t = 1.0 - 1e-3
        solved = -float(w @ Pw) / (2 * t) + _coordinate_minimum(e[R] - Pw, (1 - t) * g[R],
                                                                x[R], radii[R])
        slack += 16 * _EPS * float(np.abs(w) @ curved.abs_matvec(np.abs(w)))
    flat = np.flatnonzero(null)
    minimum = max(gershgorin, solved) + _coordinate_minimum(e[flat], g[flat], x[flat],
                                                           radii[flat])
    return (lagrangian + minimum - slack,
            radius if (assumed or qp.x_bound is not None) else np.inf, assumed)


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

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))
    >>> cert = qp_certificate(qp, x=np.array([1.0]), y=np.array([1.0]))
    >>> cert.passed, abs(round(cert.dual_residual, 12)), bool(cert.suboptimality_bound < 1e-12)
    (True, 0.0, True)
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
    # The cheap bound first; the solves with P only when it is not already
    # far inside the tolerance.
    floor = _curvature_floor(qp.P)
    lower, radius, assumed = _lower_bound(qp, x, y, Px, Ax, primal, floor, refine=False)
    allowance = tolerance.abs_tol + tolerance.rel_tol * max(1.0, abs(primal))
    if primal - lower > 1e-2 * allowance:
        refined = _lower_bound(qp, x, y, Px, Ax, primal, floor, refine=True)
        if refined[0] > lower:
            lower, radius, assumed = refined
    subopt = max(0.0, primal - lower)
    rel_subopt = 0.0 if subopt == 0 else (subopt / abs(primal) if primal else np.inf)
    passed = (tolerance.accepts(primal_res, scale_primal)
              and tolerance.accepts(dual_res, scale_dual)
              and tolerance.accepts(comp, scale_dual)
              and tolerance.accepts(abs(gap), abs(primal))
              and tolerance.accepts(subopt, abs(primal)))
    return Certificate(primal_residual=primal_res, dual_residual=dual_res,
                       complementary_slackness=comp, primal_objective=primal,
                       dual_objective=dual, duality_gap=gap, relative_gap=rel_gap,
                       passed=bool(passed), tolerance=tolerance, binding=list(binding or []),
                       x=x, y=y, lower_bound=float(lower), suboptimality_bound=float(subopt),
                       relative_suboptimality_bound=float(rel_subopt), radius=radius,
                       radius_assumed=assumed)
