"""Prop. 4.1 and App. F: the Gini projection, Lemma F.1 and the Huber dual (D)."""

from __future__ import annotations

import dataclasses

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcert.cli import main
from evalcert.data import ScoreMatrix
from evalcert.errors import CertificateError, InfeasibleError, InputError
from evalcert.solvers import ClippedLinear
from evalcert.solvers.gini_dual import huber_certificate, huber_conjugate
from evalcert.solvers.gini_projection import gini_projection, rectangle_qp
from evalcert.solvers.rectangles import (additive_completion, curl, curl_adjoint,
                                         rectangle_operator, reference_parameters)

nan = np.nan
TOL = 1e-6


def _additive(seed: int, K: int = 5, J: int = 6, missing: float = 0.4) -> ScoreMatrix:
    """Additive scores scaled so one cell is exactly +-1, with missing cells (connected)."""
    rng = np.random.default_rng(seed)
    v = np.subtract.outer(rng.normal(0, 0.6, K), rng.normal(0, 0.6, J))
    v /= np.abs(v).max()
    keep = (rng.random((K, J)) > missing) | (np.arange(J)[None, :] == 0)
    keep[0] = True
    return ScoreMatrix.from_array(np.where(keep, v, nan))


def _u(cert, S) -> np.ndarray:
    """u = P' lambda - D' mu of a certificate."""
    u = -curl_adjoint(cert.mu, S.shape, cert.reference)
    u[S.observed] += cert.lambda_
    return u


# --------------------------------------------------------------- Lemma F.1
def test_lemma_F1_basis_rectangles_have_rank_K_minus_1_J_minus_1_and_kernel_additive():
    K, J = 4, 5
    D = rectangle_operator(K, J, reference=(2, 3))
    assert np.linalg.matrix_rank(D.toarray()) == (K - 1) * (J - 1)
    s = np.subtract.outer(np.arange(K) * 0.1, np.arange(J) * 0.05)
    assert np.abs(D @ s.ravel()).max() < 1e-15
    rng = np.random.default_rng(0)
    x, mu = rng.normal(size=(K, J)), rng.normal(size=(K - 1, J - 1))
    np.testing.assert_allclose(D @ x.ravel(), curl(x, (2, 3)).ravel(), atol=1e-14)
    np.testing.assert_allclose(D.T @ mu.ravel(), curl_adjoint(mu, (K, J), (2, 3)).ravel(),
                               atol=1e-14)


@pytest.mark.parametrize("reference", [(0, 0), (3, 1)])
def test_lemma_F1_reference_construction_eq21_recovers_additive_matrix(reference):
    s = np.subtract.outer([0.3, -0.2, 0.1, 0.0], [0.1, -0.4, 0.25])
    theta, b = reference_parameters(s, reference)
    np.testing.assert_allclose(np.subtract.outer(theta, b), s, atol=1e-15)


def test_additive_completion_flags_the_non_additive_cell():
    t = np.array([[0.1, 0.2], [0.3, 0.9]])
    _, _, residual, tree = additive_completion(ScoreMatrix.from_array(t))
    assert len(tree) == 3 and np.abs(residual).max() == pytest.approx(0.5)


def test_huber_conjugate_eq25():
    np.testing.assert_allclose(huber_conjugate(np.array([0.0, 0.5, -1.0, 3.0])),
                               [0.0, 0.125, 0.5, 2.5])


# --------------------------------------------------------------- Prop. 4.1
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rectangle_and_additive_forms_give_the_same_optimum(seed):
    S = _additive(seed)
    a = gini_projection(S, "rectangles")
    b = gini_projection(S, "additive")
    np.testing.assert_allclose(a.s, b.s, atol=1e-6)
    assert a.objective == pytest.approx(b.objective, rel=1e-6)
    assert a.solver_certificate.passed and b.solver_certificate is None


def test_strong_duality_primal_equals_huber_dual_in_F4_scaling():
    S = _additive(0)
    res = gini_projection(S)
    cert = res.certificate
    assert cert.passed
    assert cert.dual_value == pytest.approx(cert.primal_value, rel=1e-8)
    assert res.objective == pytest.approx(2 * cert.primal_value)  # Eq. 5 = 2 F(s)
    assert res.on_box.any()


