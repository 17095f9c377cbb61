"""Figures of the no-knowledge alarm (paper 003, Figs. 7 and 8), drawn with the Agg canvas.

No pyplot and no global backend switch: each function builds a
:class:`matplotlib.figure.Figure` on a ``FigureCanvasAgg`` and optionally saves it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from evalcert.errors import InputError
from evalcert.logic.result import AlarmResult, MinMaxCurve
from evalcert.logic.evaluations import correctness_squares
from evalcert.logic.summaries import LabelCounts
from evalcert.io.outputs import writing

__all__ = ["plot_minmax_curve", "plot_label_curves", "plot_correctness_squares"]


def _new_figure(width: float = 6.0, height: float = 4.0) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _curve_of(result: AlarmResult | MinMaxCurve) -> MinMaxCurve:
    curve = result.curve if isinstance(result, AlarmResult) else result
    if curve is None:
        raise ValueError("the alarm result carries no curve; call alarm(..., curves=True)")
    return curve


def _downsample(values: np.ndarray, max_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions and values of a sorted array thinned to about ``max_points``, keeping the
    first and last point (the minimum and the maximum ``T``)."""
    if len(values) <= max_points:
        return np.arange(len(values)), values
    idx = np.unique(np.linspace(0, len(values) - 1, max_points).round().astype(np.int64))
    return idx, values[idx]


def plot_minmax_curve(result: AlarmResult | MinMaxCurve, path: str | Path | None = None,
                      threshold: float | None = None, *, alarm_result: AlarmResult | None = None,
                      max_points: int = 2000) -> Figure:
    """Fig. 7: ``v(q)`` of every answer key under M=1, keys sorted by value (drawn as at most
    ``max_points`` points, both extremes kept); its maximum is ``T_1``.

    ``alarm_result``: the alarm actually computed (default: ``result`` if it is one); when
    it used M=2 or the full joint, its ``T`` is drawn and named in the title too, so the
    figure shows what the chosen M computed. ``threshold`` (default: the alarm's ``x``) is
    drawn dashed.

    Examples
    --------
    >>> from evalcert.logic import mtbench_demo
    >>> fig = plot_minmax_curve(mtbench_demo())  # give a path to also save it as PNG
    >>> len(fig.axes)
    1
    """
    curve = _curve_of(result)
    shown = alarm_result if alarm_result is not None else (
        result if isinstance(result, AlarmResult) else None)
    values = np.sort(curve.values())
    xs, ys = _downsample(values, max_points)
    t1 = curve.value(int(np.argmax(curve.values())))
    fig = _new_figure()
    ax = fig.add_subplot()
    ax.plot(xs, ys, ".", ms=3, label=f"M=1 best min label accuracy v(q), {len(values):,} keys"
            + (f" ({len(xs):,} drawn)" if len(xs) < len(values) else ""))
    ax.axhline(float(t1), color="C3", lw=1, label=f"T (M=1) = {t1}")
    if shown is not None and shown.m != 1:
        ax.axhline(float(shown.T), color="C1", lw=1.5,
                   label=f"T (M={shown.m}) = {shown.T}")
    if threshold is None and shown is not None:
        threshold = float(shown.threshold)
    if threshold is not None:
        ax.axhline(threshold, color="C2", lw=1, ls="--", label=f"threshold x = {threshold:g}")
    m = shown.m if shown is not None else 1
    ax.set_title(f"no-knowledge alarm, M={m}: T = {shown.T if shown is not None else t1}",
                 fontsize=9)
    ax.set_xlabel("answer keys (sorted by v)")
    ax.set_ylabel("min over graders and labels of best accuracy")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="upper left", fontsize=8)
    if path is not None:
        with writing(path) as tmp:
            fig.savefig(tmp, dpi=120)
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
        with writing(path) as tmp:
            fig.savefig(tmp, dpi=120)
    return fig


def plot_correctness_squares(counts: LabelCounts, key: Sequence[int], graders: Sequence[str],
                             path: str | Path | None = None, threshold: float = 0.5) -> Figure:
    """Figs. 5-6: per true label, the multiplicity of M=1 product-space evaluations of two
    graders by their numbers of correct answers on that label (log colour scale; white:
    none), with the cells where both beat ``threshold`` outlined in green.

    Examples
    --------
    >>> from evalcert.datasets.mtbench import paper_summaries
    >>> fig = plot_correctness_squares(paper_summaries(), (8, 9, 8), ("authors", "gpt4"))
    >>> len(fig.axes) >= 3
    True
    """
    if len(graders) != 2 or any(g not in counts.graders for g in graders):
        raise InputError(f"correctness squares need two of the graders {list(counts.graders)}; "
                         f"got {list(graders)}")
    i, j = (counts.graders.index(g) for g in graders)
    squares = correctness_squares(key, counts.counts[i], counts.counts[j])
    fig = _new_figure(3.2 * len(squares), 3.4)
    axes = fig.subplots(1, len(squares), squeeze=False)[0]
    for ax, label, q, sq in zip(axes, counts.labels, key, squares):
        grid = np.array(sq, dtype=float)
        shown = np.where(grid > 0, grid, np.nan)
        if np.isfinite(shown).any():
            img = ax.imshow(np.log10(shown).T, origin="lower", cmap="viridis",
                            extent=(-0.5, q + 0.5, -0.5, q + 0.5))
            fig.colorbar(img, ax=ax, shrink=0.7, label="log10 count")
        for a in range(q + 1):
            for b in range(q + 1):
                if grid[a, b] > 0 and a > threshold * q and b > threshold * q:
                    ax.add_patch(Rectangle((a - 0.5, b - 0.5), 1, 1, fill=False,
                                           edgecolor="lime", lw=1))
        ax.set_title(f"true {label}: Q = {q}", fontsize=9)
        ax.set_xlabel(f"{graders[0]} correct")
        ax.set_ylabel(f"{graders[1]} correct")
    fig.suptitle(f"M=1 evaluations at key {tuple(key)}; green: both > {threshold:g}",
                 fontsize=9)
    if path is not None:
        with writing(path) as tmp:
            fig.savefig(tmp, dpi=120)
    return fig
