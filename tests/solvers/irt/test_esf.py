"""Log-space elementary symmetric functions (Eq. 3.6)."""

import numpy as np
from scipy.special import gammaln

from evalcert.solvers.irt.esf import conditional_terms, log_esf


def brute_force(b):
    from itertools import combinations
    M = len(b)
    return np.array([np.log(sum(np.exp(-sum(b[list(A)])) for A in combinations(range(M), r)))
                     for r in range(M + 1)])


def test_log_esf_matches_subset_enumeration():
    b = np.random.default_rng(0).normal(size=8)
    assert np.allclose(log_esf(b), brute_force(b), atol=1e-12)


def test_conditional_terms_match_summation_algorithm_with_missing_cells():
    rng = np.random.default_rng(1)
    b = rng.normal(0, 1.5, 200)
    obs = rng.random((6, 200)) < 0.7
    scores = np.array([1, 5, 40, 70, 100, 120])
    lg, pi, _ = conditional_terms(b, obs, scores)
    for i in range(6):
        ref = log_esf(b[obs[i]])
        assert abs(lg[i] - ref[scores[i]]) < 1e-9
        j = np.flatnonzero(obs[i])[3]                 # pi_ij = e^-b_j gamma_{S-1}(b_-j)/gamma_S
        loo = log_esf(b[obs[i] & (np.arange(200) != j)])
        assert abs(pi[i, j] - np.exp(-b[j] + loo[scores[i] - 1] - ref[scores[i]])) < 1e-10
    assert np.allclose(pi.sum(1), scores) and np.all(pi[~obs] == 0)


def test_conditional_terms_exact_at_40000_items():
    """Equal difficulties: gamma_r = C(M, r) exp(-r b), pi = r / M, at any size."""
    M, b0 = 40_000, 0.3
    scores = np.array([1, 500, 20_000, 39_999])
    lg, pi, _ = conditional_terms(np.full(M, b0), np.ones((4, M), bool), scores)
    exact = gammaln(M + 1) - gammaln(scores + 1) - gammaln(M - scores + 1) - scores * b0
    assert np.allclose(lg, exact, rtol=1e-12, atol=1e-8)
    assert np.allclose(pi[:, 0], scores / M, atol=1e-12)


def test_item_multiplicities_equal_repeated_columns():
    """A column with weight w stands for w identical items (pooled CML)."""
    rng = np.random.default_rng(2)
    b = rng.normal(0, 1.2, 30)
    mult = rng.integers(1, 5, 30)
    obs = rng.random((7, 30)) < 0.8
    expanded_b, expanded_obs = np.repeat(b, mult), np.repeat(obs, mult, axis=1)
    scores = np.array([1, 3, 10, 20, 25, 30, 40])
    scores = np.minimum(scores, expanded_obs.sum(1) - 1)
    lg_w, pi_w, theta_w = conditional_terms(b, obs, scores, item_weights=mult)
    lg, pi, theta = conditional_terms(expanded_b, expanded_obs, scores)
    assert np.allclose(lg_w, lg, atol=1e-9) and np.allclose(theta_w, theta, atol=1e-9)
    first = np.concatenate([[0], np.cumsum(mult)[:-1]])     # one copy of each column
    assert np.allclose(pi_w, pi[:, first], atol=1e-10)
    assert np.allclose(pi_w @ mult, scores)