def test_u_star_is_curl_free_and_in_the_subdifferential():
    S = _additive(1)
    res = gini_projection(S, "rectangles")
    u = _u(res.certificate, S)
    assert np.abs(curl(u)).max() < TOL and res.certificate.curl_free
    off = ~res.on_box
    np.testing.assert_allclose(u[off], res.s[off], atol=TOL)   # u = s off the box
    on = res.on_box
    assert np.all(np.sign(u[on]) == np.sign(res.s[on])) and np.all(np.abs(u[on]) >= 1 - TOL)


def test_solver_multipliers_map_to_lambda_minus_y_and_mu_plus_y():
    S = _additive(2)
    res = gini_projection(S, "rectangles")
    y, n_obs = res.solver_certificate.y, S.n_observed
    K, J = S.shape
    lam, mu = -y[:n_obs], y[n_obs:n_obs + (K - 1) * (J - 1)].reshape(K - 1, J - 1)
    cert = huber_certificate(S, res.s, lam, mu)
    assert cert.passed and cert.relative_gap < 1e-7
    wrong = huber_certificate(S, res.s, -lam, mu)
    assert not wrong.passed


def test_optimum_is_additive_with_gauge_sum_b_zero():
    res = gini_projection(_additive(3), "rectangles")
    np.testing.assert_allclose(np.subtract.outer(res.theta, res.b), res.s, atol=1e-7)
    assert abs(res.b.sum()) < 1e-12


def test_unobserved_cell_saturates_at_plus_one():
    t = np.subtract.outer([0.6, 0.1, -0.3], [0.0, -0.4, 0.2])
    t[0, 1] = nan
    res = gini_projection(ScoreMatrix.from_array(t))
    assert res.s[0, 1] == pytest.approx(1.0, abs=1e-7) and res.on_box[0, 1]


def test_disconnected_design_objective_picks_offsets_against_the_box():
    # components {row 0; items 0, 1} and {row 1; item 2}: the box pins the offset
    S = ScoreMatrix.from_array(np.array([[1.0, -1.0, nan], [nan, nan, 0.9]]))
    for method in ("rectangles", "additive"):
        res = gini_projection(S, method)
        np.testing.assert_allclose(res.s, [[1, -1, 0.9], [1, -1, 0.9]], atol=1e-6)
        assert res.objective == pytest.approx(5.62, abs=1e-6)
        assert res.certificate.passed and res.certificate.curl_free


def test_curl_free_u_star_fails_when_the_box_pins_the_offset_between_components():
    # App. F.4 claims u* = P' lambda - D' mu* is additive. Here the box binds at the
    # unobserved cross cell (0, 3): the interior cells force an additive u to be
    # s there (1.0), but u must be orthogonal to the additive matrix that is 1 on
    # agent 1 and -1 on items 1, 3, which forces u_03 = 1.25. No dual optimum is
    # curl-free; the least curl is 0.25. Strong duality still holds.
    S = ScoreMatrix.from_array(np.array([[0.0, nan, 1.0, nan], [nan, -1.0, nan, 0.75]]))
    res = gini_projection(S, "rectangles")
    np.testing.assert_allclose(res.s, [[0, -0.75, 1, 1], [-0.25, -1, 0.75, 0.75]], atol=1e-9)
    assert res.certificate.passed and not res.certificate.curl_free
    assert res.certificate.u_curl == pytest.approx(0.25, abs=1e-6)
    assert _u(res.certificate, S)[0, 3] == pytest.approx(1.25, abs=1e-6)


def test_disconnected_design_interior_offset_minimises_sum_of_squares():
    S = ScoreMatrix.from_array(np.array([[0.5, nan], [nan, -0.1]]))
    res = gini_projection(S)
    # s01 = 0.5 + d, s10 = -0.1 - d: least squares at d = -0.3
    np.testing.assert_allclose(res.s, [[0.5, 0.2], [0.2, -0.1]], atol=1e-6)


# --------------------------------------------------------------- infeasibility
def test_non_additive_data_raise_infeasible_naming_the_penalised_form():
    S = ScoreMatrix.from_array(np.array([[0.1, 0.2], [0.3, 0.9]]))
    with pytest.raises(InfeasibleError, match="penalised=True") as info:
        gini_projection(S, "rectangles")
    assert "not additive" in str(info.value)


