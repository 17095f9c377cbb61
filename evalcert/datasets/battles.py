"""Simulated pairwise battle logs with known Bradley-Terry strengths (Arena-like).

Model ``k`` has log-strength ``theta_k ~ N(0, spread^2)``; each battle draws an ordered
pair (with popular models drawn more often, like the Arena), a tie with probability
``tie_rate``, and otherwise a winner by Bradley-Terry. Used by the tests (known truth)
and ``benchmarks/bench_rank.py`` (Arena size: 129 models, 1.8e6 battles, 15% ties).

Example
-------
>>> frame, theta = simulate_battles(n_models=5, n_battles=1000, seed=1)
>>> list(frame.columns), len(frame), theta.shape
(['model_a', 'model_b', 'winner'], 1000, (5,))
"""

from __future__ import annotations

import numpy as np

__all__ = ["simulate_battles", "WINNERS"]

WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")


def simulate_battles(n_models: int = 129, n_battles: int = 1_800_000, *, tie_rate: float = 0.15,
                     spread: float = 1.0, popularity: float = 1.0, seed: int = 0):
    """A battle table ``(model_a, model_b, winner)`` and the true centred log-strengths.

    Parameters
    ----------
    n_models, n_battles : int
        Size.
    tie_rate : float
        Share of ties (half of them ``tie (bothbad)``).
    spread : float
        Standard deviation of the true log-strengths.
    popularity : float
        Spread of log-popularity: models are drawn with probability ``exp(popularity z)``.
    seed : int
        Randomness.

    Returns
    -------
    frame : pandas.DataFrame
        Columns ``model_a, model_b, winner`` (categorical), model names ``m000``...
    theta : numpy.ndarray
        True log-strengths, centred at 0.

    Examples
    --------
    >>> frame, theta = simulate_battles(n_models=3, n_battles=6, tie_rate=0.0, seed=0)
    >>> sorted(set(frame["winner"])) <= ["model_a", "model_b"], abs(float(theta.sum())) < 1e-12
    (True, True)
    """
    import pandas as pd

    rng = np.random.default_rng(seed)
    theta = rng.normal(0, spread, n_models)
    theta -= theta.mean()
    weight = np.exp(popularity * rng.normal(size=n_models))
    weight /= weight.sum()
    a = rng.choice(n_models, n_battles, p=weight)
    b = rng.choice(n_models - 1, n_battles, p=None)
    b = b + (b >= a)
    p_a = 1 / (1 + np.exp(theta[b] - theta[a]))
    u = rng.random(n_battles)
    outcome = np.where(u < p_a, 0, 1)
    tie = rng.random(n_battles) < tie_rate
    outcome = np.where(tie, 2 + (rng.random(n_battles) < 0.5), outcome)
    names = np.array([f"m{k:03d}" for k in range(n_models)])
    frame = pd.DataFrame({
        "model_a": pd.Categorical.from_codes(a, names),
        "model_b": pd.Categorical.from_codes(b, names),
        "winner": pd.Categorical.from_codes(outcome, list(WINNERS))})
    return frame, theta
