"""Scoring with half the responses missing: the dense-with-mask path against brute force,
against Warm/ML/MAP roots found by bisection, and against the cell-list path."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from evalcert.irt.information import ItemParameters
from evalcert.irt.scoring import score_abilities


def _bank(seed: int, n_models: int, n_items: int, missing: float):
    rng = np.random.default_rng(seed)
    p = ItemParameters(rng.lognormal(0, 0.4, n_items), rng.normal(size=n_items),
                       np.zeros(n_items), tuple(f"q{j}" for j in range(n_items)), "2pl")
    theta = np.concatenate([rng.normal(size=n_models - 3), [-3.5, 0.0, 3.5]])
    P = 1 / (1 + np.exp(-p.a * (theta[:, None] - p.b)))
    Y = (rng.random(P.shape) < P).astype(float)
    O = rng.random(P.shape) >= missing
    Y[-2] = 1.0                             # every observed answer right
    return p, Y, O


def _pieces(t: float, p: ItemParameters, y: np.ndarray, o: np.ndarray):
    """l', I, J of one model at one ability, summed plainly over its observed items."""
    a, b, y = p.a[o], p.b[o], y[o]
    P = 1 / (1 + np.exp(-a * (t - b)))
    w = P * (1 - P)
    return np.sum(a * (y - P)), np.sum(a * a * w), np.sum(a ** 3 * w * (1 - 2 * P))


def _posterior(p: ItemParameters, y: np.ndarray, o: np.ndarray, mu: float, sd: float):
    """Posterior mean and sd by brute force: 2,401 nodes over +-12 posterior sds."""
    a, b, y = p.a[o], p.b[o], y[o]
    grid = np.linspace(mu - 12 * sd, mu + 12 * sd, 2401)
    for _ in range(2):
        x = a * (grid[:, None] - b)
        lp = (y * x - np.logaddexp(0, x)).sum(axis=1) - 0.5 * ((grid - mu) / sd) ** 2
        w = np.exp(lp - lp.max())
        w /= w.sum()
        m = w @ grid
        s = np.sqrt(w @ (grid - m) ** 2)
        grid = np.linspace(m - 12 * s, m + 12 * s, 2401)
    return m, s


@pytest.mark.parametrize("n_items,n_models", [
    (200, 16), (1000, 8), pytest.param(5000, 16, marks=pytest.mark.slow)])
def test_half_missing_eap_matches_brute_force(n_items, n_models):
    p, Y, O = _bank(n_items, n_models, n_items, 0.5)
    assert 0.45 < O.mean() < 0.55                       # the dense-with-mask path
    mu, sd = 0.1, 1.2
    eap, psd = score_abilities(p, Y, O, method="eap", prior=(mu, sd))
    for i in range(Y.shape[0]):
        m, s = _posterior(p, Y[i], O[i], mu, sd)
        assert eap[i] == pytest.approx(m, abs=1e-6 * s)
        assert psd[i] == pytest.approx(s, rel=1e-5)


@pytest.mark.parametrize("n_items", [200, 5000])
def test_half_missing_ml_map_wle_are_the_roots(n_items):
    p, Y, O = _bank(n_items + 1, 10, n_items, 0.5)
    mu, sd = -0.2, 0.9
    got = {m: score_abilities(p, Y, O, method=m, prior=(mu, sd)) for m in ("ml", "map", "wle")}
    def warm(t, y, o):
        g, info, J = _pieces(t, p, y, o)
        return g + J / (2 * info)

    equations = {"ml": lambda t, y, o: _pieces(t, p, y, o)[0],
                 "map": lambda t, y, o: _pieces(t, p, y, o)[0] - (t - mu) / sd ** 2,
                 "wle": warm}
    for method, (theta, se) in got.items():
        for i in range(Y.shape[0]):
            if method == "ml" and i == Y.shape[0] - 2:
                assert theta[i] == np.inf               # all right: no finite ML root
                continue
            ref = brentq(equations[method], -20, 20, args=(Y[i], O[i]), xtol=1e-13)
            assert theta[i] == pytest.approx(ref, abs=1e-8)
            info = _pieces(ref, p, Y[i], O[i])[1] + (1 / sd ** 2 if method == "map" else 0.0)
            assert se[i] == pytest.approx(1 / np.sqrt(info), rel=1e-8)


def test_dense_mask_and_cell_lists_give_the_same_scores_at_half_missing(forced_path):
    """At half missing the responses stay a dense matrix with a 0/1 mask (sums are BLAS
    products); forced to cell lists (the sparse path) every score agrees."""
    p, Y, O = _bank(7, 40, 300, 0.5)
    Y = np.where(O, Y, 0.0)
    for method in ("ml", "wle", "map", "eap"):
        dense = score_abilities(p, Y, O, method=method)
        cells = forced_path(1.1, p, Y, O, method=method)
        np.testing.assert_allclose(dense[0], cells[0], atol=1e-9)
        np.testing.assert_allclose(dense[1], cells[1], rtol=1e-8)
