"""EAP scoring in K=2 (multidimensional 2PL) against a brute-force posterior: the oblique
first lattice, its wider second reach, the +-8 box and adaptive Gauss-Hermite alike."""

from __future__ import annotations

import numpy as np
import pytest

from evalcert.irt.data import observed_cells
from evalcert.irt.estimation import mml_multidim
from evalcert.irt.estimation.mml_multidim import posterior_moments


def _brute_force(y, o, A, d, n=181):
    """Posterior mean and covariance on a fine 2-D grid: +-9 first, then twice the
    posterior's mean +- 12 sds along each axis (``n^2`` nodes each)."""
    lo, hi = np.full(2, -9.0), np.full(2, 9.0)
    for _ in range(3):
        axes = [np.linspace(lo[k], hi[k], n) for k in range(2)]
        G = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 2)
        eta = G @ A[o].T + d[o]
        ll = (y[o] * eta - np.logaddexp(0, eta)).sum(1) - 0.5 * (G ** 2).sum(1)
        w = np.exp(ll - ll.max())
        w /= w.sum()
        mu = w @ G
        D = G - mu
        cov = (w[:, None] * D).T @ D
        sd = np.sqrt(np.diag(cov))
        lo, hi = mu - 12 * sd, mu + 12 * sd
    return mu, cov


@pytest.mark.parametrize("n_items,missing", [
    (30, 0.0), (40, 0.5), pytest.param(300, 0.0, marks=pytest.mark.slow)])
def test_k2_eap_matches_brute_force(n_items, missing):
    rng = np.random.default_rng(n_items)
    A, d = np.abs(rng.normal(1.0, 0.4, (n_items, 2))), rng.normal(size=n_items)
    theta = np.vstack([rng.normal(size=(4, 2)), [[2.6, -2.4], [-3.0, 2.5], [0.0, 3.2]]])
    Y = (rng.random((theta.shape[0], n_items)) < 1 / (1 + np.exp(-(theta @ A.T + d)))
         ).astype(float)
    O = rng.random(Y.shape) >= missing
    Y[-1] = 1.0                                           # every observed answer right
    starts, cols, y = observed_cells(np.where(O, Y, 0.0), O)
    mu, cov, passes = posterior_moments(starts, cols, y, A, d)
    assert passes.min() >= 1
    for i in range(Y.shape[0]):
        m, c = _brute_force(Y[i], O[i], A, d)
        sd = np.sqrt(np.diag(c))
        assert np.all(np.abs(mu[i] - m) / sd < 1e-6)
        assert np.allclose(np.sqrt(np.diag(cov[i])), sd, rtol=1e-5)
        assert np.allclose(cov[i], c, atol=1e-6 * sd.max() ** 2)


def test_k2_first_lattice_takes_most_models_and_the_rest_still_agree():
    """Most models of a typical bank are done on the oblique first lattice; with it made
    too coarse to accept anyone (every model on the +-8 box or adaptive quadrature) the
    scores agree to 1e-6 posterior sds."""
    rng = np.random.default_rng(5)
    A, d = np.abs(rng.normal(1.0, 0.4, (30, 2))), rng.normal(size=30)
    theta = rng.normal(size=(200, 2))
    Y = (rng.random((200, 30)) < 1 / (1 + np.exp(-(theta @ A.T + d)))).astype(float)
    starts, cols, y = observed_cells(Y, np.ones_like(Y, bool))
    mu, cov, passes = posterior_moments(starts, cols, y, A, d)
    assert np.mean(passes == 1) > 0.9
    old = mml_multidim._OBLIQUE_STEP
    mml_multidim._OBLIQUE_STEP = 5.0
    try:
        mu2, cov2, _ = posterior_moments(starts, cols, y, A, d)
    finally:
        mml_multidim._OBLIQUE_STEP = old
    sd = np.sqrt(np.diagonal(cov2, axis1=1, axis2=2))
    assert np.max(np.abs(mu - mu2) / sd) < 1e-6
    assert np.max(np.abs(np.sqrt(np.diagonal(cov, axis1=1, axis2=2)) / sd - 1)) < 1e-5
