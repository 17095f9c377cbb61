"""Figures of the no-knowledge alarm (paper 003, Figs. 7 and 8), drawn with the Agg canvas.

No pyplot and no global backend switch: each function builds a
:class:`matplotlib.figure.Figure` on a ``FigureCanvasAgg`` and optionally saves it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from evalcert.logic.alarms import AlarmResult, MinMaxCurve

__all__ = ["plot_minmax_curve", "plot_label_curves"]


def _new_figure(width: float = 6.0, height: float = 4.0) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _curve_of(result: AlarmResult | MinMaxCurve) -> MinMaxCurve:
    curve = result.curve if isinstance(result, AlarmResult) else result
    if curve is None:
        raise ValueError("the alarm result carries no curve; call alarm(..., curves=True)")
    return curve


def plot_minmax_curve(result: AlarmResult | MinMaxCurve, path: str | Path | None = None,
                      threshold: float | None = None) -> Figure:
    """Fig. 7: ``v(q)`` of every answer key, keys sorted by value; the maximum is ``T``.

    ``threshold`` (default: the result's ``x``) is drawn as a horizontal line.

    Examples
    --------
    >>> from evalcert.logic import mtbench_demo
    >>> fig = plot_minmax_curve(mtbench_demo())  # add a path to save it as PNG
    >>> fig.axes[0].get_xlabel()
    'answer keys (sorted by v)'
    """
    curve = _curve_of(result)
    values = np.sort(curve.values())
    fig = _new_figure()
    ax = fig.add_subplot()
    ax.plot(np.arange(len(values)), values, ".", ms=3, label="best min label accuracy v(q)")
    ax.axhline(values[-1], color="C3", lw=1, label=f"T = {curve.value(int(np.argmax(curve.values())))}")
    if threshold is None and isinstance(result, AlarmResult):
        threshold = float(result.threshold)
    if threshold is not None:
        ax.axhline(threshold, color="C2", lw=1, ls="--", label=f"threshold x = {threshold:g}")
    ax.set_xlabel("answer keys (sorted by v)")
    ax.set_ylabel("min over graders and labels of best accuracy")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="upper left", fontsize=8)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def plot_label_curves(result: AlarmResult | MinMaxCurve,
                      path: str | Path | None = None) -> Figure:
    """Fig. 8: per label, ``min_i min(q_l, R_{l,i}) / q_l`` over the keys with ``q_l > 0``,
    each label sorted on its own (sort orders are not comparable across labels).

    Examples
    --------
    >>> from evalcert.logic import mtbench_demo
    >>> fig = plot_label_curves(mtbench_demo())
    >>> len(fig.axes[0].get_lines()) >= 3  # one curve per label
    True
    """
    curve = _curve_of(result)
    fig = _new_figure()
    ax = fig.add_subplot()
    for l, label in enumerate(curve.labels):
        vals = curve.label_values(l)
        vals = np.sort(vals[~np.isnan(vals)])
        ax.plot(np.arange(len(vals)), vals, ".", ms=3, label=f"label {label}")
    ax.set_xlabel("answer keys with items of the label (sorted per label)")
    ax.set_ylabel("best accuracy of the worst grader")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower left", fontsize=8)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
