"""The per-judge table as a figure (issue 25, item 1), drawn with the Agg canvas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from evalcert.io.outputs import writing

__all__ = ["plot_judges"]


def plot_judges(table: Any, path: str | Path | None = None) -> Figure:
    """One row per judge (flagged judges on top): its Dawid-Skene accuracy with the
    bootstrap interval (estimated, a dot and a bar), its exact accuracy range at ``T``
    (``min_accuracy`` to ``max_accuracy``, a grey band: certain) and ``T`` (dashed).

    Examples
    --------
    >>> from evalcert.logic.judges import judge_table
    >>> from evalcert.logic.simulate import simulate_decisions
    >>> fig = plot_judges(judge_table(simulate_decisions(100, 2, 3, seed=0), n_boot=20))
    >>> len(fig.axes[0].get_yticklabels())
    3
    """
    rows = sorted(table.rows, key=lambda r: (r.flag is not None, -r.ds_accuracy))
    fig = Figure(figsize=(6.5, 1.2 + 0.45 * len(rows)), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    y = np.arange(len(rows))
    labelled = False
    for k, r in enumerate(rows):
        if r.min_accuracy is not None:
            lo, hi = float(r.min_accuracy), float(r.max_accuracy)
            label = None if labelled else "exact range at T"
            labelled = True
            if hi - lo < 0.004:  # one exact value: a bar of no width would not show
                ax.plot([lo, lo], [k - 0.3, k + 0.3], color="0.6", lw=3, label=label,
                        solid_capstyle="butt")
            else:
                ax.barh(k, hi - lo, left=lo, height=0.6, color="0.85", label=label)
        if r.ds_ci_low is not None:
            ax.plot([r.ds_ci_low, r.ds_ci_high], [k, k], color="C0", lw=2)
        ax.plot(r.ds_accuracy, k, "o", color="C3" if r.flag else "C0")
    if table.T is not None:
        ax.axvline(float(table.T), ls="--", color="k", lw=1, label=f"T = {table.T}")
    ax.set_yticks(y, [f"{r.judge}" + (f" ({r.flag})" if r.flag else "") for r in rows])
    ax.set_xlim(0, 1.02)
    ax.set_xlabel("accuracy (dot, bar: Dawid-Skene with its interval)")
    if table.T is not None or any(r.min_accuracy is not None for r in rows):
        ax.legend(loc="lower left", fontsize=8)
    if path is not None:
        with writing(path) as tmp:
            fig.savefig(tmp)
    return fig
