"""Baselines of Table 5 (paper 000, Sec. 6.4): same fit/predict interface."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from evalcert.data import ScoreMatrix
from evalcert.diagnostics.baselines import (IsotonicCalibrated, MeanImputedSVD,
                                            NuclearNormCompletion, RaschLeastSquares,
                                            UVFactorization, additive_least_squares)
from evalcert.errors import InputError
from tests.diagnostics.conftest import additive_scores


def _sparse(S: ScoreMatrix, seed: int = 0) -> ScoreMatrix:
    return S.restrict(np.random.default_rng(seed).random(S.shape) < 0.7)


def test_additive_least_squares_recovers_theta_minus_b_with_gauge():
    theta, b = np.array([0.4, -0.1, 0.2]), np.array([0.3, -0.2, 0.0, -0.1])
    b = b - b.mean()
    t, bb = additive_least_squares(np.subtract.outer(theta, b), np.ones((3, 4)), lam=1e-10)
    np.testing.assert_allclose(t, theta, atol=1e-7)
    np.testing.assert_allclose(bb, b, atol=1e-7)
    assert abs(bb.sum()) < 1e-12


def test_rasch_logit_recovers_scores_generated_on_the_logit_scale():
    eta = np.subtract.outer(np.linspace(-1, 1, 6), np.linspace(-0.5, 0.5, 8))
    S = ScoreMatrix.from_array(2 * expit(eta) - 1)
    np.testing.assert_allclose(RaschLeastSquares("logit").fit(S).predict(), S.values, atol=1e-5)
    assert not np.allclose(RaschLeastSquares("probit").fit(S).predict(), S.values, atol=1e-3)


def test_sample_weights_are_multiplicities():
    S = additive_scores(6, 10, noise=0.2)
    w = np.random.default_rng(0).integers(0, 3, S.shape).astype(float)
    w[:, 0] = w[0] = 1
    weighted = RaschLeastSquares("identity").fit(S, sample_weight=w).predict()
    z = np.where(w > 0, S.values, np.nan)
    t, b = additive_least_squares(z, w, 1e-6)
    np.testing.assert_allclose(weighted, np.subtract.outer(t, b))
    unweighted = RaschLeastSquares("identity").fit(S).predict()
    assert not np.allclose(weighted, unweighted)


def test_isotonic_calibration_is_monotone_in_the_base_prediction():
    S = _sparse(additive_scores(10, 30, noise=0.1))
    model = IsotonicCalibrated(RaschLeastSquares("identity")).fit(S)
    order = np.argsort(model.base.predict(), axis=None)
    assert np.all(np.diff(model.predict().ravel()[order]) >= -1e-12)


@pytest.mark.parametrize("model", [NuclearNormCompletion(tau=0.5), MeanImputedSVD(rank=1),
                                   UVFactorization(rank=1, n_iter=50)])
def test_low_rank_baselines_predict_every_cell(model):
    S = _sparse(additive_scores(10, 30, noise=0.02))
    pred = model.fit(S).predict()
    assert pred.shape == S.shape and np.all(np.isfinite(pred)) and model.theta_.shape == (10,)
    assert np.sqrt(np.nanmean((pred - S.values) ** 2)) < 0.2


def test_unweighted_baselines_refuse_multiplicities():
    S = additive_scores(5, 8)
    with pytest.raises(InputError, match="no weighted form"):
        MeanImputedSVD().fit(S, sample_weight=np.full(S.shape, 2.0))
    with pytest.raises(InputError, match="nonnegative"):
        RaschLeastSquares().fit(S, sample_weight=-np.ones(S.shape))
