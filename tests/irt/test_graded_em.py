"""The GRM's EM engine: the windowed E-step against the whole grid, held gaps, invariances."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from evalcert.irt.estimation.graded_em import LOG_GAP_FLOOR, GradedEStep, _probabilities
from evalcert.irt.polytomous import GradedResponse


def _codes(n, m, K, seed, spread=1.5):
    rng = np.random.default_rng(seed)
    theta, a = rng.normal(size=n), rng.lognormal(0, 0.3, m)
    cuts = np.sort(rng.normal(size=(m, K - 1)), axis=1) * spread
    S = 1 / (1 + np.exp(-a[None, :, None] * (theta[:, None, None] - cuts[None])))
    return (rng.random((n, m, 1)) < S).sum(2), a, -cuts * a[:, None]


def _whole_grid(estep, a, d):
    """The E-step on every node, written out: loglik and counts (M, K, Q)."""
    _, _, logP = _probabilities(a, d, estep.z)
    ll = estep.B @ logP.reshape(estep.m * estep.K, -1) + estep.logw
    norm = logsumexp(ll, axis=1, keepdims=True)
    post = np.exp(ll - norm)
    return float(norm.sum()), (estep.Bt @ post).reshape(estep.m, estep.K, -1)


def _check_against_whole_grid(estep, a, d):
    loglik_ref, r_ref = _whole_grid(estep, a, d)
    _, loglik, r, z = estep(a, d)
    lo = int(np.flatnonzero(estep.z == z[0])[0])
    assert loglik == pytest.approx(loglik_ref, rel=1e-13)
    np.testing.assert_allclose(r, r_ref[:, :, lo:lo + z.size], rtol=1e-10, atol=1e-14)
    outside = r_ref.sum() - r_ref[:, :, lo:lo + z.size].sum()
    assert outside < 1e-12 * estep.n_cells                      # what the window left out
    return z.size


def test_window_matches_the_whole_grid_and_grows_when_posteriors_move():
    codes, a, d = _codes(40, 300, 6, seed=0)            # sharp posteriors: a narrow window
    codes[np.random.default_rng(1).random(codes.shape) < 0.2] = -1       # and missing cells
    estep = GradedEStep(codes, 6, 61)
    assert _check_against_whole_grid(estep, a, d) == 61          # the first call: every node
    width = _check_against_whole_grid(estep, a, d)
    assert width < 45                                            # the window took hold
    redone = estep.redone
    # every model 2.5 sd higher (d + 2.5 a): the posteriors leave the window at its top end
    _check_against_whole_grid(estep, a, d + 2.5 * a[:, None])
    assert estep.redone > redone
    _check_against_whole_grid(estep, a, d - 2.5 * a[:, None])    # and at its bottom end


def test_window_is_the_whole_grid_when_posteriors_are_wide():
    codes, a, d = _codes(500, 3, 4, seed=2)             # three items: wide posteriors
    estep = GradedEStep(codes, 4, 61)
    for _ in range(3):
        assert _check_against_whole_grid(estep, a, d) >= 55


def test_unused_middle_category_closes_its_gap_and_rows_do_not_matter():
    codes, *_ = _codes(60, 40, 8, seed=3)
    counts = np.array([np.bincount(codes[:, j], minlength=8) for j in range(40)])
    unused = counts[:, 1:-1] == 0
    assert unused.any()
    est = GradedResponse(tol=1e-7, standard_errors=False).fit(codes)
    gaps = np.diff(est.thresholds_, axis=1)
    assert np.all(gaps[unused] < 1e-7) and np.all(gaps[~unused] > 1e-4)
    # the same data with the models in another order
    order = np.random.default_rng(4).permutation(60)
    again = GradedResponse(tol=1e-7, standard_errors=False).fit(codes[order])
    np.testing.assert_allclose(again.discriminations_, est.discriminations_, atol=1e-5)
    np.testing.assert_allclose(again.thresholds_, est.thresholds_, atol=1e-4)
    assert again.loglik_ == pytest.approx(est.loglik_, rel=1e-10)
    assert LOG_GAP_FLOOR < -15
