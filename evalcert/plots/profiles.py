"""Dolan-More performance profiles of solver backends, drawn with the Agg canvas.

No pyplot and no global backend switch: the figure is built on a
``FigureCanvasAgg`` and optionally saved.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from evalcert.benchmarking.metrics import PerformanceProfile
from evalcert.io.outputs import writing

__all__ = ["plot_performance_profile", "plot_scaling"]


def plot_performance_profile(profile: PerformanceProfile,
                             path: str | Path | None = None) -> Figure:
    """Step curves ``rho_b(tau)`` of every backend against ``tau`` (log2 axis).

    A curve's height at ``tau = 1`` is the share of problems on which the
    backend was fastest; its height at the right edge is its success rate.

    Examples
    --------
    >>> from evalcert.benchmarking import clipped_linear_family, performance_profiles, run_benchmark
    >>> from evalcert.benchmarking import select_backends
    >>> result = run_benchmark(clipped_linear_family([(4, 6)], seeds=[0])[:2],
    ...                        select_backends(["native", "osqp-direct"]), ["default"], n_jobs=1,
    ...                        memory=False, progress=False)
    >>> fig = plot_performance_profile(performance_profiles(result.records)[0])
    >>> fig.axes[0].get_xscale()
    'log'
    """
    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    finite = profile.ratios[np.isfinite(profile.ratios)]
    right = max(2.0, 1.25 * float(finite.max())) if finite.size else 2.0
    for k, backend in enumerate(profile.backends):
        taus, rho = profile.curve(backend)
        xs = np.r_[1.0, taus, right]
        ys = np.r_[0.0, rho, rho[-1] if len(rho) else 0.0]
        ax.step(xs, ys, where="post", lw=1.6, color=f"C{k}", label=backend)
    ax.set_xscale("log", base=2)
    ax.set_xlim(1.0, right)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("tau: runtime within tau x the fastest certified run")
    ax.set_ylabel("share of problems solved and certified")
    ax.set_title(f"{profile.kind.upper()} problems, profile {profile.profile} "
                 f"({len(profile.problems)} problems)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    if path is not None:
        with writing(path) as tmp:
            fig.savefig(tmp, dpi=110)
    return fig


def plot_scaling(panels: dict[str, tuple[list[int], dict[str, list[float]]]],
                 path: str | Path | None = None, profile: str = "default") -> Figure:
    """Runtime against observed cells (log-log), one panel per box mode
    (``{box: (sizes, {backend: runtimes})}``), one line per backend; failed runs
    are left out (a gap in the line).

    Examples
    --------
    >>> panels = {"all": ([100, 1000, 10000], {"native": [0.01, 0.1, 1.0],
    ...                                        "osqp-direct": [0.02, float("nan"), 0.5]})}
    >>> fig = plot_scaling(panels)  # pass path= to save a PNG
    >>> len(fig.axes), fig.axes[0].get_xscale(), len(fig.axes[0].lines)
    (1, 'log', 2)
    """
    fig = Figure(figsize=(5.2 * len(panels), 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (box, (sizes, table)) in zip(axes, panels.items()):
        for k, (backend, times) in enumerate(sorted(table.items())):
            ax.plot(sizes, times, marker="o", lw=1.4, color=f"C{k % 10}",
                    ls="-" if k < 10 else "--", label=backend)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("observed cells")
        ax.set_ylabel("runtime of a certified fit (s)")
        ax.set_title(f"sparse family, box {box!r}, profile {profile}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(loc="upper left", fontsize=7)
    if path is not None:
        with writing(path) as tmp:
            fig.savefig(tmp, dpi=110)
    return fig
