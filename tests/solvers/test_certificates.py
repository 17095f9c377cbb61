"""The KKT certificate on tiny QPs with known primal and dual solutions."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from evalcert.solvers.backends import native, osqp_direct
from evalcert.solvers.certificates import QP, Tolerance, qp_certificate


def _qp(P, q, A, l, u):
    return QP(sp.csc_matrix(np.atleast_2d(P)), np.asarray(q, float),
              sp.csc_matrix(np.atleast_2d(A)), np.asarray(l, float), np.asarray(u, float))


# min 1/2 (x1^2 + x2^2) - x1 - x2  s.t.  x1 + x2 = 1, x1 <= 0.2
# KKT: x = (0.2, 0.8); stationarity x - 1 + y_eq*[1,1] + y_box*[1,0] = 0
#      -> y_eq = 0.2, y_box = 0.6 (upper bound active, so y > 0)
KNOWN = _qp(np.eye(2), [-1, -1], [[1, 1], [1, 0]], [1, -np.inf], [1, 0.2])
X_STAR, Y_STAR = np.array([0.2, 0.8]), np.array([0.2, 0.6])


def test_known_solution_has_zero_residuals_and_gap():
    c = qp_certificate(KNOWN, X_STAR, Y_STAR)
    assert c.passed
    assert c.primal_residual == 0 and c.dual_residual < 1e-15
    assert c.duality_gap == pytest.approx(0, abs=1e-15)
    assert c.primal_objective == pytest.approx(0.5 * (0.04 + 0.64) - 1.0)


@pytest.mark.parametrize("x, y, failing", [
    (np.array([0.3, 0.7]), Y_STAR, "primal"),            # violates x1 <= 0.2
    (X_STAR, np.array([0.2, 0.5]), "dual"),               # wrong multiplier
    (X_STAR, np.array([0.2, -0.6]), "dual"),              # wrong sign on a <= row
    (np.array([0.1, 0.9]), np.array([0.1, 0.0]), "gap"),  # feasible, not optimal
])
def test_wrong_points_fail(x, y, failing):
    c = qp_certificate(KNOWN, x, y)
    assert not c.passed
    value = {"primal": c.primal_residual, "dual": c.dual_residual,
             "gap": max(abs(c.duality_gap), c.dual_residual)}[failing]
    assert value > 1e-3


@pytest.mark.parametrize("backend", [native, osqp_direct])
def test_backends_recover_known_primal_and_dual(backend):
    raw = backend.solve(KNOWN)
    assert raw.ok
    np.testing.assert_allclose(raw.x, X_STAR, atol=1e-6)
    np.testing.assert_allclose(raw.y, Y_STAR, atol=1e-6)
    assert qp_certificate(KNOWN, raw.x, raw.y, Tolerance(1e-6, 1e-6)).passed


def test_lower_bound_multiplier_is_negative():
    # min 1/2 x^2 + x  s.t. x >= 0  ->  x = 0, y = -1 (lower bound active)
    qp = _qp([[1.0]], [1.0], [[1.0]], [0.0], [np.inf])
    raw = native.solve(qp)
    assert raw.x[0] == pytest.approx(0) and raw.y[0] == pytest.approx(-1)
    assert qp_certificate(qp, raw.x, raw.y).passed
