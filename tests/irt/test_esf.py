"""Log-space elementary symmetric functions (Eq. 3.6)."""

import numpy as np
import pytest
import scipy.linalg
from scipy.special import gammaln

from evalcert.irt.estimation import esf
from evalcert.irt.estimation.esf import ObservedSets, conditional_cells, conditional_terms, log_esf


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


# -- the cell-based fast path (issue 12: CML with missing cells) --------------------------
def _reference_terms(b, items, score, which):
    """log gamma_S and pi_j (j in ``which``) of one model by the exact summation algorithm."""
    full = log_esf(b[items])
    pi = np.array([np.exp(-b[items][j] + log_esf(np.delete(b[items], j))[score - 1]
                          - full[score]) for j in which])
    return full[score], pi


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_conditional_cells_match_the_summation_reference_with_missing_cells(seed, monkeypatch):
    """Random designs, perturbed difficulties, extreme and central scores, both sum paths."""
    used = {"chebyshev": 0, "nodes": 0}
    real = esf._chebyshev_sums

    def spy(*args):
        out = real(*args)
        used["nodes" if out is None else "chebyshev"] += 1
        return out
    monkeypatch.setattr(esf, "_chebyshev_sums", spy)
    rng = np.random.default_rng(seed)
    for M, N, spread in [(9, 6, 1.0), (60, 5, 2.5), (400, 5, 1.0), (1200, 3, 0.4)]:
        b = rng.normal(0, spread, M) + 1e-9 * rng.standard_normal(M)   # perturbed data
        obs = rng.random((N, M)) < 0.6
        obs[:, :2] = True
        n_i = obs.sum(1)
        scores = np.array([rng.integers(1, k) for k in n_i])
        scores[0], scores[-1] = 1, n_i[-1] - 1                      # extreme scores
        sets = ObservedSets.from_mask(obs)
        lg, pi, _, bound = conditional_cells(b, sets, scores)
        assert bound < 1e-12
        for i in range(N):
            items = np.flatnonzero(obs[i])
            which = (np.arange(items.size) if items.size <= 40 else
                     np.r_[np.argmin(b[items]), np.argmax(b[items]), rng.choice(items.size, 3)])
            ref_lg, ref_pi = _reference_terms(b, items, scores[i], which)
            assert abs(lg[i] - ref_lg) <= 1e-10 * max(1.0, abs(ref_lg))
            got = pi[sets.indptr[i]:sets.indptr[i + 1]][which]
            assert np.max(np.abs(got - ref_pi) / ref_pi) < 1e-9
        assert np.allclose(np.add.reduceat(pi, sets.indptr[:-1]), scores, rtol=1e-12)
    assert used["chebyshev"] > 0 and used["nodes"] > 0


