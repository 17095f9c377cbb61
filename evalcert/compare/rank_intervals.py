"""Simultaneous rank intervals, and multiplicity-adjusted p-values.

Ranks (1 = best) are read off simultaneous intervals for all pairwise differences
(Al Mohamad, Goeman & van Zwet 2022; Hall & Miller 2009): with ``d_ab`` the
estimated difference of scores and ``q`` a critical value such that every
``|d_ab - delta_ab| <= q se_ab`` holds jointly with probability ``1 - alpha``, the rank
of ``a`` lies in ``[1 + #{b : d_ba > q se_ba}, K - #{b : d_ab > q se_ab}]`` for every
model at once with probability at least ``1 - alpha``.

``q`` comes from bootstrap draws (the ``1 - alpha`` quantile of the largest
studentised deviation over all pairs, "max-t") or, for estimates with standard
errors (IRT abilities), from Bonferroni over the ``K (K - 1) / 2`` pairs.

Example
-------
>>> est = np.array([3.0, 2.0, 0.0])
>>> rank_from_se(est, np.array([0.1, 0.1, 0.1]), alpha=0.05)[0].tolist()
[1, 2, 3]
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

__all__ = ["ranks_of", "rank_bounds", "rank_from_draws", "rank_from_se", "adjust_pvalues",
           "ADJUST"]

ADJUST = ("holm", "bh")
#: bootstrap draws processed at once when studentising (bounds memory at ~K^2 x block)
_BLOCK = 64


def ranks_of(scores: np.ndarray) -> np.ndarray:
    """Competition ranks, 1 = highest score (ties share the better rank).

    Examples
    --------
    >>> ranks_of(np.array([0.2, 0.9, 0.2])).tolist()
    [2, 1, 2]
    """
    scores = np.asarray(scores, dtype=float)
    return 1 + (scores[None, :] > scores[:, None]).sum(axis=1)


def rank_bounds(diff: np.ndarray, se: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """Rank interval of every model from ``diff[a, b] = score_a - score_b`` and its SEs.

    Examples
    --------
    >>> d = np.array([[0, 1.0], [-1.0, 0]])
    >>> [b.tolist() for b in rank_bounds(d, np.full((2, 2), 0.1), 2.0)]
    [[1, 2], [1, 2]]
    """
    K = len(diff)
    with np.errstate(invalid="ignore", divide="ignore"):
        above = diff > q * se                     # a significantly above b
    np.fill_diagonal(above, False)
    low = 1 + above.sum(axis=0)                   # models significantly above a
    high = K - above.sum(axis=1)                  # minus models significantly below a
    return low.astype(int), high.astype(int)


def rank_from_draws(estimate: np.ndarray, draws: np.ndarray, alpha: float = 0.05):
    """``(rank, low, high, q)`` from bootstrap draws ``(B, K)`` of the scores (max-t).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> est = np.array([1.0, 0.5, 0.0])
    >>> draws = est + rng.normal(0, 0.05, (400, 3))
    >>> rank, low, high, q = rank_from_draws(est, draws)
    >>> rank.tolist(), low.tolist(), high.tolist()
    ([1, 2, 3], [1, 2, 3], [1, 2, 3])
    """
    estimate = np.asarray(estimate, dtype=float)
    draws = np.asarray(draws, dtype=float)
    K = len(estimate)
    diff = estimate[:, None] - estimate[None, :]
    centred = draws - draws.mean(axis=0)
    cov = centred.T @ centred / max(len(draws) - 1, 1)
    var = np.diag(cov)
    se = np.sqrt(np.maximum(var[:, None] + var[None, :] - 2 * cov, 0.0))
    upper = np.triu(np.ones((K, K), bool), 1) & (se > 0)
    t_max = np.empty(len(draws))
    for start in range(0, len(draws), _BLOCK):
        block = draws[start:start + _BLOCK]
        dev = np.abs(block[:, :, None] - block[:, None, :] - diff)[:, upper] / se[upper]
        t_max[start:start + _BLOCK] = dev.max(axis=1) if dev.shape[1] else 0.0
    q = float(np.quantile(t_max, 1 - alpha)) if len(t_max) else np.inf
    low, high = rank_bounds(diff, se, q)
    return ranks_of(estimate), low, high, q


def rank_from_se(estimate: np.ndarray, se: np.ndarray, alpha: float = 0.05):
    """``(rank, low, high, q)`` from independent estimates with standard errors (Bonferroni).

    Examples
    --------
    >>> rank, low, high, q = rank_from_se(np.array([1.0, 0.9, 0.0]), np.full(3, 0.1))
    >>> low.tolist(), high.tolist()
    ([1, 1, 3], [2, 2, 3])
    """
    estimate = np.asarray(estimate, dtype=float)
    se = np.asarray(se, dtype=float)
    K = len(estimate)
    m = max(K * (K - 1) // 2, 1)
    q = NormalDist().inv_cdf(1 - alpha / (2 * m))
    diff = estimate[:, None] - estimate[None, :]
    pair_se = np.sqrt(se[:, None] ** 2 + se[None, :] ** 2)
    low, high = rank_bounds(diff, pair_se, q)
    return ranks_of(estimate), low, high, q


def adjust_pvalues(p: np.ndarray, method: str = "holm") -> np.ndarray:
    """Holm (family-wise) or Benjamini-Hochberg (false discovery rate) adjusted p-values.

    Equal to ``statsmodels.stats.multitest.multipletests(p, method="holm" / "fdr_bh")[1]``.

    Examples
    --------
    >>> adjust_pvalues(np.array([0.01, 0.04, 0.03]), "holm").round(4).tolist()
    [0.03, 0.06, 0.06]
    >>> adjust_pvalues(np.array([0.01, 0.04, 0.03]), "bh").round(4).tolist()
    [0.03, 0.04, 0.04]
    """
    if method not in ADJUST:
        raise ValueError(f"method must be one of {ADJUST}, got {method!r}")
    p = np.asarray(p, dtype=float)
    m = len(p)
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == "holm":
        adj = np.maximum.accumulate((m - np.arange(m)) * ranked)
    else:
        adj = np.minimum.accumulate((m / np.arange(m, 0, -1) * ranked[::-1]))[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out
