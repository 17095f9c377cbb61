"""IRT figures: item characteristic and information curves, item fit, anchor estimates.

matplotlib is imported inside each function (Agg backend), so importing this
module costs nothing.

Example
-------
>>> import numpy as np
>>> from evalcert.irt.information import ItemParameters
>>> p = ItemParameters(np.ones(3), np.array([-1.0, 0.0, 1.0]), np.zeros(3), ("a", "b", "c"),
...                    "rasch")
>>> len(plot_item_curves(p).axes)   # three panels and the SE axis of the third
4
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from evalcert.io.outputs import writing

__all__ = ["plot_item_curves", "plot_item_fit", "plot_anchor_estimates"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | Path | None) -> Any:
    if path is not None:
        with writing(path) as tmp:
            fig.savefig(tmp, bbox_inches="tight", dpi=120)
        _pyplot().close(fig)
    return fig


def plot_item_curves(params: Any, abilities: np.ndarray | None = None, *, max_items: int = 12,
                     path: str | Path | None = None) -> Any:
    """Three panels: ICCs ``P_j(theta)``, item information ``I_j(theta)``, and the test
    information with the ML standard error ``1 / sqrt(I(theta))``.

    Parameters
    ----------
    params : ItemParameters (:func:`~evalcert.irt.information.item_parameters`)
    abilities : array, optional
        Fitted abilities, drawn as a rug and used for the plotted range.
    max_items : int
        At most this many items are drawn, spread evenly over the difficulties.
    path : str or Path, optional
        Save there (format from the suffix).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from evalcert.irt.information import ItemParameters
    >>> p = ItemParameters(np.ones(3), np.array([-1.0, 0.0, 1.0]), np.zeros(3), ("a", "b", "c"),
    ...                    "rasch")
    >>> fig = plot_item_curves(p, abilities=np.array([-0.5, 0.5]))
    >>> [ax.get_title() for ax in fig.axes][:3]
    ['item characteristic curves (3 of 3 items, rasch)', 'item information', 'test information']
    >>> plt.close(fig)
    """
    from evalcert.irt.information import icc, item_information, test_information

    plt = _pyplot()
    usable = params.take(params.usable)
    lo, hi = -4.0, 4.0
    if abilities is not None and np.isfinite(abilities).any():
        fin = np.asarray(abilities, float)[np.isfinite(abilities)]
        lo, hi = min(lo, fin.min() - 1), max(hi, fin.max() + 1)
    theta = np.linspace(lo, hi, 400)
    order = np.argsort(usable.b, kind="stable")
    shown = usable.take(order[np.unique(np.linspace(0, order.size - 1, min(max_items,
                                                                             order.size)).round()
                                         .astype(int))])
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    P, info = icc(theta, shown), item_information(theta, shown)
    for k, name in enumerate(shown.item_names):
        axes[0].plot(theta, P[:, k], lw=1, label=str(name)[:18])
        axes[1].plot(theta, info[:, k], lw=1)
    axes[0].set(xlabel="ability theta", ylabel="P(correct)",
                title=f"item characteristic curves ({len(shown.item_names)} of "
                      f"{len(usable.item_names)} items, {params.model})")
    if len(shown.item_names) <= 12:
        axes[0].legend(fontsize=6, loc="lower right")
    axes[1].set(xlabel="ability theta", ylabel="I_j(theta)", title="item information")
    total = test_information(theta, usable)
    axes[2].plot(theta, total, color="k", label="test information")
    axes[2].set(xlabel="ability theta", ylabel="I(theta)", title="test information")
    twin = axes[2].twinx()
    twin.plot(theta, 1 / np.sqrt(total), color="tab:red", ls="--", label="SE")
    twin.set_ylabel("SE = 1/sqrt(I)", color="tab:red")
    if abilities is not None:
        fin = np.asarray(abilities, float)[np.isfinite(abilities)]
        for ax in axes:
            ax.plot(fin, np.zeros_like(fin), "|", color="grey", alpha=0.5)
    fig.tight_layout()
    return _save(fig, path)


def plot_item_fit(result: Any, *, path: str | Path | None = None) -> Any:
    """Infit vs outfit t of every item, with the ``|t| = threshold`` band.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from evalcert.irt import Rasch, item_fit
    >>> Y = (np.random.default_rng(0).random((40, 10)) < 0.5).astype(float)
    >>> fig = plot_item_fit(item_fit(Rasch(method="cml").fit(Y), Y))  # path= saves it
    >>> fig.axes[0].get_xlabel(), fig.axes[0].get_ylabel()
    ('outfit t', 'infit t')
    >>> plt.close(fig)
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 4.5))
    t_out, t_in = result.items["outfit_t"], result.items["infit_t"]
    ax.scatter(t_out, t_in, s=10, alpha=0.7)
    for name in result.flagged("items")[:15]:
        k = result.item_names.index(name)
        ax.annotate(str(name)[:16], (t_out[k], t_in[k]), fontsize=6)
    th = result.threshold
    for f in (ax.axvline, ax.axhline):
        f(th, color="grey", ls=":")
        f(-th, color="grey", ls=":")
    ax.set(xlabel="outfit t", ylabel="infit t",
           title=f"item fit ({result.model} {result.method}): "
                 f"{len(result.flagged('items'))} flagged")
    fig.tight_layout()
    return _save(fig, path)


def plot_anchor_estimates(result: Any, *, path: str | Path | None = None) -> Any:
    """Estimated vs true accuracy of the held-out models (IRT and anchor-mean estimates).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from evalcert.irt import Rasch, evaluate_anchors
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=60), rng.normal(size=40)
    >>> Y = (rng.random((60, 40)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    >>> fig = plot_anchor_estimates(evaluate_anchors(Rasch(method="mml"), Y, n_anchors=10,
    ...                                              seed=0))
    >>> fig.axes[0].get_title()
    '10 anchors (information)'
    >>> plt.close(fig)
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 4.5))
    for key, marker in (("irt", "o"), ("anchor_mean", "x")):
        ax.scatter(result.true_accuracy, result.estimates[key], marker=marker, s=16,
                   label=f"{key} (MAE {result.mae[key]:.3f})")
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8)
    ax.set(xlabel="true accuracy (all items)", ylabel="estimated from anchors",
           title=f"{result.n_anchors} anchors ({result.selection})")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, path)
