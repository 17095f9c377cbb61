"""A slope whose ML estimate does not exist (issue 12, item 2: eRm's raschdat2 under 2PL).

raschdat2 itself is not used: it ships only inside eRm (GPL) as a binary ``.rda`` and its
values are published nowhere in a form we may copy. The same situation is simulated: an
item that splits the models perfectly by their rest score (a Guttman item), whose marginal
ML slope is infinite.
"""

from __future__ import annotations

import numpy as np
import pytest

from evalcert.errors import ConvergenceError
from evalcert.irt import ThreePL, TwoPL
from evalcert.irt.estimation.mml_direct import MarginalData


def guttman(n, m=20, seed=0):
    rng = np.random.default_rng(seed)
    theta, b, a = rng.normal(size=n), rng.normal(size=m), rng.lognormal(0, 0.3, m)
    Y = (rng.random((n, m)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)
    rest = Y[:, 1:].sum(1)
    Y[:, 0] = rest > np.median(rest)
    return Y


@pytest.mark.parametrize("n", [60, 200])
def test_the_refused_slope_mle_really_does_not_exist(n):
    # 2PL = 3PL with the floor fixed at 0. On a 1201-node grid (spacing 0.01, far finer than
    # any slope tried) the marginal log-likelihood keeps rising as item0's slope grows.
    Y = guttman(n)
    with pytest.raises(ConvergenceError, match="slope MLE does not exist for 1 item: item0"):
        ThreePL(guessing=0.0, slope_prior=0).fit(Y)
    est = ThreePL(guessing=0.0, intercept_prior=0.0).fit(Y)       # a finite starting point
    x = np.concatenate([est.discriminations_, -est.discriminations_ * est.difficulties_])
    md, ml, m = MarginalData(Y.astype(int), 2, 1201), ThreePL(guessing=0.0, slope_prior=0,
                                                              intercept_prior=0.0), Y.shape[1]
    values = []
    for a0 in (2.0, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0):
        y = x.copy()
        y[0], y[m] = a0, -a0 * est.difficulties_[0]
        values.append(-ml._objective(y, md, m)[0])
    assert np.all(np.diff(values) > 0)


@pytest.mark.parametrize("quadrature", ["adaptive", "auto"])
def test_2pl_pure_ml_names_the_item_whose_slope_mle_does_not_exist(quadrature):
    # the 2PL's EM (mml.py) stops on the same shared check (marginal.diverging_slopes); before,
    # the grid E-step blamed the quadrature and the adaptive one stopped with a slope of 15-20
    with pytest.raises(ConvergenceError, match="slope MLE does not exist for 1 item: item0"):
        TwoPL(method="mml", slope_prior=0, quadrature=quadrature).fit(guttman(60))


def test_2pl_default_prior_keeps_the_slope_finite():
    est = TwoPL(method="mml").fit(guttman(60))
    assert 1 < est.discriminations_[0] < 10 and abs(est.difficulties_[0]) < 1
