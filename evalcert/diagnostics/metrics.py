"""Fidelity metrics of a sparse fit (paper 000, Sec. 5, App. D.3).

* Holdout RMSE between predicted and observed scores on the reserved cells;
* Spearman rho and Kendall tau between the abilities ``theta`` of a sparse fit
  and those of a reference (dense) fit;
* ranking AUC: each agent's predictions averaged over items (one score per
  agent), and the probability that a random "good" agent outscores a random
  "problematic" one (ties count 1/2; the Mann-Whitney statistic).

Example
-------
>>> import numpy as np
>>> ranking_auc(np.array([0.9, 0.8, 0.1, 0.2]), np.array([True, True, False, False]))
1.0
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np
from scipy.stats import kendalltau, rankdata, spearmanr

from evalcert.data import ScoreMatrix
from evalcert.errors import InputError
from evalcert.results import ResultMixin, format_table

__all__ = ["holdout_rmse", "ranking_auc", "partition_vector", "FidelityMetrics", "fidelity"]


def holdout_rmse(predictions: np.ndarray, S: ScoreMatrix, holdout: np.ndarray) -> float:
    """Root mean squared error of ``predictions`` on the observed held-out cells.

    ``holdout`` is a K x J mask or a boolean vector over ``S.cells()``;
    ``predictions`` a K x J array or one prediction per observed cell (order of
    ``S.cells()``), so large designs never need a K x J array.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert import ScoreMatrix
    >>> S = ScoreMatrix.from_array(np.array([[0.5, 0.1], [np.nan, -0.2]]))
    >>> hold = np.array([[True, False], [False, True]])
    >>> round(holdout_rmse(np.zeros(S.shape), S, hold), 4)  # sqrt((0.5**2 + 0.2**2) / 2)
    0.3808
    >>> [a.tolist() for a in S.cells()[:2]]  # the observed cells, in this order
    [[0, 0, 1], [0, 1, 1]]
    >>> round(holdout_rmse(np.array([0.4, 0.1, 0.0]), S, np.array([True, False, True])), 4)
    0.1581
    """
    cells = S.cell_mask(holdout)
    if not cells.any():
        raise InputError("the holdout has no observed cell; nothing to score")
    rows, cols, scores = S.cells()
    pred = np.asarray(predictions)
    held = pred[cells] if pred.shape == (S.n_observed,) else pred[rows[cells], cols[cells]]
    return float(np.sqrt(np.mean((held - scores[cells]) ** 2)))


def ranking_auc(scores: np.ndarray, good: np.ndarray) -> float:
    """AUC of ``scores`` for telling ``good`` (True) from problematic (False) agents.

    ``AUC = (R_good - n_good (n_good + 1) / 2) / (n_good n_bad)`` with ``R_good``
    the rank sum of the good agents (average ranks for ties).

    Raises
    ------
    InputError
        If the partition has only one class.

    Examples
    --------
    >>> good = np.array([True, False, True, False])
    >>> ranking_auc(np.array([0.9, 0.2, 0.5, 0.1]), good)  # every good agent ranked higher
    1.0
    >>> ranking_auc(np.array([0.5, 0.5, 0.5, 0.1]), good)  # a tie counts one half
    0.75
    """
    scores = np.asarray(scores, dtype=float)
    good = np.asarray(good, dtype=bool)
    n_good, n_bad = int(good.sum()), int((~good).sum())
    if n_good == 0 or n_bad == 0:
        raise InputError(f"the ranking AUC needs both classes; got {n_good} good and {n_bad} "
                         "problematic agent(s): check the labels (good_faith 1/0)")
    ranks = rankdata(scores)
    return float((ranks[good].sum() - n_good * (n_good + 1) / 2) / (n_good * n_bad))


def partition_vector(agents: Sequence[str], labels: Mapping[str, bool]) -> np.ndarray:
    """Float vector over ``agents``: 1.0 good, 0.0 problematic, NaN unlabelled.

    Examples
    --------
    >>> partition_vector(["a", "b", "c"], {"a": True, "c": False}).tolist()
    [1.0, nan, 0.0]
    """
    return np.array([float(labels[a]) if a in labels else np.nan for a in agents])


@dataclasses.dataclass(frozen=True)
class FidelityMetrics(ResultMixin):
    """Holdout RMSE and ranking fidelity of one fit (App. D.3).

    Attributes
    ----------
    rmse : float
        Holdout RMSE.
    spearman, kendall : float or None
        Rank correlations of ``theta`` with the reference abilities.
    auc : float or None
        Ranking AUC of item-averaged predictions for the partition.
    n_train, n_holdout : int
        Training and scored held-out cells.
    coverage : float
        ``n_train / (K J)``.

    Examples
    --------
    Returned by :func:`fidelity` (see its example); metrics that were not
    computed are None:

    >>> m = FidelityMetrics(rmse=0.05, spearman=0.9, kendall=None, auc=None, n_train=120,
    ...                     n_holdout=30, coverage=0.75)
    >>> m.to_dict()
    {'rmse': 0.05, 'spearman': 0.9, 'kendall': None, 'auc': None, 'n_train': 120,
     'n_holdout': 30, 'coverage': 0.75}
    """

    rmse: float
    spearman: float | None
    kendall: float | None
    auc: float | None
    n_train: int
    n_holdout: int
    coverage: float

    def summary(self) -> str:
        rows = [(name, value) for name, value in (("holdout RMSE", self.rmse),
                                                  ("Spearman rho", self.spearman),
                                                  ("Kendall tau", self.kendall),
                                                  ("ranking AUC", self.auc)) if value is not None]
        head = (f"{self.n_train} training cells ({self.coverage:.1%} coverage), "
                f"{self.n_holdout} held-out cells")
        return head + "\n" + format_table(rows, ["metric", "value"])


def fidelity(predictions: np.ndarray, theta: np.ndarray, S: ScoreMatrix, train: np.ndarray,
             holdout: np.ndarray, reference_theta: np.ndarray | None = None,
             partition: np.ndarray | None = None) -> FidelityMetrics:
    """All fidelity metrics of one fit.

    Parameters
    ----------
    predictions : ndarray, shape (K, J) or (n_observed,)
        Predicted scores for every cell, or for the observed cells (order of
        ``S.cells()``; then no ranking AUC, which averages over all items).
    theta : ndarray, shape (K,)
        Fitted abilities.
    S : ScoreMatrix
        All scores (training and holdout).
    train, holdout : ndarray of bool, shape (K, J) or (n_observed,)
        Training design and held-out cells (K x J masks or vectors over ``S.cells()``).
    reference_theta : ndarray, shape (K,), optional
        Abilities of the dense fit, for Spearman and Kendall.
    partition : ndarray, shape (K,), optional
        1.0 good, 0.0 problematic, NaN unlabelled (:func:`partition_vector`).

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert import ClippedLinear, ScoreMatrix
    >>> rng = np.random.default_rng(0)
    >>> S = ScoreMatrix.from_array(np.clip(np.add.outer(rng.normal(0, .3, 8), rng.normal(0, .3, 20))
    ...                            + rng.normal(0, .05, (8, 20)), -1, 1))
    >>> hold = np.random.default_rng(1).random(S.shape) < 0.2
    >>> model = ClippedLinear(lam=1e-6).fit(ScoreMatrix.from_array(np.where(hold, np.nan, S.values)))
    >>> m = fidelity(model.predict(), model.theta_, S, ~hold, hold)
    >>> m.n_train + m.n_holdout == S.n_observed, bool(m.rmse < 0.1)  # noise sd 0.05
    (True, True)
    >>> sorted(m.to_dict())[:4]
    ['auc', 'coverage', 'kendall', 'n_holdout']
    """
    rmse = holdout_rmse(predictions, S, holdout)
    rho = tau = auc = None
    if reference_theta is not None:
        rho = float(spearmanr(theta, reference_theta).statistic)
        tau = float(kendalltau(theta, reference_theta).statistic)
    if partition is not None:
        labelled = ~np.isnan(partition)
        if np.ndim(predictions) != 2:
            raise InputError("the ranking AUC averages predictions over every item: pass the "
                             "K x J predictions, or no partition")
        per_agent = np.asarray(predictions).mean(axis=1)
        auc = ranking_auc(per_agent[labelled], partition[labelled] == 1.0)
    K, J = S.shape
    n_train = int(np.asarray(train).sum())
    return FidelityMetrics(rmse, rho, tau, auc, n_train, int(S.cell_mask(holdout).sum()),
                           n_train / (K * J))
