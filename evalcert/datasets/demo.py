"""The demo dataset: a deterministic synthetic 30 x 200 TVD-MI-like score matrix.

Scores follow the additive model of the identity-link paper (Eq. 4),
``s_ij = clip(theta_i - b_j + eps_ij, -1, 1)``, rounded to multiples of
``1/(4(K-1))`` like real TVD-MI scores (each a mean of K-1 critic outcomes in
quarters), with about 8% of cells unobserved (the paper's "natural sparsity").
Four strong "faithful" agents and a few easy items push ``theta_i - b_j`` past
1, so a few percent of cells saturate at +1 and the all-cells box of Eq. 7 binds.
"""

from __future__ import annotations

import numpy as np

from evalcert.data import ScoreMatrix

__all__ = ["demo_scores", "DEMO_CATEGORIES"]

#: Agent categories of the demo, in row order (as in the paper's App. A).
DEMO_CATEGORIES = ("Faithful",) * 4 + ("Style",) * 6 + ("Strategic",) * 15 + ("Low Effort",) * 5


def demo_scores(seed: int = 0, n_agents: int = 30, n_items: int = 200,
                missing: float = 0.08) -> ScoreMatrix:
    """Return the demo :class:`~evalcert.data.ScoreMatrix` (deterministic for a seed).

    Parameters
    ----------
    seed : int
        Seed of the generator; the default gives the shipped demo.
    n_agents, n_items : int
        Shape; agent categories follow :data:`DEMO_CATEGORIES` when
        ``n_agents == 30``.
    missing : float
        Fraction of cells left unobserved.

    Examples
    --------
    >>> S = demo_scores()
    >>> S.shape, S.n_observed, S.agents[0]
    ((30, 200), 5541, 'faithful_0')
    """
    rng = np.random.default_rng(seed)
    K, J = n_agents, n_items
    if K == len(DEMO_CATEGORIES):
        centre = {"Faithful": 0.75, "Style": 0.45, "Strategic": 0.2, "Low Effort": -0.3}
        theta = np.array([centre[c] for c in DEMO_CATEGORIES]) + rng.normal(0, 0.08, K)
        names = [f"{c.lower().replace(' ', '_')}_{k}" for k, c in enumerate(DEMO_CATEGORIES)]
    else:
        theta = rng.normal(0.2, 0.35, K)
        names = [f"agent_{k}" for k in range(K)]
    b = rng.normal(0.0, 0.2, J)
    b[: max(1, J // 20)] -= 0.35
    noise = rng.standard_t(df=5, size=(K, J)) * 0.09
    quantum = 4 * (K - 1)
    scores = np.clip(np.round((theta[:, None] - b[None, :] + noise) * quantum) / quantum, -1, 1)
    scores[rng.random((K, J)) < missing] = np.nan
    for k in range(K):  # keep every agent and item observed at least once
        if np.isnan(scores[k]).all():
            scores[k, 0] = 0.0
    return ScoreMatrix.from_array(scores, agents=names,
                                  items=[f"item_{j}" for j in range(J)])
