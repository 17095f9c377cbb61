"""The KKT certificate on tiny QPs with known primal and dual solutions."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from evalcert.solvers.backends import native, osqp_direct
from evalcert.solvers.backends.base import SolveSettings
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


# --- suboptimality bound (issue 10, item 6) -----------------------------------------------------

def test_bound_is_zero_at_the_known_optimum_and_covers_a_suboptimal_point():
    f_star = KNOWN.objective(X_STAR)
    c = qp_certificate(KNOWN, X_STAR, Y_STAR)
    assert c.lower_bound <= f_star and c.suboptimality_bound < 1e-12
    x = np.array([0.1, 0.9])                         # feasible, not optimal
    c = qp_certificate(KNOWN, x, Y_STAR)
    assert c.suboptimality_bound >= KNOWN.objective(x) - f_star > 1e-3
    assert c.relative_suboptimality_bound == pytest.approx(
        c.suboptimality_bound / abs(KNOWN.objective(x)))
    assert "suboptimality bound (abs)" in c.summary()


@pytest.mark.parametrize("seed", range(40))
def test_lower_bound_never_exceeds_the_optimum_for_any_multipliers(seed):
    # Weak duality after the repair: for *any* y (wrong signs, wrong sizes) and
    # any x inside the declared radius, lower_bound <= f*.
    rng = np.random.default_rng(seed)
    qp = dataclasses.replace(KNOWN, x_bound=10.0)
    x = X_STAR + rng.normal(0, 10.0 ** rng.uniform(-8, 0), 2)
    y = Y_STAR * rng.choice([-1.0, 1.0], 2) + rng.normal(0, 10.0 ** rng.uniform(-8, 1), 2)
    c = qp_certificate(qp, x, y)
    assert c.lower_bound <= KNOWN.objective(X_STAR) + 1e-15
    assert not c.radius_assumed and c.radius == 10.0


def test_auxiliary_without_curvature_is_balanced_not_unbounded():
    # min 1/2 x^2 - 2x + 0*c  s.t.  x - c <= 0,  c <= 1: x* = c* = 1, y = (1, 1).
    # c has no curvature; a slightly unbalanced multiplier must still give a bound.
    qp = QP(sp.csc_matrix(np.diag([1.0, 0.0])), np.array([-2.0, 0.0]),
            sp.csc_matrix(np.array([[1.0, -1.0], [0.0, 1.0]])), np.array([-np.inf, -np.inf]),
            np.array([0.0, 1.0]), x_bound=5.0)
    c = qp_certificate(qp, np.array([1.0, 1.0]), np.array([1.0, 1.0 + 1e-7]))
    assert np.isfinite(c.lower_bound) and c.lower_bound <= -1.5 + 1e-15
    assert c.suboptimality_bound < 1e-6


def _badly_scaled(seed):
    """15 x 16 scores with weights spanning 1e-6..1e6: the heavy cells are fit
    exactly, so the optimum is made of the light cells only (the case where a
    residual scaled by the largest weight hides them)."""
    rng = np.random.default_rng(seed)
    theta, b = rng.uniform(-0.5, 0.5, 15), rng.uniform(-0.5, 0.5, 16)
    W = 10.0 ** rng.uniform(-6, 6, (15, 16))
    noise = np.where(W < 1, rng.normal(0, 1, W.shape), 0.0) * 10.0 ** rng.uniform(-3, 3)
    return np.clip(theta[:, None] - b[None, :] + noise, -1, 1), W


def _reference_optimum(S, W, lam, box):
    """The optimum of an independent per-cell formulation, Clarabel at 1e-12."""
    import cvxpy as cp

    K, J = S.shape
    theta, b = cp.Variable(K), cp.Variable(J)
    pred = cp.reshape(theta, (K, 1), order="C") @ np.ones((1, J)) \
        - np.ones((K, 1)) @ cp.reshape(b, (1, J), order="C")
    cons = [cp.sum(b) == 0, cp.abs(pred) <= 1]       # every cell is observed here
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(W, cp.square(S - pred)))
                                  + lam * (cp.sum_squares(theta) + cp.sum_squares(b))), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return float(prob.value)


@pytest.mark.parametrize("seed", [0, 1] + [pytest.param(s, marks=pytest.mark.slow)
                                           for s in range(2, 10)])
@pytest.mark.parametrize("box", ["observed", "all"])
def test_badly_scaled_fits_are_refused_or_within_their_certified_bound(seed, box):
    from evalcert.errors import SolverError
    from evalcert.solvers.backends import available_backends
    from evalcert.solvers.clipped_linear import ClippedLinear

    S, W = _badly_scaled(seed)
    f_ref = _reference_optimum(S, W, 1e-6, box)
    slack = 1e-9 * max(1.0, f_ref)          # the reference's own accuracy
    outcomes = {}
    for solver in available_backends():
        try:
            res = ClippedLinear(lam=1e-6, box=box, solver=solver).fit(S, sample_weight=W).result_
        except SolverError as exc:       # CertificateError is a SolverError
            outcomes[solver] = type(exc).__name__
            continue
        cert = res.certificate
        assert cert.lower_bound <= f_ref + slack, solver
        assert res.objective - f_ref <= cert.suboptimality_bound + slack, solver
        assert cert.suboptimality_bound <= 1e-6 + 1e-6 * max(1.0, abs(res.objective)), solver
        outcomes[solver] = "certified"
    assert "certified" in outcomes.values(), outcomes


def test_a_hidden_light_item_cannot_pass_without_its_cost_in_the_bound():
    # Regression (issue 10, item 6): move the difficulty of an item whose cells
    # all weigh <= 1e-3 while every other cell weighs 1e6. The stationarity
    # residual is ~1e-4, invisible next to a scale of 1e6, yet the objective
    # grows by half. The certificate must fail or its bound must cover it.
    from evalcert.solvers.clipped_linear import ClippedLinear
    from evalcert.solvers.clipped_linear_qp import Design, build_qp

    rng = np.random.default_rng(5)
    theta, b = rng.uniform(-0.3, 0.3, 6), rng.uniform(-0.3, 0.3, 7)
    W = np.full((6, 7), 1e6)
    W[:, 0] = 10.0 ** rng.uniform(-6, -3, 6)
    S = theta[:, None] - b[None, :]
    S[:, 0] += rng.normal(0, 0.3, 6)
    S = np.clip(S, -1, 1)
    model = ClippedLinear(lam=1e-6, box="observed", solver="native").fit(S, sample_weight=W)
    cert = model.result_.certificate
    qp = build_qp(Design.from_mask(np.ones((6, 7), bool)), S.ravel(), W.ravel(), 1e-6, "observed")
    f_star = cert.primal_objective
    x = cert.x.copy()
    x[6] += 0.2                     # b_0 of the light item; shift every other b and every
    x[7:13] -= 0.2 / 7              # theta alike so that sum b = 0 and no heavy cell moves
    x[:6] -= 0.2 / 7
    x[6] -= 0.2 / 7
    bad = qp_certificate(qp, x, cert.y, Tolerance(1e-6, 1e-6))
    assert abs(x[6:13].sum() - cert.x[6:13].sum()) < 1e-12 and qp.objective(x) > 1.4 * f_star
    assert bad.dual_residual < 1e-6 * 1e6         # hidden from a residual scaled by 1e6
    assert bad.suboptimality_bound >= qp.objective(x) - f_star
    assert not bad.passed


# --- qpsolvers backends: evalcert's certificate on the returned primal and dual -------------

def _qpsolvers():
    from evalcert.solvers.backends import available_qpsolvers
    return available_qpsolvers()


@pytest.mark.parametrize("name", _qpsolvers() or [pytest.param("none", marks=pytest.mark.skip(
    reason="no qpsolvers backend installed (pip install \".[qp]\")"))])
def test_qpsolvers_backends_return_duals_in_evalcerts_convention(name):
    from evalcert.solvers.backends import solve_qp

    raw = solve_qp(name, KNOWN, SolveSettings(tolerance=Tolerance(1e-9, 1e-9)))
    assert raw.ok
    np.testing.assert_allclose(raw.x, X_STAR, atol=1e-5)
    np.testing.assert_allclose(raw.y, Y_STAR, atol=1e-5)       # upper bound active: y > 0
    assert qp_certificate(KNOWN, raw.x, raw.y, Tolerance(1e-6, 1e-6)).passed
    lower = _qp([[1.0]], [1.0], [[1.0]], [0.0], [np.inf])       # lower bound active: y < 0
    raw = solve_qp(name, lower)
    assert raw.y[0] == pytest.approx(-1, abs=1e-5)
    assert qp_certificate(lower, raw.x, raw.y).passed


@pytest.mark.parametrize("box", ["observed", "all"])
def test_qpsolvers_on_badly_scaled_fits_are_refused_or_within_their_bound(box):
    from evalcert.solvers.backends import solve_qp
    from evalcert.solvers.clipped_linear_qp import Design, build_qp

    S, W = _badly_scaled(0)
    f_ref = _reference_optimum(S, W, 1e-6, box)
    qp = build_qp(Design.from_mask(np.ones(S.shape, bool)), S.ravel(), W.ravel(), 1e-6, box)
    for name in _qpsolvers():
        raw = solve_qp(name, qp)
        if not raw.ok:
            continue
        cert = qp_certificate(qp, raw.x, raw.y)
        assert cert.lower_bound <= f_ref + 1e-9 * f_ref, name
        if cert.passed:
            assert cert.primal_objective - f_ref <= cert.suboptimality_bound + 1e-9 * f_ref, name


def test_dense_solver_refuses_a_problem_above_its_limit(monkeypatch):
    from evalcert.solvers.backends import qpsolvers_

    if "qpsolvers-daqp" not in _qpsolvers():
        pytest.skip("daqp is not installed")
    monkeypatch.setattr(qpsolvers_, "DENSE_LIMIT", 3)
    raw = qpsolvers_.solve(KNOWN, "daqp")
    assert not raw.ok and raw.x is None and "too large for a dense solver" in raw.status


# --- no copies of P or A in the certificate (issue 13 item 2, session 4) ------------------------
from evalcert.solvers import certificates as certs  # noqa: E402


def _random_sparse(rng, shape, density=0.3):
    M = sp.random(*shape, density=density, random_state=rng, format="csc")
    M.data -= 0.5
    return M


@pytest.mark.parametrize("fmt", ["csc", "csr", "coo"])
def test_abs_product_by_slices_equals_the_dense_product(monkeypatch, fmt):
    rng = np.random.default_rng(0)
    monkeypatch.setattr(certs, "_CHUNK", 3)              # many slices, some inside one column
    for shape in [(7, 5), (1, 9), (9, 1), (6, 6)]:
        M = _random_sparse(rng, shape).asformat(fmt)
        v = rng.normal(size=shape[1])
        np.testing.assert_allclose(certs._abs_product(M, v), np.abs(M.toarray()) @ v,
                                   rtol=1e-14, atol=1e-15)
    assert not certs._abs_product(sp.csc_matrix((4, 3)), np.ones(3)).any()


@pytest.mark.parametrize("fmt", ["csc", "csr"])
def test_curvature_floor_and_curved_products_equal_their_dense_definitions(monkeypatch, fmt):
    rng = np.random.default_rng(1)
    monkeypatch.setattr(certs, "_CHUNK", 4)
    B = _random_sparse(rng, (8, 8), 0.4)
    P = (B @ B.T + sp.diags(rng.uniform(0, 1, 8))).tolil()
    P[5, :] = 0.0
    P[:, 5] = 0.0                                        # a coordinate without curvature
    P = P.asformat(fmt)
    dense = P.toarray()
    g, null = certs._curvature_floor(P)
    absrow = np.abs(dense).sum(axis=1)
    stored = np.diff(P.tocsr().indptr)
    np.testing.assert_allclose(g, 2 * np.diag(dense) - absrow
                               - 8 * certs._EPS * absrow * (1 + stored), rtol=1e-13, atol=1e-15)
    assert null.tolist() == [k == 5 for k in range(8)]
    curved = certs._Curved(P, null)
    R = np.flatnonzero(~null)
    v = rng.normal(size=len(R))
    np.testing.assert_allclose(curved.matvec(v), dense[np.ix_(R, R)] @ v, rtol=1e-13)
    np.testing.assert_allclose(curved.abs_matvec(np.abs(v)),
                               np.abs(dense[np.ix_(R, R)]) @ np.abs(v), rtol=1e-13)
    w = curved.solve(np.r_[v[:5], 0.0, v[5:]])
    np.testing.assert_allclose(dense[np.ix_(R, R)] @ w, v, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("box", ["all", "observed", "none"])
def test_certificate_values_do_not_depend_on_slicing_or_storage(monkeypatch, seed, box):
    # The same certificate (to rounding) whether P and A are read in one slice
    # or many, as CSC or CSR; a tight tolerance also runs the refined bound
    # (conjugate gradients through the copy-free products with P).
    from evalcert.solvers.clipped_linear_qp import Design, build_qp

    rng = np.random.default_rng(seed)
    K, J = 6, 9
    mask = rng.random((K, J)) < 0.6
    mask[np.arange(K), rng.integers(0, J, K)] = True
    mask[rng.integers(0, K, J), np.arange(J)] = True
    design = Design.from_mask(mask)
    scores = np.clip(rng.normal(0.3, 0.6, design.n_cells), -1, 1)
    qp = build_qp(design, scores, rng.uniform(0.5, 2, design.n_cells), 1e-6 * seed, box)
    raw = native.solve(qp)
    x = raw.x + rng.normal(0, 1e-9, qp.n)                # not exactly optimal: nonzero bound
    results = []
    for chunk, fmt in ((1 << 20, "csc"), (5, "csc"), (7, "csr")):
        monkeypatch.setattr(certs, "_CHUNK", chunk)
        q = dataclasses.replace(qp, P=qp.P.asformat(fmt), A=qp.A.asformat(fmt))
        for tol in (Tolerance(), Tolerance(1e-15, 1e-15)):
            results.append(qp_certificate(q, x, raw.y, tol))
    fields = ("primal_residual", "dual_residual", "complementary_slackness", "primal_objective",
              "dual_objective", "lower_bound", "suboptimality_bound")
    for k, c in enumerate(results[2:]):
        ref = results[k % 2]
        for f in fields:
            assert getattr(c, f) == pytest.approx(getattr(ref, f), rel=1e-9, abs=1e-12), f
        assert c.passed == ref.passed and c.radius_assumed == ref.radius_assumed


def test_the_certificate_makes_no_copy_of_p(monkeypatch):
    # Regression (issue 13 item 2): the certificate copied P several times (to CSR,
    # |P|, the curved block; ~0.9 GB at 2 x 10^7 cells). Now its temporaries are
    # O(n) plus slices of _CHUNK nonzeros, also on the refined (CG) path.
    import tracemalloc

    from evalcert.solvers.clipped_linear_qp import Design, build_qp

    rng = np.random.default_rng(5)
    K, J, per_item = 200, 2000, 100             # P: 4 x 10^5 nonzeros, n = 2202 variables
    cols = np.repeat(np.arange(J), per_item)
    rows = (rng.integers(0, K, J)[cols] + np.tile(np.arange(per_item) * 2, J)
            + rng.integers(0, 2, len(cols))) % K
    order = np.lexsort((cols, rows))
    design = Design.from_cells(K, J, rows[order], cols[order])
    qp = build_qp(design, np.clip(rng.normal(0.2, 0.5, design.n_cells), -1, 1),
                  np.ones(design.n_cells), 1e-6, "all")
    raw = native.solve(qp)
    x = raw.x + rng.normal(0, 1e-7, qp.n)            # the refined bound runs
    monkeypatch.setattr(certs, "_CHUNK", 4096)
    p_bytes = qp.P.data.nbytes + qp.P.indices.nbytes
    tracemalloc.start()
    try:
        cert = qp_certificate(qp, x, raw.y, Tolerance(1e-12, 1e-12))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.isfinite(cert.lower_bound)
    assert peak < 0.5 * p_bytes, (peak, p_bytes)
