"""Figures of :func:`evalcert.compare` and :func:`evalcert.rank`.

* :func:`plot_pairwise_matrix`: the matrix of differences in mean score between every
  two models (row minus column), significant cells (adjusted p below alpha) marked;
* :func:`plot_rank_forest`: the forest plot practitioners expect - each model's rank with
  its simultaneous interval, and for a Bradley-Terry ranking its Elo with the bootstrap
  interval.

Example
-------
>>> import numpy as np
>>> from evalcert.data import ScoreMatrix
>>> from evalcert.compare.paired import compare
>>> X = (np.random.default_rng(0).random((3, 60)) < [[0.9], [0.5], [0.3]]).astype(float)
>>> res = compare(ScoreMatrix.from_array(X, bounds=(0, 1)), n_boot=100)
>>> fig = plot_compare(res)
>>> len(fig.axes) >= 2
True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

__all__ = ["plot_pairwise_matrix", "plot_rank_forest", "plot_compare", "plot_rank"]

#: models shown with names; larger leaderboards are drawn without tick labels
_MAX_LABELS = 60


def _size(n: int) -> float:
    return float(np.clip(0.22 * n + 1.5, 3.0, 24.0))


def plot_pairwise_matrix(result: Any, ax=None):
    """Differences ``score(row) - score(column)`` on shared items; ``*`` marks pairs whose
    adjusted p-value is below alpha.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.data import ScoreMatrix
    >>> from evalcert.compare.paired import compare
    >>> X = (np.random.default_rng(1).random((3, 80)) < [[0.9], [0.6], [0.2]]).astype(float)
    >>> ax = plot_pairwise_matrix(compare(ScoreMatrix.from_array(X, bounds=(0, 1)), n_boot=0))
    >>> ax.get_title().startswith("difference in mean score")
    True
    >>> plt.close("all")
    """
    models = [r["model"] for r in result.ranks]
    index = {m: k for k, m in enumerate(models)}
    K = len(models)
    D = np.full((K, K), np.nan)
    sig = np.zeros((K, K), bool)
    for p in result.pairs:
        a, b = index[p["model_a"]], index[p["model_b"]]
        D[a, b], D[b, a] = p["diff"], -p["diff"]
        sig[a, b] = sig[b, a] = p["p_adjusted"] < result.alpha
    if ax is None:
        _, ax = plt.subplots(figsize=(_size(K) + 1, _size(K)))
    lim = float(np.nanmax(np.abs(D))) if K > 1 and np.isfinite(D).any() else 1.0
    im = ax.imshow(D, cmap="RdBu", vmin=-lim, vmax=lim)
    ax.figure.colorbar(im, ax=ax, shrink=0.8, label="row - column")
    if K <= _MAX_LABELS:
        ax.set_xticks(range(K), models, rotation=90, fontsize="small")
        ax.set_yticks(range(K), models, fontsize="small")
        for a, b in zip(*np.nonzero(sig)):
            ax.text(b, a, "*", ha="center", va="center", fontsize="small")
    ax.set_title(f"difference in mean score (* {result.adjust}-adjusted p < {result.alpha:g})")
    return ax


def plot_rank_forest(rows: list[dict], ax=None, *, value: str = "rank", low: str = "rank_ci_low",
                     high: str = "rank_ci_high", label: str = "rank (simultaneous interval)"):
    """Forest plot: one line per model (best at the top) from ``low`` to ``high``, a dot at
    ``value``.

    Examples
    --------
    >>> ax = plot_rank_forest([{"model": "a", "rank": 1, "rank_ci_low": 1, "rank_ci_high": 2},
    ...                        {"model": "b", "rank": 2, "rank_ci_low": 1, "rank_ci_high": 2}])
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['a', 'b']
    >>> plt.close("all")
    """
    n = len(rows)
    if ax is None:
        _, ax = plt.subplots(figsize=(5, _size(n)))
    y = np.arange(n)
    v = np.array([r[value] for r in rows], dtype=float)
    lo = np.array([r[low] for r in rows], dtype=float)
    hi = np.array([r[high] for r in rows], dtype=float)
    ax.hlines(y, lo, hi, color="tab:blue", lw=2)
    ax.plot(v, y, "o", color="black", ms=3)
    if n <= _MAX_LABELS:
        ax.set_yticks(y, [r["model"] for r in rows], fontsize="small")
    ax.set_ylim(n - 0.5, -0.5)
    if value == "rank":
        ax.invert_xaxis()
    ax.set_xlabel(label)
    ax.grid(axis="x", alpha=0.3)
    return ax


def plot_compare(result: Any, path: str | Path | None = None) -> Figure:
    """The pairwise matrix and the rank forest of a :class:`~evalcert.compare.paired.CompareResult`.

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.data import ScoreMatrix
    >>> from evalcert.compare.paired import compare
    >>> X = (np.random.default_rng(2).random((4, 50)) < 0.6).astype(float)
    >>> fig = plot_compare(compare(ScoreMatrix.from_array(X, bounds=(0, 1)), n_boot=50))
    >>> plt.close(fig)
    """
    K = len(result.ranks)
    fig, (left, right) = plt.subplots(1, 2, figsize=(_size(K) + 6.5, _size(K)),
                                      gridspec_kw={"width_ratios": [_size(K) + 1, 5]})
    plot_pairwise_matrix(result, left)
    plot_rank_forest(list(result.ranks), right)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig


def plot_rank(result: Any, path: str | Path | None = None) -> Figure:
    """Forest plots of a :class:`~evalcert.compare.leaderboard.RankResult`: Elo with its
    bootstrap interval, and rank with its simultaneous interval.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalcert.compare.leaderboard import rank
    >>> log = pd.DataFrame({"model_a": ["a", "b", "c"] * 4, "model_b": ["b", "c", "a"] * 4,
    ...                     "winner": ["model_a", "tie", "model_a"] * 4})
    >>> fig = plot_rank(rank(log, n_boot=20))
    >>> [ax.get_xlabel() for ax in fig.axes]
    ['Elo (bootstrap interval)', 'rank (simultaneous interval)']
    >>> plt.close(fig)
    """
    rows = result.rows()
    n = len(rows)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, _size(n)), sharey=True)
    for r in rows:
        if not np.isfinite(r["elo_ci_low"]):
            r["elo_ci_low"] = r["elo_ci_high"] = r["elo"]
    plot_rank_forest(rows, left, value="elo", low="elo_ci_low", high="elo_ci_high",
                     label="Elo (bootstrap interval)")
    plot_rank_forest(rows, right)
    fig.suptitle(f"Bradley-Terry ranking of {n} models ({result.n_battles} battles)")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig
