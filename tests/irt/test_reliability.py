"""Marginal and empirical reliability (mirt's marginal_rxx and empirical_rxx)."""

from __future__ import annotations

import numpy as np
import pytest

from evalcert.errors import InputError
from evalcert.irt import GradedResponse, Rasch, TwoPL
from evalcert.irt.reliability import empirical_rxx, information_at, marginal_rxx


def _twopl(n, m, seed):
    rng = np.random.default_rng(seed)
    theta, a, b = rng.normal(size=n), rng.lognormal(0, 0.3, m), rng.normal(size=m)
    Y = (rng.random((n, m)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)
    return Y, theta


@pytest.mark.parametrize("m", [10, 40])
def test_reliabilities_estimate_the_squared_correlation_with_the_true_abilities(m):
    # for EAPs, Var(EAP) / Var(theta) = corr(EAP, theta)^2 in the population
    Y, theta = _twopl(3000, m, seed=m)
    est = TwoPL(method="mml").fit(Y)
    truth = np.corrcoef(est.abilities_, theta)[0, 1] ** 2
    assert abs(marginal_rxx(est) - truth) < 0.03
    assert abs(empirical_rxx(est, method="posterior") - truth) < 0.03
    # more items, more reliable; the information form uses 1/I(theta_hat), larger errors
    # than the posterior's at the extremes, so it is lower
    assert empirical_rxx(est) <= empirical_rxx(est, method="posterior") + 0.02


def test_marginal_rxx_is_the_density_weighted_local_reliability():
    Y, _ = _twopl(400, 15, seed=3)
    est = Rasch(method="mml").fit(Y)
    theta = np.linspace(-6, 6, 2001)                   # a fine grid: the integral itself
    sd = est.population_sd_
    w = np.exp(-0.5 * (theta / sd) ** 2)
    w /= w.sum()
    info = information_at(est, theta)
    ref = float(w @ (info / (info + 1 / (w @ theta ** 2))))
    assert abs(marginal_rxx(est) - ref) < 1e-3
    assert abs(marginal_rxx(est, n_points=2001) - ref) < 1e-9


def test_graded_information_matches_a_numerical_fisher_information():
    rng = np.random.default_rng(1)
    theta = rng.normal(size=300)
    Y = 1 + (theta[:, None, None] + rng.logistic(size=(300, 5, 1)) > [-1.0, 0.0, 1.0]).sum(2)
    est = GradedResponse(standard_errors=False).fit(Y)
    t, h = np.array([0.3]), 1e-5
    a, b = est.discriminations_, est.thresholds_

    def probs(x):
        S = 1 / (1 + np.exp(-a[:, None] * (x - b)))
        full = np.column_stack([np.ones(len(a)), S, np.zeros(len(a))])
        return full[:, :-1] - full[:, 1:]
    dP = (probs(t[0] + h) - probs(t[0] - h)) / (2 * h)
    np.testing.assert_allclose(information_at(est, t)[0], np.sum(dP ** 2 / probs(t[0])),
                               rtol=1e-6)
    assert 0 < marginal_rxx(est) < 1 and 0 < empirical_rxx(est) < 1


def test_refusals():
    with pytest.raises(InputError, match="not fitted"):
        marginal_rxx(TwoPL())
    Y, _ = _twopl(100, 10, seed=0)
    est = TwoPL(method="mml").fit(Y)
    with pytest.raises(InputError, match="method"):
        empirical_rxx(est, method="wle")
    with pytest.raises(InputError, match="n_points"):
        marginal_rxx(est, n_points=1)
