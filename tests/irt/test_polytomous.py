"""Graded response model (judge scores 1-10) by marginal ML."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.integrate import quad
from scipy.optimize import approx_fprime

from evalcert.errors import ConvergenceError, InputError
from evalcert.irt.estimation.mml_direct import MarginalData
from evalcert.irt.polytomous import GradedResponse


def simulate_grm(n, m, K, seed):
    rng = np.random.default_rng(seed)
    theta, a = rng.normal(size=n), rng.lognormal(0, 0.25, m)
    b = np.sort(rng.normal(0, 1.2, (m, K - 1)), axis=1)
    S = 1 / (1 + np.exp(-a[None, :, None] * (theta[:, None, None] - b[None])))
    return 1 + (rng.random((n, m, 1)) < S).sum(2).astype(float), theta, a, b


def _probs(t, a, b):
    S = np.concatenate([[1.0], 1 / (1 + np.exp(-a * (t - b))), [0.0]])
    return S[:-1] - S[1:]


def test_marginal_loglik_matches_brute_force_quadrature():
    Y, *_ = simulate_grm(20, 4, 4, seed=1)
    Y[2, 1] = np.nan
    est = GradedResponse().fit(Y)
    total = 0.0
    for i in range(Y.shape[0]):
        def f(t):
            ll = sum(np.log(_probs(t, est.discriminations_[j], est.thresholds_[j])[int(y) - 1])
                     for j, y in enumerate(Y[i]) if not np.isnan(y))
            return np.exp(ll - 0.5 * t * t) / np.sqrt(2 * np.pi)
        total += np.log(quad(f, -12, 12, epsabs=1e-15, epsrel=1e-12, limit=200)[0])
    assert est.loglik_ == pytest.approx(total, rel=1e-9)


@pytest.mark.parametrize("slope_prior", [4.0, 0.0])   # log-normal prior in log a; pure ML in a
def test_gradient_is_exact(slope_prior):
    Y, *_ = simulate_grm(30, 3, 5, seed=2)
    est = GradedResponse(slope_prior=slope_prior)
    md = MarginalData((Y - 1).astype(int), 5, 61)
    x = np.random.default_rng(0).normal(0.0, 0.5, 3 * 5)        # a, d1, 3 gaps per item
    num = approx_fprime(x, lambda v: est._objective(v, md, 3, 5)[0], 1e-6)
    np.testing.assert_allclose(est._objective(x, md, 3, 5)[1], num, rtol=1e-4, atol=1e-4)


def test_recovery_of_a_ten_point_judge_scale():
    Y, theta, a, b = simulate_grm(1000, 8, 10, seed=3)
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(1000)],
                         columns=[f"prompt{j}" for j in range(8)])
    est = GradedResponse().fit(frame)
    assert est.categories_ == tuple(range(1, 11)) and est.thresholds_.shape == (8, 9)
    assert np.corrcoef(est.thresholds_.ravel(), b.ravel())[0, 1] > 0.97
    assert np.all(np.diff(est.thresholds_, axis=1) > 0)
    assert np.corrcoef(est.abilities_, theta)[0, 1] > 0.75
    assert np.all(np.isfinite(est.thresholds_se_)) and est.n_parameters_ == 80
    P = est.predict_proba()
    np.testing.assert_allclose(P.sum(2), 1.0)
    assert est.predict_expected().shape == (1000, 8)
    assert est.result_.item_names[0] == "prompt0"


def test_threshold_ses_match_a_numerical_delta_method():
    Y, *_ = simulate_grm(300, 3, 4, seed=4)
    est = GradedResponse().fit(Y)
    m, K = 3, 4
    md = MarginalData((Y - 1).astype(int), K, 61)
    # rebuild x from the estimates and differentiate b(x) numerically
    a, d = est.discriminations_, -est.thresholds_ * est.discriminations_[:, None]
    x = np.concatenate([np.log(a), d[:, 0], np.log(-np.diff(d, axis=1)).ravel()])  # log a
    from evalcert.irt.estimation.mml_direct import maximise
    out = maximise(lambda v: est._objective(v, md, m, K), x, tol=1e-5, max_iter=50, what="t")
    def thresholds(v):
        aa, dd, *_ = est._intercepts(v, m, K)
        return (-dd / aa[:, None]).ravel()
    J = np.array([approx_fprime(out["x"], lambda v, k=k: thresholds(v)[k], 1e-7)
                  for k in range(m * (K - 1))])
    ref = np.sqrt(np.diag(J @ out["cov"] @ J.T)).reshape(m, K - 1)
    np.testing.assert_allclose(est.thresholds_se_, ref, rtol=1e-3)


def test_refusals():
    with pytest.raises(InputError, match="integer"):
        GradedResponse().fit(np.array([[1.5, 2.0], [1.0, 2.0]]))
    with pytest.raises(InputError, match="distinct categories"):
        GradedResponse().fit(np.ones((5, 3)))
    with pytest.raises(InputError, match="distinct categories"):
        GradedResponse().fit(np.arange(100.0).reshape(10, 10))


def test_pure_ml_slope_that_does_not_exist_is_refused_with_the_item():
    # old code: L-BFGS stopped "converged" with the first slope ~ 120 (gradient underflow)
    Y, *_ = simulate_grm(100, 10, 3, seed=5)
    rest = Y[:, 1:].sum(1)
    Y[:, 0] = 1 + (rest > np.quantile(rest, 1 / 3)) + (rest > np.quantile(rest, 2 / 3))
    with pytest.raises(ConvergenceError, match="slope MLE does not exist for 1 item: item0"):
        GradedResponse(slope_prior=0).fit(Y)
    est = GradedResponse().fit(Y)                              # the default prior keeps it
    assert 1 < est.discriminations_[0] < 10 and np.all(np.abs(est.thresholds_[0]) < 2)


@pytest.mark.parametrize("slope_prior", [4.0, 0.0])
def test_em_reaches_the_lbfgs_optimum_of_the_same_criterion(slope_prior):
    # the EM engine (graded_em) against L-BFGS on the exact-gradient objective, on 10-point
    # scores from 80 models, where several items leave middle categories unused (their
    # thresholds meet: the optimum is on the boundary gap = 0, approached in log gaps)
    rng = np.random.default_rng(7)
    n, m, K = 80, 12, 10
    theta, a = rng.normal(size=n), rng.lognormal(0, 0.3, m)
    cuts = np.sort(rng.normal(size=(m, K - 1)), axis=1) * 1.5
    S = 1 / (1 + np.exp(-a[None, :, None] * (theta[:, None, None] - cuts[None])))
    Y = (rng.random((n, m, 1)) < S).sum(2)
    used = np.array([[np.any(Y[:, j] == k) for k in range(K)] for j in range(m)])
    assert (~used[:, 1:-1]).any()                              # a middle category is empty
    est = GradedResponse(slope_prior=slope_prior, tol=1e-7, standard_errors=False).fit(Y)
    md = MarginalData(Y.astype(int), K, 61)
    gaps = np.maximum(-np.diff(-est.thresholds_ * est.discriminations_[:, None], axis=1),
                      1e-300)
    d1 = -est.thresholds_[:, 0] * est.discriminations_
    u = np.log(est.discriminations_) if slope_prior else est.discriminations_
    x = np.concatenate([u, d1, np.log(gaps).ravel()])
    from evalcert.irt.estimation.mml_direct import maximise
    ref = maximise(lambda v: est._objective(v, md, m, K), x + 0.05, tol=1e-6,
                   max_iter=5000, what="t", max_se_params=-1)
    em_value = -est._objective(x, md, m, K)[0]
    assert em_value >= ref["value"] * -1 - 1e-4                 # no worse than L-BFGS's
    assert abs(em_value + ref["value"]) < 1e-3
    assert est.loglik_ < 0 and est.result_.solver.startswith("EM")
