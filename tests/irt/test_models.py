"""2PL, logistic factor model, Beta-IRT and JE-IRT."""

import numpy as np
import pytest

from evalcert.irt import JEIRT, BetaIRT, LogisticFactor, TwoPL


@pytest.mark.parametrize("method", ["mml", "jml"])
def test_twopl_recovery(twopl_data, method):
    Y, theta, b, a = twopl_data
    est = TwoPL(method=method).fit(Y)
    ok = np.isfinite(est.abilities_)
    assert np.corrcoef(est.abilities_[ok], theta[ok])[0, 1] > 0.9
    assert np.corrcoef(est.difficulties_, b)[0, 1] > 0.95
    assert np.corrcoef(est.discriminations_, a)[0, 1] > 0.8
    assert 0.8 < np.median(est.discriminations_ / a) < 1.25
    assert 0.85 < np.polyfit(b, est.difficulties_, 1)[0] < 1.2


def test_factor_model_recovers_logits():
    rng = np.random.default_rng(8)
    U, V, Z = rng.normal(size=(120, 2)), rng.normal(size=(80, 2)), rng.normal(size=80)
    L = U @ V.T + Z
    Y = (rng.random(L.shape) < 1 / (1 + np.exp(-L))).astype(float)
    est = LogisticFactor(dims=2, lam=0.5).fit(Y)
    Lh = est.abilities_ @ est.loadings_.T + est.intercepts_
    assert np.corrcoef(Lh.ravel(), L.ravel())[0, 1] > 0.9
    assert 0.7 < np.polyfit(L.ravel(), Lh.ravel(), 1)[0] < 1.3
    G = est.abilities_.T @ est.abilities_                 # balanced SVD form: orthogonal
    assert abs(G[0, 1]) < 1e-6 * G[0, 0]
    again = LogisticFactor(dims=2, lam=0.5).fit(Y)
    assert np.array_equal(again.loadings_, est.loadings_)


def test_beta_irt_recovery_and_clipping_reported():
    rng = np.random.default_rng(9)
    theta, z, d = rng.normal(size=40), rng.normal(size=80), rng.lognormal(0, 0.3, 80)
    mu = 1 / (1 + np.exp(-d * (theta[:, None] - z)))
    Y = rng.beta(mu * 10, (1 - mu) * 10)
    Y[0, 0], Y[1, 1] = 0.0, 1.0
    est = BetaIRT(method="map", lam=0.01).fit(Y)
    assert np.corrcoef(est.abilities_, theta)[0, 1] > 0.98
    assert np.corrcoef(est.difficulties_, z)[0, 1] > 0.95
    assert 0.85 < np.polyfit(z, est.difficulties_, 1)[0] < 1.15
    assert 7 < est.precision_ < 14
    assert est.n_clipped_ >= 2 and "clipped" in est.result_.notes[0]


def test_je_irt_fits_and_onboards_a_new_model():
    rng = np.random.default_rng(10)
    X = rng.normal(size=(80, 4))
    EQ = X[:, :2] + np.array([1.5, 0])
    EM = rng.normal(size=(26, 2)) * 1.5
    n = np.linalg.norm(EQ, axis=1)
    L = EM @ (EQ / n[:, None]).T - n
    Y = (rng.random(L.shape) < 1 / (1 + np.exp(-L))).astype(float)
    est = JEIRT(X, dims=2, hidden=4).fit(Y[:25])
    P = est.predict_proba()
    assert np.corrcoef(P.ravel(), 1 / (1 + np.exp(-L[:25].ravel())))[0, 1] > 0.8
    frozen = est.item_embeddings_.copy()
    new = est.fit_models(Y[25:])
    assert np.array_equal(new.item_embeddings_, frozen)      # only the new embedding moved
    assert new.abilities_.shape == (1, 2)
    assert np.corrcoef(new.predict_proba()[0], 1 / (1 + np.exp(-L[25])))[0, 1] > 0.7