def test_additive_data_whose_completion_leaves_the_box_are_infeasible():
    S = ScoreMatrix.from_array(np.array([[0.9, nan], [-0.9, 0.2]]))  # s01 = 2.0
    with pytest.raises(InfeasibleError, match=r"leave the box.*\+2"):
        gini_projection(S)


def test_offsets_between_components_that_cannot_fit_the_box_are_infeasible():
    # items 0, 1 span 2 on row 0, so every other agent needs theta = theta_0;
    # rows 1 and 2 share item 2 with different scores: no offset works
    S = ScoreMatrix.from_array(np.array([[1.0, -1.0, nan, nan], [nan, nan, 0.9, -0.9],
                                         [nan, nan, 0.95, nan]]))
    with pytest.raises(InfeasibleError, match="offsets between the 2 components"):
        gini_projection(S)
    fits = ScoreMatrix.from_array(np.where(S.values == 0.95, 0.9, S.values))
    np.testing.assert_allclose(gini_projection(fits).s[:, :2], [[1, -1]] * 3, atol=1e-6)


# --------------------------------------------------------------- penalised form
def _paper_penalised(S: ScoreMatrix, lam: float) -> tuple[np.ndarray, float]:
    """App. F.4 end, written independently: no gauge (the ridge fixes it)."""
    K, J = S.shape
    rows, cols, t = S.cells()
    th, b = cp.Variable(K), cp.Variable(J)
    obj = 0.5 * cp.sum_squares(th[rows] - b[cols] - t) + lam * (cp.sum_squares(th)
                                                                + cp.sum_squares(b))
    prob = cp.Problem(cp.Minimize(obj), [cp.max(th) - cp.min(b) <= 1, cp.max(b) - cp.min(th) <= 1])
    prob.solve(solver="CLARABEL")
    return np.subtract.outer(th.value, b.value), float(prob.value)


def _noisy(seed: int = 4) -> ScoreMatrix:
    rng = np.random.default_rng(seed)
    v = np.subtract.outer(rng.normal(0, 0.5, 5), rng.normal(0, 0.5, 6))
    v = np.clip(v + 0.1 * rng.normal(size=v.shape), -1, 1)
    keep = rng.random(v.shape) > 0.3
    keep[0], keep[:, 0] = True, True
    return ScoreMatrix.from_array(np.where(keep, v, nan))


def test_penalised_form_is_half_of_eq7_with_doubled_ridge():
    S, lam = _noisy(), 1e-3
    res = gini_projection(S, penalised=True, lam=lam)
    fit = ClippedLinear(lam=2 * lam, box="all", solver="clarabel").fit(S).result_
    assert res.objective == pytest.approx(0.5 * fit.objective, rel=1e-8)
    np.testing.assert_allclose(res.s, np.subtract.outer(fit.theta, fit.b), atol=1e-7)
    assert res.clipped_linear.certificate.passed and res.on_box.any()


@pytest.mark.parametrize("lam, atol", [(0.0, 1e-6), (1e-6, 1e-5)])
def test_penalised_form_matches_the_paper_form_up_to_the_gauge(lam, atol):
    # ClippedLinear fixes sum b = 0; the paper leaves the gauge to the ridge
    # (sum theta + sum b = 0), so s agrees exactly at lam = 0 and to O(lam) above.
    S = _noisy()
    res = gini_projection(S, penalised=True, lam=lam)
    s, value = _paper_penalised(S, lam)
    np.testing.assert_allclose(res.s, s, atol=atol)
    assert res.objective == pytest.approx(value, abs=atol)


def test_noisy_data_fit_penalised_but_not_hard():
    S = _noisy()
    with pytest.raises(InfeasibleError):
        gini_projection(S)
    assert gini_projection(S, penalised=True).clipped_linear.certificate.passed


# --------------------------------------------------------------- certificates and API
def test_certificate_verify_recomputes_and_rejects_a_tampered_point():
    S = _additive(5)
    cert = gini_projection(S).certificate
    assert cert.verify(S).passed
    bad = dataclasses.replace(cert, s=cert.s + 1e-3)
    with pytest.raises(CertificateError):
        bad.verify(S)


