"""Fig. 2 of paper 000: holdout RMSE against training coverage per sampling regime.

Example
-------
>>> fig = plot_coverage_sweep(sweep)            # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from evalcert.diagnostics.experiments import CoverageSweepResult  # noqa: E402
from evalcert.io.outputs import writing  # noqa: E402

__all__ = ["plot_coverage_sweep", "min_max_bars"]


def min_max_bars(values: np.ndarray) -> np.ndarray:
    """Error-bar lengths ``[mean - min, max - mean]`` of each row of ``values``, clipped at 0.

    When every seed gives the same value, the mean of equal floats can exceed their
    minimum by one rounding step, and matplotlib refuses negative bar lengths.

    Examples
    --------
    >>> bars = min_max_bars(np.array([[0.1152] * 50, [0.1, 0.3] * 25]))
    >>> bool((bars >= 0).all()), bars[:, 1].round(3).tolist()
    (True, [0.1, 0.1])
    """
    mean = values.mean(axis=1)
    return np.clip(np.vstack([mean - values.min(axis=1), values.max(axis=1) - mean]), 0, None)


def plot_coverage_sweep(sweep: CoverageSweepResult, path: str | Path | None = None) -> Figure:
    """Mean holdout RMSE (bars: min-max over seeds) against mean coverage, one line per regime.

    The dense fit is drawn as a horizontal reference line.

    Examples
    --------
    >>> from evalcert.data import ScoreMatrix
    >>> from evalcert.diagnostics.experiments import coverage_sweep
    >>> rng = np.random.default_rng(0)
    >>> S = ScoreMatrix.from_array(np.clip(np.subtract.outer(rng.normal(0, 0.3, 20),
    ...                                                      rng.normal(0, 0.3, 15)), -1, 1))
    >>> sweep = coverage_sweep(S, [("nlogn", {"C": 1.0}), ("nlogn", {"C": 2.0})], seeds=2,
    ...                        n_jobs=1, progress=False)
    >>> fig = plot_coverage_sweep(sweep)  # path= saves it
    >>> fig.axes[0].get_xlabel()
    'training coverage'
    >>> plt.close(fig)
    """
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for regime in dict.fromkeys(p.regime for p in sweep.points):
        pts = sorted((p for p in sweep.points if p.regime == regime),
                     key=lambda p: p.mean("coverage"))
        cov = np.array([p.mean("coverage") for p in pts])
        rmse = np.array([[r.rmse for r in p.runs] for p in pts])
        mean = rmse.mean(axis=1)
        ax.errorbar(cov, mean, yerr=min_max_bars(rmse), marker="o", capsize=3, label=regime)
    dense = sweep.points[0].dense
    ax.axhline(dense.rmse, color="k", ls="--", lw=1, label=f"dense ({dense.coverage:.0%})")
    ax.set_xlabel("training coverage")
    ax.set_ylabel("holdout RMSE")
    ax.legend(fontsize="small")
    fig.tight_layout()
    if path is not None:
        with writing(path) as tmp:
            fig.savefig(tmp)
    return fig
