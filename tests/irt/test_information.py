"""Item and test information against a numerical second derivative of the log-likelihood."""

from __future__ import annotations

import numpy as np
import pytest

from evalcert.errors import InputError
from evalcert.irt import LogisticFactor, Rasch, TwoPL
from evalcert.irt.information import (ItemParameters, icc, item_information,
                                              item_parameters, test_information)
from tests.irt.conftest import simulate


@pytest.mark.parametrize("guessing", [0.0, 0.2])
def test_information_is_expected_negative_second_derivative(guessing):
    rng = np.random.default_rng(3)
    n = 6
    p = ItemParameters(rng.lognormal(0, 0.4, n), rng.normal(size=n), np.full(n, guessing),
                       tuple("abcdef"), "3pl")
    theta, h = np.linspace(-3, 3, 13), 1e-3
    info = item_information(theta, p)
    for k, t in enumerate(theta):
        P = icc(np.array([t - h, t, t + h]), p)
        d2 = {y: (np.log(np.where(y, P[2], 1 - P[2])) - 2 * np.log(np.where(y, P[1], 1 - P[1]))
                  + np.log(np.where(y, P[0], 1 - P[0]))) / h ** 2 for y in (0, 1)}
        expected = -(P[1] * d2[1] + (1 - P[1]) * d2[0])
        np.testing.assert_allclose(info[k], expected, rtol=1e-4, atol=1e-8)
    np.testing.assert_allclose(test_information(theta, p), info.sum(1))


def test_parameters_from_estimators():
    Y, *_ = simulate(300, 15, seed=4, slopes=True)
    r = item_parameters(Rasch(method="cml").fit(Y))
    assert np.all(r.a == 1) and np.all(r.c == 0) and r.model == "rasch"
    t = TwoPL(method="mml").fit(Y)
    p = item_parameters(t)
    np.testing.assert_allclose(icc(t.abilities_, p), t.predict_proba(), atol=1e-12)
    with pytest.raises(InputError, match="unidimensional"):
        item_parameters(LogisticFactor(dims=2).fit(Y))
