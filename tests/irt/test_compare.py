"""AIC/BIC and the Rasch-vs-2PL likelihood-ratio test."""

from __future__ import annotations

import numpy as np
import pytest

from evalcert.errors import InputError
from evalcert.irt import Rasch, TwoPL
from evalcert.irt.compare import (information_criteria, likelihood_ratio_test,
                                          n_parameters)
from tests.irt.conftest import simulate


def test_parameter_counts_and_criteria():
    Y, *_ = simulate(200, 12, seed=31)
    mml, cml = Rasch(method="mml").fit(Y), Rasch(method="cml").fit(Y)
    assert n_parameters(mml) == 13 and n_parameters(cml) == 11
    s = information_criteria(mml)
    assert s.aic == pytest.approx(-2 * mml.loglik_ + 26)
    assert s.bic == pytest.approx(-2 * mml.loglik_ + 13 * np.log(200))
    assert n_parameters(TwoPL(method="mml").fit(Y)) == 24
    with pytest.raises(InputError, match="no plain likelihood"):
        n_parameters(Rasch(method="map").fit(Y))


def test_lr_test_accepts_rasch_on_rasch_data_and_rejects_it_on_2pl_data():
    Y, *_ = simulate(800, 15, seed=32)
    res = likelihood_ratio_test(Rasch(method="mml").fit(Y),
                                TwoPL(method="mml", slope_prior=0.0).fit(Y))
    assert res.df == 14 and res.p_value > 0.01
    Y, *_ = simulate(800, 15, seed=33, slopes=True)
    Y2 = Y.copy()
    rng = np.random.default_rng(0)
    a = np.r_[np.full(7, 0.4), np.full(8, 2.0)]                    # very unequal slopes
    theta, b = rng.normal(size=800), rng.normal(size=15)
    Y2 = (rng.random((800, 15)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)
    res = likelihood_ratio_test(Rasch(method="mml").fit(Y2),
                                TwoPL(method="mml", slope_prior=0.0).fit(Y2))
    assert res.p_value < 1e-6 and res.statistic > 0
    assert "LR test rasch vs 2pl" in res.summary()


def test_lr_test_refusals():
    Y, *_ = simulate(150, 10, seed=34)
    mml, cml = Rasch(method="mml").fit(Y), Rasch(method="cml").fit(Y)
    two = TwoPL(method="mml").fit(Y)
    with pytest.raises(InputError, match="cannot compare a conditional"):
        likelihood_ratio_test(cml, two)
    with pytest.raises(InputError, match="not nested"):
        likelihood_ratio_test(two, mml)
    with pytest.raises(InputError, match="chi-square"):
        jml = Rasch(method="jml").fit(Y)
        likelihood_ratio_test(jml, jml)
    with pytest.raises(InputError, match="different data"):
        likelihood_ratio_test(mml, TwoPL(method="mml").fit(Y[:100]))
    assert "prior" in " ".join(likelihood_ratio_test(mml, two).notes)