def test_osqp_backend_agrees_with_clarabel():
    S = _additive(6)
    ref = gini_projection(S, "rectangles")
    for method in ("rectangles", "additive"):
        res = gini_projection(S, method, solver="osqp")
        np.testing.assert_allclose(res.s, ref.s, atol=1e-5)
        assert res.certificate.passed


def test_rectangle_qp_is_standard_form_with_one_row_per_constraint():
    S = _additive(0, K=3, J=4)
    qp = rectangle_qp(S)
    assert qp.n == 12 and qp.m == S.n_observed + 2 * 3 + 12


def test_input_errors_name_the_fix():
    S = _additive(0)
    with pytest.raises(InputError, match="method"):
        gini_projection(S, "rectangle")
    with pytest.raises(InputError, match="CVXPY"):
        gini_projection(S, solver="native")
    big = ScoreMatrix.from_array(np.zeros((201, 201)))
    with pytest.raises(InputError, match="method='additive'"):
        gini_projection(big, "rectangles")


def test_summary_and_json():
    res = gini_projection(_additive(0))
    text = res.summary()
    assert "Huber-dual certificate PASSED" in text and "curl-free" in text
    d = res.to_dict()
    assert d["method"] == "additive" and len(d["s"]) == 5 and d["certificate"]["passed"]


def test_cli_gini_verb_prints_certificate_and_suggests_penalised(tmp_path, capsys):
    good, noisy = tmp_path / "good.csv", tmp_path / "noisy.csv"
    good.write_text("agent,i1,i2,i3\na,0.5,,0.1\nb,0.2,0.6,-0.2\nc,,0.1,-0.7\n")
    noisy.write_text("agent,i1,i2\na,0.1,0.2\nb,0.3,0.9\n")
    assert main(["gini", str(good), "--json", str(tmp_path / "out.json")]) == 0
    assert "Huber-dual certificate PASSED" in capsys.readouterr().out
    assert main(["gini", str(noisy)]) == 2
    assert "--penalised" in capsys.readouterr().err
    assert main(["gini", str(noisy), "--penalised"]) == 0


# --------------------------------------------------------------- properties
@st.composite
def additive_matrices(draw):
    K, J = draw(st.integers(2, 6)), draw(st.integers(2, 6))
    theta = np.array(draw(st.lists(st.floats(-1, 1), min_size=K, max_size=K)))
    b = np.array(draw(st.lists(st.floats(-1, 1), min_size=J, max_size=J)))
    v = np.subtract.outer(theta, b)
    v /= max(1.0, np.abs(v).max()) if draw(st.booleans()) else max(1e-9, np.abs(v).max())
    keep = np.array(draw(st.lists(st.booleans(), min_size=K * J, max_size=K * J))).reshape(K, J)
    blocks = [(slice(0, K), slice(0, J))]
    if draw(st.booleans()):  # two diagonal blocks: a disconnected design
        k, j = K // 2, J // 2
        keep[:k, j:] = keep[k:, :j] = False
        blocks = [(slice(0, k), slice(0, j)), (slice(k, K), slice(j, J))]
    for rows, cols in blocks:
        sub = keep[rows, cols]
        n, m = sub.shape
        sub[np.arange(n), np.arange(n) % m] = True
        sub[np.arange(m) % n, np.arange(m)] = True
    return ScoreMatrix.from_array(np.where(keep, v, nan))


@settings(max_examples=30)
@given(additive_matrices())
def test_property_forms_agree_with_zero_gap_and_curl_free_multipliers_if_connected(S):
    a = gini_projection(S, "rectangles")
    b = gini_projection(S, "additive")
    np.testing.assert_allclose(a.s, b.s, atol=1e-5)
    for res in (a, b):
        cert = res.certificate
        assert cert.passed and res.solver_deviation < 1e-3
        assert cert.curl_free or not S.connectivity().is_connected
        u = _u(cert, S)
        np.testing.assert_allclose(np.clip(u, -1, 1), res.s, atol=1e-6)
        np.testing.assert_allclose(res.s[S.observed], S.values[S.observed], atol=1e-6)
