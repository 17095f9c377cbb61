"""2PL slopes on few-model, many-item matrices and the observed-information fast paths
(issue 12, items 2-4)."""

import warnings

import numpy as np
import pytest

from evalcert.errors import ConvergenceError, InputError
from evalcert.irt import TwoPL
from evalcert.irt.estimation import louis
from evalcert.irt.estimation.mml_em import mml_em
from evalcert.irt.twopl import NegativeSlopeWarning

from .conftest import simulate


def _few_models(n_models=30, n_items=600, seed=3):
    Y, theta, b, a = simulate(n_models, n_items, seed=seed, slopes=True)
    keep = (Y.sum(0) > 0) & (Y.sum(0) < n_models)
    return Y[:, keep], theta, b[keep], a[keep]


def test_default_slope_prior_keeps_slopes_positive_and_difficulties_finite():
    # 30 models x 600 items: the old N(1, 4) slope prior let slopes of items that
    # 30 models barely separate reach ~0, so b = -d / a exploded (|b| in the
    # hundreds, corr(b, truth) ~ 0); the log-normal prior keeps them positive
    Y, theta, b, a = _few_models()
    est = TwoPL(method="mml").fit(Y)
    assert np.all(est.discriminations_ > 0)
    assert np.max(np.abs(est.difficulties_)) < 10
    assert np.corrcoef(est.difficulties_, b)[0, 1] > 0.85
    assert np.corrcoef(est.abilities_, theta)[0, 1] > 0.95
    assert np.all(np.isfinite(est.difficulties_se_)) and np.all(est.difficulties_se_ > 0)


def test_pure_ml_with_few_models_warns_before_em_runs():
    Y, *_ = _few_models(n_items=200)
    with pytest.warns(NegativeSlopeWarning, match="fewer than 50 models"):
        with pytest.raises(ConvergenceError, match="EM did not converge"):
            TwoPL(method="mml", slope_prior=0, max_iter=2).fit(Y)


def test_pure_ml_is_reachable_and_oriented_by_accuracy():
    Y, theta, b, a = simulate(400, 30, seed=7, slopes=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NegativeSlopeWarning)     # none expected here
        est = TwoPL(method="mml", slope_prior=0).fit(Y)
        flipped = TwoPL(method="mml", slope_prior=0).fit(1 - Y)  # reversed coding
    assert np.corrcoef(est.abilities_, theta)[0, 1] > 0.85     # 30 items: EAP noise
    assert np.corrcoef(flipped.abilities_, (1 - Y).mean(1))[0, 1] > 0.9
    assert np.allclose(flipped.abilities_, -est.abilities_, atol=1e-4)
    assert np.all(est.discriminations_ > 0) and np.all(flipped.discriminations_ > 0)


def test_slope_prior_must_be_nonnegative():
    with pytest.raises(InputError, match="slope_prior"):
        TwoPL(method="mml", slope_prior=-1).fit(simulate(30, 10, seed=4)[0])


def test_woodbury_blocks_equal_the_direct_inverse():
    rng = np.random.default_rng(0)
    M, NQ = 7, 5
    B = rng.normal(size=(NQ, 2 * M)) * 0.3
    h_aa, h_dd, h_ad = rng.uniform(2, 3, M), rng.uniform(2, 3, M), rng.uniform(-.5, .5, M)
    D = np.zeros((2 * M, 2 * M))
    i = np.arange(M)
    D[i, i], D[M + i, M + i], D[i, M + i], D[M + i, i] = h_aa, h_dd, h_ad, h_ad
    cov = np.linalg.inv(D - B.T @ B)
    out = louis._woodbury(B, h_aa, h_ad, h_dd)
    assert np.allclose(out["var_a"], np.diag(cov)[:M], rtol=1e-12, atol=0)
    assert np.allclose(out["var_d"], np.diag(cov)[M:], rtol=1e-12, atol=0)
    assert np.allclose(out["cov_ad"], cov[i, M + i], rtol=1e-10, atol=1e-15)


def test_observed_information_paths_agree(monkeypatch):
    Y, *_ = _few_models(n_models=25, n_items=120, seed=5)
    O = np.ones_like(Y, bool)
    em = mml_em(Y, O, common_slope=False, n_quad=15, tol=1e-8, max_iter=3000, what="t",
                slope_prec=4.0)
    args = (Y, O, em["a"], em["d"], em["eap"], em["psd"])
    direct = louis.observed_information(*args, common_slope=False, slope_prec=4.0)
    monkeypatch.setattr(louis, "FULL_LIMIT", 0)                  # force Woodbury
    wood = louis.observed_information(*args, common_slope=False, slope_prec=4.0)
    monkeypatch.setattr(louis, "WOODBURY_FLOPS", 0)              # force item blocks
    blocks = louis.observed_information(*args, common_slope=False, slope_prec=4.0)
    assert direct["full"] and wood["full"] and not blocks["full"]
    for key in ("var_a", "var_d", "cov_ad"):
        assert np.allclose(wood[key], direct[key], rtol=1e-8, atol=1e-12), key
    # item blocks ignore cross-item information: never larger, close for slopes
    assert np.all(blocks["var_a"] <= direct["var_a"] * (1 + 1e-9))
    assert np.median(np.sqrt(blocks["var_a"] / direct["var_a"])) > 0.95


def test_block_only_ses_are_flagged_in_the_result(monkeypatch):
    monkeypatch.setattr(louis, "FULL_LIMIT", 0)
    monkeypatch.setattr(louis, "WOODBURY_FLOPS", 0)
    est = TwoPL(method="mml").fit(simulate(200, 15, seed=6, slopes=True)[0])
    assert any("cross-item terms ignored" in n for n in est.result_.notes)
