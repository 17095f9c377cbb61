"""Elementary symmetric functions of Rasch item parameters, in log space.

``gamma_r(b) = sum_{|A| = r} exp(-sum_{j in A} b_j)`` (Eq. 3.6) is the
normaliser of the conditional likelihood ``P(Y_i | S_i, b)``. Its values span
thousands of orders of magnitude at LLM-benchmark sizes, so everything here is
returned as ``log gamma``.

Two algorithms:

* :func:`log_esf` - every order ``r = 0..M`` by the summation algorithm in log
  space, ``O(M^2)``; exact, a reference for small and medium ``M``.
* :func:`conditional_terms` - for each model only the order it needs,
  ``log gamma_{S_i}(b_{O_i})`` over its observed items ``O_i``, together with
  the conditional success probabilities
  ``pi_ij = P(Y_ij = 1 | S_i) = exp(-b_j) gamma_{S_i - 1}(b_{-j}) / gamma_{S_i}``
  that make the CML gradient. It inverts the characteristic function of the
  score under the tilt ``p_j = sigma(theta_i - b_j)`` at the saddle point
  ``sum_j p_j = S_i`` (where ``theta_i`` is the ML ability):
  ``P(S = r) = (1/K) sum_k phi(t_k) exp(-i t_k r)`` on ``K`` points of the circle,
  exact up to aliasing of mass ``K`` scores away, and ``|phi(t)| <=
  exp(-v (1 - cos t))`` with ``v = sum p_j (1 - p_j)`` lets all nodes where
  ``v (1 - cos t) > 40`` be dropped. A few dozen nodes per model suffice at any
  ``M``, so the cost is ``O(N M)`` per evaluation and 40,000+ items pose no
  problem of range or time.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

__all__ = ["log_esf", "conditional_terms", "ml_abilities"]

_DROP = 40.0  # nodes with |phi| <= exp(-40) are dropped


def log_esf(difficulties: np.ndarray) -> np.ndarray:
    """``log gamma_r(b)`` for ``r = 0..M`` by the summation algorithm in log space.

    Examples
    --------
    >>> np.exp(log_esf(np.zeros(3)))   # binomial coefficients
    array([1., 3., 3., 1.])
    """
    b = np.asarray(difficulties, dtype=float)
    out = np.full(b.size + 1, -np.inf)
    out[0] = 0.0
    for j, lb in enumerate(-b):
        out[1:j + 2] = np.logaddexp(out[1:j + 2], out[:j + 1] + lb)
    return out


def ml_abilities(difficulties: np.ndarray, observed: np.ndarray, scores: np.ndarray,
                 iters: int = 60, item_weights: np.ndarray | None = None) -> np.ndarray:
    """Solve ``sum_{j in O_i} w_j sigma(theta_i - b_j) = S_i`` for every model.

    ``w_j`` (default 1) counts identical items pooled into column ``j``.
    Requires ``0 < S_i < sum_{j in O_i} w_j``. Safeguarded Newton (steps capped
    at 2 logits); this is the ML ability given ``b`` and the saddle point of the
    score law.

    Examples
    --------
    >>> b = np.array([-1.0, 0.0, 1.0])
    >>> theta = ml_abilities(b, np.ones((2, 3), dtype=bool), np.array([1.0, 2.0]))
    >>> np.round(theta, 4)  # symmetric items: scores 1 and 2 of 3 are mirror images
    array([-0.8029,  0.8029])
    """
    obs = observed.astype(float)
    if item_weights is not None:
        obs = obs * item_weights[None, :]
    n_i = obs.sum(1)
    theta = np.log(scores / (n_i - scores)) + (obs @ difficulties) / n_i
    for _ in range(iters):
        p = expit(theta[:, None] - difficulties[None, :])
        f = (p * obs).sum(1) - scores
        step = np.clip(f / np.maximum((p * (1 - p) * obs).sum(1), 1e-300), -2.0, 2.0)
        theta -= step
        if np.max(np.abs(step)) < 1e-12:
            break
    return theta


def conditional_terms(difficulties: np.ndarray, observed: np.ndarray, scores: np.ndarray,
                      item_weights: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-model ``log gamma_{S_i}`` over observed items and ``pi_ij = P(Y_ij=1|S_i)``.

    Models with the same observed items whose scores lie within two standard
    deviations of the score law share one tilt, so the characteristic function
    is evaluated once per group and ``pi`` comes from one matrix product.

    Parameters
    ----------
    difficulties : (M,) item difficulties ``b``.
    observed : (N, M) bool, the items each model answered.
    scores : (N,) int, ``0 < S_i <`` the number of observed items.
    item_weights : (M,) int, optional
        Column ``j`` stands for ``w_j`` items with the same difficulty and
        observed models (default 1); ``gamma`` runs over all of them.

    Returns
    -------
    log_gamma : (N,)
    pi : (N, M), zero on unobserved cells, for one item of each column;
        ``pi @ w`` equals ``S_i``.
    theta : (N,) ML abilities given ``b``.

    Examples
    --------
    >>> b = np.array([-1.0, 0.0, 1.0])
    >>> log_gamma, pi, theta = conditional_terms(b, np.ones((2, 3), dtype=bool),
    ...                                          np.array([1, 2]))
    >>> bool(np.allclose(log_gamma, log_esf(b)[[1, 2]]))  # the exact ESFs
    True
    >>> np.round(pi.sum(1), 6)  # each row of pi sums to the score
    array([1., 2.])
    """
    b = np.asarray(difficulties, dtype=float)
    obs = np.asarray(observed, dtype=bool)
    scores = np.asarray(scores, dtype=float)
    w = np.ones(b.size) if item_weights is None else np.asarray(item_weights, dtype=float)
    theta = ml_abilities(b, obs, scores, item_weights=w)
    log_gamma = np.empty(scores.size)
    pi = np.zeros(obs.shape)
    for members in _tilt_groups(b, obs, scores, theta, w):
        items = obs[members[0]]
        center = members[len(members) // 2]
        lg, pi_g = _group_terms(b[items], scores[members], theta[center], w[items])
        log_gamma[members] = lg
        pi[np.ix_(members, np.flatnonzero(items))] = pi_g
    return log_gamma, pi, theta


def _tilt_groups(b: np.ndarray, obs: np.ndarray, scores: np.ndarray,
                 theta: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    """Group models by observed pattern, then greedily by score within 2 sd of a tilt."""
    _, pattern = np.unique(obs, axis=0, return_inverse=True)
    pattern = pattern.ravel()
    p = expit(theta[:, None] - b[None, :]) * obs
    sd = np.sqrt((p * (1 - p)) @ w)
    groups = []
    for pat in np.unique(pattern):
        rows = np.flatnonzero(pattern == pat)
        rows = rows[np.argsort(scores[rows], kind="stable")]
        start = 0
        for k in range(1, rows.size + 1):
            if k == rows.size or scores[rows[k]] - scores[rows[start]] > 2 * sd[rows[start]] or sd[rows[start]] < 3:
                groups.append(rows[start:k])
                start = k
    return groups


def _group_terms(b: np.ndarray, scores: np.ndarray, tilt: float,
                 mult: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fourier inversion of the score law under one tilt for several scores.

    Column ``j`` stands for ``mult_j`` identical items: the characteristic
    function is a product over all of them, and ``pi_j`` is for one of them.
    """
    p = expit(tilt - b)
    q = 1.0 - p
    var = float((p * q) @ mult)
    K = int(min(mult.sum() + 1, np.ceil(12 * np.sqrt(var) + 40)))
    K += 1 - K % 2                                  # odd K: no node at t = pi
    t = 2 * np.pi * np.arange((K - 1) // 2 + 1) / K
    t = t[var * (1 - np.cos(t)) <= _DROP][:, None]
    one_minus_cos, sin = 1.0 - np.cos(t), np.sin(t)
    den = 1.0 - 2.0 * p * q * one_minus_cos          # |q + p e^{it}|^2, (nodes, M)
    log_phi = (0.5 * np.log(den) @ mult
               + 1j * (np.arctan2(p * sin, 1.0 - p * one_minus_cos) @ mult))
    weight = np.where(t[:, 0] == 0, 1.0, 2.0)         # conjugate nodes folded in
    w = np.exp(log_phi[None, :] - 1j * np.outer(scores, t[:, 0])) * weight  # (members, nodes)
    A = w.real.sum(1)                                 # K * P_tilt(S = r)
    # 1 / (p + q e^{-it}) = (p + q e^{it}) / den;  B = K * P(S_-j = r - 1) / p_j
    B = w.real @ ((1.0 - q * one_minus_cos) / den) - w.imag @ (q * sin / den)
    log_gamma = np.log(A / K) - scores * tilt + np.logaddexp(0.0, tilt - b) @ mult
    return log_gamma, p * B / A[:, None]
