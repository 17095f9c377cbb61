"""4PL and 3PLu (upper asymptote) by marginal ML: exact gradient, recovery, model choice."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from evalcert.errors import ConvergenceError, InputError
from evalcert.irt.fourpl import FourPL
from evalcert.irt.estimation.mml_direct import MarginalData


def simulate_4pl(n, m, seed, floor=(0.1, 0.3), top=(0.8, 0.97)):
    rng = np.random.default_rng(seed)
    theta, b, a = rng.normal(size=n), rng.normal(size=m), rng.lognormal(0, 0.3, m)
    c, u = rng.uniform(*floor, m), rng.uniform(*top, m)
    p = c + (u - c) / (1 + np.exp(-a * (theta[:, None] - b)))
    return (rng.random(p.shape) < p).astype(float), a, b, c, u


@pytest.mark.parametrize("options", [{}, {"guessing": 0.0}, {"upper_prior": None},
                                     {"guessing_prior": None, "slope_prior": 0.0}])
def test_gradient_is_exact(options):
    Y, *_ = simulate_4pl(60, 4, seed=1)
    est = FourPL(**options)
    md, m = MarginalData(Y.astype(int), 2, 41), 4
    free = 2 + (est.guessing is None) + (est.upper is None)
    x = np.random.default_rng(2).normal(0, 0.5, free * m)
    # the asymptotes are probabilities (boxed in [0, 1]): floors low, ceilings high
    x[2 * m:] = np.random.default_rng(3).uniform(0.05, 0.3, x.size - 2 * m)
    if est.upper is None:
        x[-m:] = 1 - x[-m:]
    _, grad = est._objective(x, md, m)
    num = approx_fprime(x, lambda v: est._objective(v, md, m)[0], 1e-6)
    np.testing.assert_allclose(grad, num, rtol=1e-4, atol=1e-4)


def test_4pl_recovers_floors_and_ceilings_better_than_their_priors():
    # 3000 models x 20 items (measured: corr(b) 0.95, mean abs error c 0.053, u 0.081)
    Y, a, b, c, u = simulate_4pl(3000, 20, seed=0)
    est = FourPL(standard_errors=False).fit(Y)
    assert est.result_.converged and est.model_name == "4pl"
    assert np.corrcoef(est.difficulties_, b)[0, 1] > 0.9
    assert np.abs(est.guessing_ - c).mean() < np.abs(5 / 20 - c).mean()     # prior modes
    assert np.abs(est.upper_ - u).mean() < np.abs(15 / 20 - u).mean()
    assert np.abs(est.upper_ - u).mean() < 0.1
    P = est.predict_proba()
    assert P.shape == Y.shape and np.all((P >= est.guessing_) & (P <= est.upper_ + 1e-12))


def test_fixed_upper_one_is_the_3pl():
    from evalcert.irt import ThreePL
    Y, *_ = simulate_4pl(500, 6, seed=5, top=(1.0, 1.0))
    four = FourPL(upper=1.0, standard_errors=False).fit(Y)
    three = ThreePL(standard_errors=False).fit(Y)
    np.testing.assert_allclose(four.guessing_, three.guessing_, atol=1e-3)
    np.testing.assert_allclose(four.difficulties_, three.difficulties_, atol=1e-2)
    assert np.all(four.upper_ == 1.0)


def test_refusals_and_runaway_slopes():
    with pytest.raises(InputError, match="upper"):
        FourPL(upper=1.5).fit(np.eye(4))
    with pytest.raises(InputError, match="exceed"):
        FourPL(guessing=0.3, upper=0.2).fit(np.eye(4))
    rng = np.random.default_rng(0)
    theta = rng.normal(size=60)
    Y = (rng.random((60, 12)) < 1 / (1 + np.exp(-theta[:, None]))).astype(float)
    Y[:, 0] = theta > 0                               # item0 splits the models perfectly
    with pytest.raises(ConvergenceError, match="slope MLE does not exist for 1 item: item0"):
        FourPL(slope_prior=0).fit(Y)