def test_chebyshev_sums_equal_node_sums_at_10000_items(monkeypatch):
    rng = np.random.default_rng(3)
    b = rng.normal(0, 1.2, 10_000)
    obs = rng.random((3, 10_000)) < 0.8
    scores = np.array([40, obs[1].sum() // 2, obs[2].sum() - 300])
    sets = ObservedSets.from_mask(obs)
    lg, pi, theta, bound = conditional_cells(b, sets, scores)
    monkeypatch.setattr(esf, "_CHEB_MAX", 0)                      # node by node only
    lg_n, pi_n, theta_n, bound_n = conditional_cells(b, sets, scores)
    assert np.max(np.abs(lg - lg_n) / np.abs(lg_n)) < 1e-13
    assert np.max(np.abs(pi - pi_n) / pi_n) < 1e-10
    assert bound < 1e-11 and bound_n < 1e-11


def test_error_bound_covers_the_error_when_aliasing_is_forced(monkeypatch):
    """Too few points on the circle: the reported bound grows and still covers the error."""
    rng = np.random.default_rng(4)
    b = rng.normal(0, 1.0, 1500)
    sets = ObservedSets.from_mask(np.ones((1, 1500), bool))
    score = np.array([700])
    ref_lg = log_esf(b)[700]
    monkeypatch.setattr(esf, "_ALIAS_SD", 1.0)                      # K ~ sd + 40
    lg, _, _, bound = conditional_cells(b, sets, score)
    error = abs(np.expm1(lg[0] - ref_lg))                           # relative error of gamma
    assert 1e-9 < error <= bound


def test_warm_start_reaches_the_same_abilities():
    rng = np.random.default_rng(5)
    b = rng.normal(size=300)
    obs = rng.random((20, 300)) < 0.5
    scores = np.maximum(1, (obs.sum(1) * rng.uniform(0.1, 0.9, 20)).astype(int))
    sets = ObservedSets.from_mask(obs)
    cold = conditional_cells(b, sets, scores)
    warm = conditional_cells(b, sets, scores, start=cold[2] + rng.normal(0, 0.3, 20))
    assert np.max(np.abs(cold[2] - warm[2])) < 1e-10
    assert np.max(np.abs(cold[1] - warm[1])) < 1e-12


def test_threaded_batches_give_the_same_numbers(monkeypatch):
    rng = np.random.default_rng(6)
    b = rng.normal(size=400)
    obs = rng.random((60, 400)) < 0.5
    scores = np.maximum(1, (obs.sum(1) * rng.uniform(0.2, 0.8, 60)).astype(int))
    sets = ObservedSets.from_mask(obs)
    monkeypatch.setattr(esf, "_BATCH", 2 ** 14)                     # many batches
    monkeypatch.setattr(esf, "_THREADED", np.inf)
    single = conditional_cells(b, sets, scores)
    monkeypatch.setattr(esf, "_THREADED", 0)
    threaded = conditional_cells(b, sets, scores)
    for one, other in zip(single, threaded):
        assert np.array_equal(one, other)


# -- the exact conditional information (issue 12, item 3: CML SEs as eRm's) --------------
def _enumerated_information(b, observed, scores, weights):
    """``sum_i w_i Cov(Y_i | S_i)`` by enumerating every response pattern of every model."""
    from itertools import product
    M = b.size
    info = np.zeros((M, M))
    for obs, score, w in zip(observed, scores, weights):
        items = np.flatnonzero(obs)
        pats = np.array(list(product([0, 1], repeat=items.size)), float)
        pats = pats[pats.sum(1) == score]
        prob = np.exp(-pats @ b[items])
        prob /= prob.sum()
        mean = prob @ pats
        info[np.ix_(items, items)] += w * ((pats * prob[:, None]).T @ pats - np.outer(mean, mean))
    return info


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_conditional_information_matches_enumeration_with_pooled_columns(seed):
    """Missing cells, models standing for several, columns standing for several items."""
    from evalcert.irt.estimation.cml_information import (conditional_information,
                                                      difficulty_covariance)
    rng = np.random.default_rng(seed)
    mult = np.array([1, 3, 2, 1, 1])
    columns = np.repeat(np.arange(5), mult)
    b = rng.normal(0, 1, 5) + rng.normal(0, 1e-9, 5)          # perturbed: no exact ties
    obs = rng.random((9, 5)) < 0.8
    obs[:, :2] = True
    scores = np.array([rng.integers(1, (mult * o).sum()) for o in obs], float)
    weights = rng.integers(1, 4, 9).astype(float)
    reference = _enumerated_information(b[columns], obs[:, columns], scores, weights)
    info, pairs = conditional_information(b, ObservedSets.from_mask(obs), scores, mult, weights)
    assert np.allclose(info, np.diag(reference)[np.searchsorted(columns, np.arange(5))],
                       rtol=1e-12, atol=1e-13)
    off = pairs[np.ix_(columns, columns)]
    mask = ~np.eye(columns.size, dtype=bool)
    assert np.allclose(off[mask], reference[mask], rtol=1e-11, atol=1e-13)
    # the sum-zero covariance; an explicit cut-off (numpy < 2's pinv keeps the 1e-16 null
    # direction and returns 1e13 entries)
    sigma = scipy.linalg.pinvh(reference, rtol=1e-10)
    var = difficulty_covariance(info, pairs, mult, columns)
    assert np.allclose(var, np.diag(sigma), rtol=1e-9)
    for anchor in (0, 1, 2, 5):                                # single and pooled columns
        T = np.eye(columns.size)
        T[:, anchor] -= 1
        var = difficulty_covariance(info, pairs, mult, columns, anchor=anchor)
        assert var[anchor] == 0.0
        assert np.allclose(var, np.diag(T @ sigma @ T.T), rtol=1e-9, atol=1e-15)


def test_conditional_information_matches_summation_pairs_at_300_items():
    """The Fourier path (nodes dropped, no exact DFT) against leave-two-out ESFs."""
    from evalcert.irt.estimation.cml_information import conditional_information
    rng = np.random.default_rng(4)
    b = rng.normal(0, 1.5, 300)
    obs = rng.random((3, 300)) < 0.9
    scores = np.array([20.0, 130.0, 240.0])
    info, pairs = conditional_information(b, ObservedSets.from_mask(obs), scores)
    ref_pairs, ref_info = np.zeros((4, 4)), np.zeros(4)
    which = [3, 50, 120, 299]
    for i in range(3):
        items = np.flatnonzero(obs[i])
        full = log_esf(b[items])[int(scores[i])]
        pi = {}
        for j in which:
            if obs[i, j]:
                pi[j] = np.exp(-b[j] + log_esf(b[items[items != j]])[int(scores[i]) - 1] - full)
        for x, j in enumerate(which):
            if j in pi:
                ref_info[x] += pi[j] * (1 - pi[j])
            for y, k in enumerate(which):
                if j in pi and k in pi and j != k:
                    rest = b[items[(items != j) & (items != k)]]
                    both = np.exp(-b[j] - b[k] + log_esf(rest)[int(scores[i]) - 2] - full)
                    ref_pairs[x, y] += both - pi[j] * pi[k]
    off = ~np.eye(4, dtype=bool)
    assert np.allclose(info[which], ref_info, rtol=1e-10)
    assert np.allclose(pairs[np.ix_(which, which)][off], ref_pairs[off], rtol=1e-8)
