"""Pool exchangeable models and items of a Rasch response matrix.

In the Rasch joint likelihood (Eq. 3.3) the responses enter only through the
observed pattern and the raw scores: ``-log L = sum_ij o_ij softplus(theta_i -
b_j) - sum_i r_i theta_i + sum_j s_j b_j``. Two models with the same observed
items and the same raw score are exchangeable: swapping them leaves the
objective (and a Gaussian prior) unchanged, so at the optimum, which is unique
up to the shift, they share one ability. The same holds for items with the same
observed models and the same count of correct answers. Restricted to such
group-constant parameters the objective is a weighted problem on a
``G x H`` table of groups; on a complete 1000 x 200 matrix of simulated
Rasch data that is 165 x 170 cells instead of 200,000.

The same argument makes a model's posterior in the Rasch marginal model
depend only on its observed items and raw score, which :mod:`.mml` uses.
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["PooledResponses", "pool_responses", "group_rows"]


@dataclasses.dataclass(frozen=True)
class PooledResponses:
    """A response matrix reduced to groups of exchangeable models and items.

    Attributes
    ----------
    row_group, col_group : ndarray of int, shapes (n_models,), (n_items,)
        The group of every model and item.
    row_first, col_first : ndarray of int, shapes (G,), (H,)
        One representative model (item) of each group.
    row_size, col_size : ndarray of int, shapes (G,), (H,)
        Models (items) per group.
    cells : ndarray of float, shape (G, H)
        Observed cells pooled into each group pair: ``row_size[g] *
        col_size[h]`` when the pair is observed, else 0.
    row_ones, col_ones : ndarray of float, shapes (G,), (H,)
        Correct answers summed over each group's cells.

    Examples
    --------
    >>> Y = np.array([[1, 0, 1], [1, 0, 1], [0, 1, 1], [0, 0, 0.0]])
    >>> pooled = pool_responses(Y, np.ones(Y.shape, dtype=bool))
    >>> pooled.shape, sorted(pooled.row_size.tolist()), float(pooled.cells.sum())
    ((2, 3), [1, 3], 12.0)
    """

    row_group: np.ndarray
    col_group: np.ndarray
    row_first: np.ndarray
    col_first: np.ndarray
    row_size: np.ndarray
    col_size: np.ndarray
    cells: np.ndarray
    row_ones: np.ndarray
    col_ones: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return self.cells.shape  # type: ignore[return-value]


def group_rows(observed: np.ndarray, totals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group the rows of ``observed`` by (observed pattern, total).

    Rows are keyed by a 64-bit hash of their packed pattern and total, and
    every row is then compared with its group's representative, so a hash
    collision can never merge different rows (an exact sort is used if one
    occurs).

    Returns
    -------
    first : ndarray of int, shape (G,)
        One representative row per group.
    group : ndarray of int, shape (n,)
        The group of every row.

    Examples
    --------
    >>> observed = np.array([[1, 0], [1, 0], [0, 1]], dtype=bool)
    >>> first, group = group_rows(observed, np.array([1, 1, 1]))
    >>> first.size, bool(group[0] == group[1] != group[2])
    (2, True)
    """
    obs = np.asarray(observed, dtype=bool)
    totals = np.asarray(totals, np.int64)
    packed = np.packbits(obs, axis=1)
    _, first, group = np.unique(_row_hash(packed, totals), return_index=True,
                                return_inverse=True)
    group = group.ravel()
    rep = first[group]
    if np.array_equal(obs, obs[rep]) and np.array_equal(totals, totals[rep]):
        return first, group
    key = np.concatenate([packed, totals[:, None].view(np.uint8)], axis=1)
    _, first, group = np.unique(key, axis=0, return_index=True, return_inverse=True)
    return first, group.ravel()


def _row_hash(packed: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of ``packed`` (uint8) and its total (wrapping arithmetic)."""
    weights = np.random.default_rng(0x5EED).integers(1, 2 ** 63, packed.shape[1] + 1,
                                                      dtype=np.uint64) | np.uint64(1)
    with np.errstate(over="ignore"):
        return packed.astype(np.uint64) @ weights[:-1] + totals.astype(np.uint64) * weights[-1]


def pool_responses(values: np.ndarray, observed: np.ndarray) -> PooledResponses:
    """Group models by (observed items, raw score) and items by (observed models, count).

    Parameters
    ----------
    values : (n_models, n_items) 0/1 responses, 0 on unobserved cells.
    observed : (n_models, n_items) bool.

    Examples
    --------
    Models with the same raw score on the same items are exchangeable in the
    Rasch model and pooled into one group:

    >>> Y = np.array([[1, 0, 1], [1, 0, 1], [0, 1, 1], [0, 0, 0.0]])
    >>> pooled = pool_responses(Y, np.ones(Y.shape, dtype=bool))
    >>> pooled.row_first.size, pooled.col_first.size, float(pooled.row_ones.sum())
    (2, 3, 6.0)
    """
    obs = np.asarray(observed, dtype=bool)
    hits = np.asarray(values, dtype=float) * obs
    row_first, row_group = group_rows(obs, np.rint(hits.sum(1)))
    col_first, col_group = group_rows(obs.T, np.rint(hits.sum(0)))
    row_size = np.bincount(row_group, minlength=row_first.size)
    col_size = np.bincount(col_group, minlength=col_first.size)
    pattern = obs[np.ix_(row_first, col_first)]
    return PooledResponses(
        row_group=row_group, col_group=col_group, row_first=row_first, col_first=col_first,
        row_size=row_size, col_size=col_size,
        cells=pattern * np.outer(row_size, col_size).astype(float),
        row_ones=np.bincount(row_group, weights=hits.sum(1), minlength=row_first.size),
        col_ones=np.bincount(col_group, weights=hits.sum(0), minlength=col_first.size))
