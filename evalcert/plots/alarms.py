"""Figures of the no-knowledge alarm (paper 003, Figs. 2, 5-8), drawn with the Agg canvas.

No pyplot and no global backend switch: each function builds a
:class:`matplotlib.figure.Figure` on a ``FigureCanvasAgg`` and optionally saves it.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from evalcert.errors import InputError
from evalcert.logic.result import AlarmResult, MinMaxCurve
from evalcert.logic.evaluations import correctness_squares
from evalcert.logic.pspace import PSpace, shared_prevalences
from evalcert.logic.summaries import LabelCounts
from evalcert.io.outputs import writing

__all__ = ["plot_minmax_curve", "plot_label_curves", "plot_correctness_squares",
           "plot_pspace"]


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
                      path: str | Path | None = None, threshold: float | None = None, *,
                      max_points: int = 2000) -> Figure:
    """Fig. 8: per label ``l``, the best accuracy of the worst grader,
    ``min_i min(q_l, R_{l,i}) / q_l``, over the answer keys with ``q_l > 0`` (keys without
    items of the label make no demand on it and are left out), each label sorted on its own,
    so positions are not comparable across labels (drawn as at most ``max_points`` points
    per label, both extremes kept). The legend gives each label's exact range; a label whose
    range reaches 1 cannot carry an alarm on its own (Sec. III). ``threshold`` is drawn
    dashed.

    Examples
    --------
    >>> from evalcert.logic import mtbench_demo
    >>> fig = plot_label_curves(mtbench_demo())
    >>> len(fig.axes[0].get_lines())  # one curve per label, and the threshold x = 1/2
    4
    """
    curve = _curve_of(result)
    fig = _new_figure()
    ax = fig.add_subplot()
    for line in curve.label_curves(max_points):     # the numbers the JSON holds
        if not line["n_keys"]:
            continue
        ys = [float(Fraction(v)) for v in line["values"]]
        ax.plot(line["positions"], ys, ".", ms=3, label=f"label {line['label']}: "
                f"{line['n_keys']:,} keys, {line['min']} to {line['max']}")
    if threshold is None and isinstance(result, AlarmResult):
        threshold = float(result.threshold)
    if threshold is not None:
        ax.axhline(threshold, color="C7", lw=1, ls="--", label=f"threshold x = {threshold:g}")
    ax.set_title("per-label min-max (M=1; keys sorted per label, not comparable across "
                 "labels)", fontsize=9)
    ax.set_xlabel("answer keys with items of the label (sorted per label)")
    ax.set_ylabel("best accuracy of the worst grader on the label")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right", fontsize=8)
    if path is not None:
        with writing(path) as tmp:
            fig.savefig(tmp, dpi=120)
    return fig


def plot_pspace(spaces: PSpace | Sequence[PSpace], path: str | Path | None = None,
                threshold: Any = None, *, graders: Sequence[str] | None = None,
                background: PSpace | None = None, max_points: int = 20000,
                seed: int = 0) -> Figure:
    """Fig. 2: possible evaluations of binary classifiers in P-space, ``P_a = Q_a / Q``
    against the label accuracies ``P_{a,a}`` and ``P_{b,b}``, one 3-D panel per grader.

    With ``threshold`` each grader's points are coloured exactly (integers): green where it
    clears ``x`` on both labels at a prevalence where every grader can (the M=1 alarm is
    silent iff there are green points), orange where it clears ``x`` but some other grader
    cannot at that prevalence, grey where it does not clear ``x``. ``background`` (e.g. the
    a-priori set of :func:`~evalcert.logic.pspace.pspace_evaluations`, Fig. 2 itself) is
    drawn faint behind. An accuracy undefined for lack of items (``Q_a = 0`` or ``Q``)
    is drawn as a segment over its whole range ``[0, 1]``. More than ``max_points`` points
    per set are thinned by a seeded random sample (the title says so).

    Examples
    --------
    >>> from evalcert.logic.pspace import pspace_evaluations
    >>> fig = plot_pspace(pspace_evaluations(10, stage="a priori"))   # Fig. 2
    >>> len(fig.axes), fig.axes[0].get_zlabel()
    (1, 'P_b,b')
    """
    from mpl_toolkits.mplot3d.art3d import Line3DCollection

    spaces = [spaces] if isinstance(spaces, PSpace) else list(spaces)
    if not spaces:
        raise InputError("plot_pspace needs at least one grader's evaluations")
    graders = list(graders) if graders is not None else [f"grader {k + 1}"
                                                          for k in range(len(spaces))]
    shared = shared_prevalences(spaces, threshold) if threshold is not None else None
    rng = np.random.default_rng(seed)
    cols = min(len(spaces), 3)
    rows_n = -(-len(spaces) // cols)
    fig = _new_figure(4.2 * cols, 4.2 * rows_n + 0.4)
    thinned = False

    def draw(ax, space, mask, color, size, alpha, label):
        nonlocal thinned
        idx = np.flatnonzero(mask)
        total = len(idx)
        if total > max_points:
            idx, thinned = np.sort(rng.choice(idx, max_points, replace=False)), True
        p_a, p_aa, p_bb = (c[idx] for c in space.coordinates())
        ok = ~(np.isnan(p_aa) | np.isnan(p_bb))
        ax.scatter(p_a[ok], p_aa[ok], p_bb[ok], s=size if len(idx) <= 2000 else 1, c=color,
                   alpha=alpha, depthshade=False,
                   label=f"{label} ({total:,})" if label else None)
        segs = [[(x, 0.0, z), (x, 1.0, z)] if np.isnan(y) else [(x, y, 0.0), (x, y, 1.0)]
                for x, y, z in zip(p_a[~ok], p_aa[~ok], p_bb[~ok])
                if not (np.isnan(y) and np.isnan(z))]
        if segs:
            ax.add_collection3d(Line3DCollection(segs, colors=color, linewidths=0.6,
                                                 alpha=alpha))

    for k, (space, name) in enumerate(zip(spaces, graders)):
        ax = fig.add_subplot(rows_n, cols, k + 1, projection="3d")
        if background is not None:
            draw(ax, background, np.ones(len(background), dtype=bool), "C7", 1, 0.15, "")
        if shared is None:
            draw(ax, space, np.ones(len(space), dtype=bool), "C0", 6, 0.9,
                 f"{space.stage}")
        else:
            clears = space.clears(threshold)
            here = np.isin(space.q_a, shared)
            for mask, color, what in ((~clears, "C7", "below x"),
                                      (clears & ~here, "C1", "clears x alone"),
                                      (clears & here, "C2", "clears x with every grader")):
                if mask.any():
                    draw(ax, space, mask, color, 6, 0.9, what)
        a, b = space.labels
        ax.set_xlabel(f"P_{a} = Q_{a}/Q")
        ax.set_ylabel(f"P_{a},{a}")
        ax.set_zlabel(f"P_{b},{b}")
        ax.set(xlim=(0, 1), ylim=(0, 1), zlim=(0, 1))
        ax.set_box_aspect(None, zoom=0.85)          # room for the z label
        dec = f", decided {space.decided}" if space.decided is not None else ""
        ax.set_title(f"{name}: {space.stage}{dec}", fontsize=8)
        ax.legend(loc="upper left", fontsize=6)
    q = spaces[0].n_items
    head = f"possible evaluations in P-space (Fig. 2), Q = {q}"
    if shared is not None:
        a = spaces[0].labels[0]
        head += (f"; x = {threshold}, M=1: " + (
            "no prevalence lets every grader clear x (the M=1 alarm fires)"
            if not len(shared) else f"every grader can clear x at Q_{a} in "
            f"[{shared.min()}, {shared.max()}] ({len(shared)} values)"))
    if thinned:
        head += f"; sets over {max_points:,} points thinned at random"
    fig.suptitle(head, fontsize=9)
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
