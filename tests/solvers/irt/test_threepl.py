"""3PL (guessing floor) by marginal ML: likelihood, gradient, recovery, scoring, comparison."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import approx_fprime

from evalcert.errors import InputError
from evalcert.solvers.irt import Rasch, TwoPL, likelihood_ratio_test, score_models
from evalcert.solvers.irt.marginal import MarginalData
from evalcert.solvers.irt.threepl import ThreePL


def simulate_3pl(n, m, seed, c=None):
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=n), rng.normal(size=m)
    a = rng.lognormal(0, 0.25, m)
    c = rng.uniform(0.1, 0.3, m) if c is None else np.full(m, c)
    p = c + (1 - c) / (1 + np.exp(-a * (theta[:, None] - b)))
    return (rng.random(p.shape) < p).astype(float), theta, a, b, c


def _marginal_by_quad(Y, O, a, b, c):
    total = 0.0
    for i in range(Y.shape[0]):
        def f(t):
            p = c + (1 - c) / (1 + np.exp(-a * (t - b)))
            ll = np.sum(O[i] * (Y[i] * np.log(p) + (1 - Y[i]) * np.log(1 - p)))
            return np.exp(ll - 0.5 * t * t) / np.sqrt(2 * np.pi)
        total += np.log(quad(f, -12, 12, epsabs=1e-15, epsrel=1e-12, limit=200)[0])
    return total


def test_marginal_loglik_matches_brute_force_quadrature():
    Y, *_ = simulate_3pl(25, 5, seed=1)
    Y[3, :2] = np.nan                                      # missing cells
    est = ThreePL().fit(Y)
    O = ~np.isnan(Y)
    ref = _marginal_by_quad(np.nan_to_num(Y), O, est.discriminations_, est.difficulties_,
                            est.guessing_)
    assert est.loglik_ == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("guessing", [None, 0.2])
def test_gradient_is_exact(guessing):
    Y, *_ = simulate_3pl(40, 6, seed=2)
    est = ThreePL(guessing=guessing)
    md = MarginalData(Y.astype(int), 2, 61)
    x = np.random.default_rng(0).normal(0.5, 0.3, 6 * (2 if guessing else 3))
    num = approx_fprime(x, lambda v: est._objective(v, md, 6)[0], 1e-6)
    np.testing.assert_allclose(est._objective(x, md, 6)[1], num, rtol=1e-4, atol=1e-4)


def test_recovery_with_estimated_and_fixed_floor():
    Y, theta, a, b, c = simulate_3pl(1500, 12, seed=3)
    est = ThreePL().fit(Y)
    assert np.corrcoef(est.difficulties_, b)[0, 1] > 0.95
    assert np.mean(np.abs(est.guessing_ - c)) < 0.07
    assert np.corrcoef(est.abilities_, theta)[0, 1] > 0.7          # 12 items: reliability ~0.6
    assert np.all(np.isfinite(est.guessing_se_)) and est.n_parameters_ == 36
    # chance fixed at 1/4 on data generated with it: difficulties and slopes recovered
    Y, theta, a, b, c = simulate_3pl(1500, 12, seed=4, c=0.25)
    fixed = ThreePL(guessing=0.25).fit(Y)
    assert np.all(fixed.guessing_ == 0.25) and fixed.n_parameters_ == 24
    assert np.max(np.abs(fixed.difficulties_ - b)) < 0.35
    # the 2PL has no floor: it flattens the slopes instead
    two = TwoPL(method="mml", slope_prior=0.0).fit(Y)
    assert np.mean(two.discriminations_) < np.mean(fixed.discriminations_)
    assert np.mean(np.abs(fixed.discriminations_ - a)) < np.mean(np.abs(two.discriminations_ - a))


def test_scoring_and_lr_test_with_3pl():
    Y, theta, *_ = simulate_3pl(800, 10, seed=5)
    est = ThreePL().fit(Y)
    res = score_models(est, Y[:50], method="wle")
    assert np.corrcoef(res.abilities, theta[:50])[0, 1] > 0.7
    lr = likelihood_ratio_test(TwoPL(method="mml", slope_prior=0.0).fit(Y), est)
    assert lr.df == 10 and lr.statistic >= 0 and "prior" in " ".join(lr.notes)
    with pytest.raises(InputError, match="not nested"):
        likelihood_ratio_test(Rasch(method="mml").fit(Y), ThreePL(guessing=0.25).fit(Y))


def test_refusals():
    Y, *_ = simulate_3pl(50, 5, seed=6)
    with pytest.raises(InputError, match="guessing"):
        ThreePL(guessing=1.0).fit(Y)
    with pytest.raises(InputError, match="guessing_prior"):
        ThreePL(guessing_prior=(0.5, 2)).fit(Y)
    with pytest.raises(InputError, match="score_models"):
        ThreePL().fit(Y).fit_models(Y)
