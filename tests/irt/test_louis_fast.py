"""Louis's observed information: every fast path against a per-model brute force (issue 12).

The brute force follows the identity literally, one model at a time:
``I = sum_i (E_i[-d^2 l_c,i] - Cov_i[s_c,i])`` over each model's adaptive
Gauss-Hermite nodes ``mu_i + sd_i z_q``, with the posterior weights formed from
that model's own responses. It shares no code with :mod:`evalcert.irt.estimation.louis`.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import expit, logsumexp

import evalcert.irt.estimation.louis as louis
from evalcert.irt.estimation.louis import observed_information
from evalcert.irt.estimation.mml_em import mml_em
from tests.irt.conftest import simulate


def _brute_force(Y, O, a, d, mu, sd, common_slope, n_quad=11):
    N, M = Y.shape
    z, w = hermegauss(n_quad)
    P = M + 1 if common_slope else 2 * M
    info = np.zeros((P, P))
    for i in range(N):
        o = O[i].astype(float)
        t = mu[i] + sd[i] * z                                       # (Q,)
        p = expit(t[:, None] * a[None, :] + d[None, :])             # (Q, M)
        loglik = (o * (Y[i] * np.log(p) + (1 - Y[i]) * np.log1p(-p))).sum(1)
        log_post = np.log(w) + 0.5 * z ** 2 - 0.5 * t ** 2 + loglik
        post = np.exp(log_post - logsumexp(log_post))
        r = o * (Y[i] - p)                                          # (Q, M)
        c = o * p * (1 - p)
        if common_slope:
            scores = np.column_stack([(r * t[:, None]).sum(1), r])
        else:
            scores = np.hstack([r * t[:, None], r])
        mean = post @ scores
        dev = scores - mean
        info -= (dev * post[:, None]).T @ dev
        for q in range(n_quad):                                     # E_i[-d^2 l_c]
            H = np.zeros((P, P))
            if common_slope:
                H[0, 0] = t[q] ** 2 * c[q].sum()
                H[0, 1:] = H[1:, 0] = t[q] * c[q]
                H[np.arange(1, P), np.arange(1, P)] = c[q]
            else:
                idx = np.arange(M)
                H[idx, idx] = t[q] ** 2 * c[q]
                H[idx, M + idx] = H[M + idx, idx] = t[q] * c[q]
                H[M + idx, M + idx] = c[q]
            info += post[q] * H
    return np.linalg.inv(info)


def _case(n, m, common_slope, missing, seed, quadrature="auto"):
    Y, *_ = simulate(n, m, seed=seed, slopes=not common_slope)
    O = np.ones(Y.shape, bool)
    if missing:
        O = np.random.default_rng(seed).random(Y.shape) >= missing
        O[np.arange(n), np.arange(n) % m] = True                    # every model answers
        Y = np.where(O, Y, 0.0)
    em = mml_em(Y, O, common_slope=common_slope, n_quad=11, tol=1e-8, max_iter=500,
                what="test", quadrature=quadrature, standard_errors=False,
                slope_prec=0.0 if common_slope else 4.0)
    return Y, O, em["a"], em["d"], em["eap"], em["psd"]


def _check(out, cov, common_slope):
    M = out["var_d"].size
    if common_slope:
        np.testing.assert_allclose(out["var_a"], cov[0, 0], rtol=1e-9)
        np.testing.assert_allclose(out["var_d"], np.diag(cov)[1:], rtol=1e-9)
        np.testing.assert_allclose(out["cov_ad"], cov[0, 1:], rtol=1e-9,
                                   atol=1e-9 * np.abs(cov).max())
        np.testing.assert_allclose(out["cov_d"], cov[1:, 1:], rtol=1e-9,
                                   atol=1e-9 * np.abs(cov).max())
    else:
        idx = np.arange(M)
        np.testing.assert_allclose(out["var_a"], cov[idx, idx], rtol=1e-9)
        np.testing.assert_allclose(out["var_d"], cov[M + idx, M + idx], rtol=1e-9)
        np.testing.assert_allclose(out["cov_ad"], cov[idx, M + idx], rtol=1e-9,
                                   atol=1e-9 * np.abs(cov).max())


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("quadrature", ["grid", "adaptive"])
def test_rasch_complete_pooled_by_score_matches_brute_force(seed, quadrature):
    Y, O, a, d, mu, sd = _case(120, 8, True, 0.0, seed, quadrature)
    pooled = np.unique(np.column_stack([Y.sum(1), mu, sd]), axis=0).shape[0]
    if quadrature == "grid":
        assert pooled <= 9                                  # one group per raw score
    out = observed_information(Y, O, a, d, mu, sd, common_slope=True)
    assert out["full"]
    _check(out, _brute_force(Y, O, a, d, mu, sd, True), True)


def test_pooled_path_is_taken_and_perturbed_nodes_still_match(monkeypatch):
    Y, O, a, d, mu, sd = _case(100, 6, True, 0.0, 5)
    rng = np.random.default_rng(1)
    mu, sd = mu + 1e-3 * rng.normal(size=mu.size), sd * (1 + 1e-3 * rng.random(sd.size))
    called = []
    real = louis._common_slope_pooled
    monkeypatch.setattr(louis, "_common_slope_pooled",
                        lambda *args: called.append(1) or real(*args))
    out = observed_information(Y, O, a, d, mu, sd, common_slope=True)
    assert called                                           # every model its own group
    _check(out, _brute_force(Y, O, a, d, mu, sd, True), True)


@pytest.mark.parametrize("common_slope", [True, False])
def test_missing_cells_full_path_matches_brute_force(common_slope):
    Y, O, a, d, mu, sd = _case(90, 7, common_slope, 0.3, 3)
    out = observed_information(Y, O, a, d, mu, sd, common_slope=common_slope)
    assert out["full"]
    _check(out, _brute_force(Y, O, a, d, mu, sd, common_slope), common_slope)


def test_free_slopes_woodbury_matches_brute_force(monkeypatch):
    Y, O, a, d, mu, sd = _case(40, 12, False, 0.2, 4)
    monkeypatch.setattr(louis, "FULL_LIMIT", 0)              # force the Woodbury route
    out = observed_information(Y, O, a, d, mu, sd, common_slope=False)
    _check(out, _brute_force(Y, O, a, d, mu, sd, False), False)
