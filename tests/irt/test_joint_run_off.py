"""Joint ML fits whose estimates run off to infinity (separation).

Two bugs found on small 2PL data (60 models x 12 items, every seed): the
Bernoulli objective fell without bound once a logit passed its clip at 700
(``-log q`` stayed at 700 while ``y * eta`` kept growing), so joint 2PL ML
reported positive log-likelihoods and "not stationary"; and when the joint
likelihood really has no finite maximum the error told users to raise
``max_iter``, which cannot help.
"""

import warnings

import numpy as np
import pytest

from evalcert.errors import ConvergenceError
from evalcert.irt import TwoPL
from evalcert.irt.base import Bernoulli


def test_bernoulli_nll_is_exact_beyond_the_clip():
    eta = np.array([[-2000.0, -750.0, -5.0, 0.0, 5.0, 699.0, 701.0, 750.0, 2000.0]])
    for y in (np.zeros_like(eta), np.ones_like(eta)):
        val, grad, _ = Bernoulli().nll(eta, y, np.ones_like(eta), np.zeros(0))
        exact = np.sum(np.logaddexp(0.0, eta) - y * eta)     # softplus(eta) - y eta >= 0
        assert abs(val - exact) <= 1e-12 * max(1.0, exact)
        assert val >= 0
        assert np.allclose(grad, 1 / (1 + np.exp(-np.clip(eta, -700, 700))) - y)
    # a single cell: -log p(y | eta) never goes below 0, however large eta gets
    for e in (1e3, 1e6):
        v = Bernoulli().nll(np.array([[e]]), np.array([[1.0]]), np.ones((1, 1)), np.zeros(0))[0]
        assert 0 <= v < 1e-300 or v == 0.0


def _small_2pl(seed):
    rng = np.random.default_rng(seed)
    th, b, a = rng.normal(size=60), rng.normal(size=12), rng.lognormal(0, .3, 12)
    return (rng.random((60, 12)) < 1 / (1 + np.exp(-a * (th[:, None] - b)))).astype(float)


@pytest.mark.parametrize("seed", [0, 5])
def test_joint_2pl_ml_without_a_finite_maximum_says_so(seed):
    Y = _small_2pl(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ConvergenceError, match="run off to infinity") as info:
            TwoPL(method="jml", max_iter=300).fit(Y)
    assert "method='map'" in str(info.value) and info.value.status == "diverged"
    assert "raise max_iter" not in str(info.value)
    # the same data with a prior, or marginally, fit (no separation there)
    assert np.all(np.isfinite(TwoPL(method="map").fit(Y).discriminations_))
    assert np.all(np.isfinite(TwoPL(method="mml").fit(Y).discriminations_))


def test_a_finite_joint_fit_is_not_called_divergent():
    rng = np.random.default_rng(3)
    th, b, a = rng.normal(size=200), rng.normal(size=60), rng.lognormal(0, .3, 60)
    Y = (rng.random((200, 60)) < 1 / (1 + np.exp(-a * (th[:, None] - b)))).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = TwoPL(method="jml").fit(Y)    # 60 items per model: the joint MLE exists
    assert est.result_.converged and np.nanmax(np.abs(est.abilities_)) < 10
