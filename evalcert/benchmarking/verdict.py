"""The benchmark's "which backend should I use" verdict and its scaling table,
derived from the run records (never written by hand).

Rules, per kind of problem and accuracy profile:

* **most reliable**: the highest success rate (certified within the time
  limit), ties broken by the shifted geometric mean (SGM) of runtime;
* **fastest reliable**: the lowest SGM among backends whose success rate is
  within 5 points of the best;
* **refits**: the fastest backend that certified every bootstrap batch;
* **avoid**: a success rate below 50 %;
* **scaling**: on the ``sparse`` family, per box, the least-squares slope ``a``
  of ``log(runtime)`` against ``log(observed cells)`` over a backend's certified
  runs (``time ~ cells^a``; at least two sizes needed), the largest design each
  backend certified, and the fastest on the largest design.

Example
-------
>>> growth_exponent([1000, 10000], [0.01, 0.1])
1.0
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING, Sequence

import numpy as np

from evalcert.benchmarking.metrics import BackendSummary, RunRecord

if TYPE_CHECKING:
    from evalcert.benchmarking.results import BenchmarkResult

__all__ = ["growth_exponent", "cells_of", "scaling_table", "verdict"]


def growth_exponent(cells: Sequence[float], seconds: Sequence[float]) -> float:
    """Slope of ``log(seconds)`` against ``log(cells)`` (NaN with fewer than two sizes).

    Examples
    --------
    >>> growth_exponent([1000, 10000, 100000], [0.01, 0.1, 1.0])  # linear in the cells
    1.0
    >>> growth_exponent([1000, 10000], [0.001, 0.1])  # quadratic
    2.0
    >>> growth_exponent([1000], [0.01])
    nan
    """
    x, y = np.log(np.asarray(cells, float)), np.log(np.asarray(seconds, float))
    if len(np.unique(x)) < 2:
        return math.nan
    return round(float(np.polyfit(x, y, 1)[0]), 2)


def cells_of(record: RunRecord) -> int:
    """Observed cells of a clipped-linear problem, read from its size string.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> cells_of(SimpleNamespace(size="30x300, 475 cells"))
    475
    >>> cells_of(SimpleNamespace(size="1x1, n=1, m=1"))  # a standard-form QP: no cells
    0
    """
    for part in record.size.split(","):
        if part.strip().endswith("cells"):
            return int(part.split()[0])
    return 0


def scaling_table(records: Sequence[RunRecord], box: str = "all", profile: str = "default"
                  ) -> tuple[list[int], dict[str, list[float]], dict[str, float]]:
    """Sparse-family runtimes with ``box`` at ``profile``: the cell counts (sorted),
    per backend the runtime per size (NaN where it failed; the mean over seeds),
    and per backend the growth exponent.

    Examples
    --------
    Two sparse runs of one backend (stand-ins for :class:`RunRecord`), ten times
    the cells in ten times the time:

    >>> from types import SimpleNamespace
    >>> records = [SimpleNamespace(family="sparse", profile="default", backend="native",
    ...                            problem=f"sparse-all-{n}c", size=f"10x100, {n} cells",
    ...                            success=True, runtime=t) for n, t in ((100, 0.01), (1000, 0.1))]
    >>> scaling_table(records, "all")
    ([100, 1000], {'native': [0.01, 0.1]}, {'native': 1.0})
    """
    runs = [r for r in records if r.family == "sparse" and r.profile == profile
            and r.problem.startswith(f"sparse-{box}-")]
    sizes = sorted({cells_of(r) for r in runs})
    times: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        times[r.backend][cells_of(r)].append(r.runtime if r.success else math.nan)
    table = {b: [float(np.mean(t[c])) if c in t else math.nan for c in sizes]
             for b, t in times.items()}
    slopes = {}
    for b, row in table.items():
        ok = [(c, t) for c, t in zip(sizes, row) if math.isfinite(t) and t > 0]
        slopes[b] = growth_exponent(*zip(*ok)) if len(ok) >= 2 else math.nan
    return sizes, table, slopes


def _fmt(seconds: float) -> str:
    return f"{1e3 * seconds:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _profile_lines(group: list[BackendSummary]) -> list[str]:
    best = max(s.success_rate for s in group)
    reliable = sorted(group, key=lambda s: (-s.success_rate, s.sgm))[0]
    fast = sorted((s for s in group if s.success_rate >= best - 0.05), key=lambda s: s.sgm)[0]
    kind, prof = group[0].kind, group[0].profile
    line = (f"- **{kind.upper()}, {prof}**: most reliable `{reliable.backend}` "
            f"({reliable.successes}/{reliable.runs} certified, SGM {_fmt(reliable.sgm)})")
    if fast.backend != reliable.backend:
        line += (f"; fastest reliable `{fast.backend}` ({fast.successes}/{fast.runs}, "
                 f"SGM {_fmt(fast.sgm)}, {reliable.sgm / fast.sgm:.1f}x faster)")
    avoid = [s.backend for s in group if s.success_rate < 0.5]
    if avoid:
        line += f"; avoid {', '.join(f'`{b}`' for b in avoid)} (under 50 % certified)"
    return [line]


def _scaling_lines(result: "BenchmarkResult", box: str) -> list[str]:
    sizes, table, slopes = scaling_table(result.records, box)
    if len(sizes) < 2:
        return []
    lines = []
    reach = {b: max((c for c, t in zip(sizes, row) if math.isfinite(t)), default=0)
             for b, row in table.items()}
    ranked = sorted((s, b) for b, s in slopes.items() if math.isfinite(s))
    if ranked:
        lines.append(f"- sparse designs, box `{box}` ({sizes[0]}..{sizes[-1]} cells, default "
                     "profile): time ~ cells^a over the certified sizes: "
                     + ", ".join(f"`{b}` a={s:.2f}" + ("" if reach[b] == sizes[-1] else
                                                       f" (certified up to {reach[b]} cells)")
                                 for s, b in ranked))
    fastest_big = [(row[-1], b) for b, row in table.items() if math.isfinite(row[-1])]
    if fastest_big:
        t, b = min(fastest_big)
        lines.append(f"- largest sparse design, box `{box}` ({sizes[-1]} cells): fastest "
                     f"certified `{b}` ({_fmt(t)})")
    else:
        furthest = sorted(reach.items(), key=lambda kv: -kv[1])[:3]
        lines.append(f"- largest sparse design, box `{box}` ({sizes[-1]} cells): no backend "
                     f"certified it within the time limit ({result.settings['time_limit']:g} s);"
                     " the furthest: " + ", ".join(f"`{b}` {c} cells" for b, c in furthest))
    return lines


def verdict(result: "BenchmarkResult") -> list[str]:
    """Markdown bullet lines: the recommendation the numbers support.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from evalcert.benchmarking.backends import select_backends
    >>> from evalcert.benchmarking.families import StandardQP
    >>> from evalcert.benchmarking.runner import run_benchmark
    >>> from evalcert.solvers.certificates import QP
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))
    >>> result = run_benchmark([StandardQP("demo", "demo-qp", qp, (1, 1))],
    ...                        select_backends(["native", "osqp-direct"]), ["default"],
    ...                        n_jobs=1, memory=False, progress=False)
    >>> lines = verdict(result)
    >>> lines[0].startswith("- **QP, default**: most reliable")
    True
    >>> lines[-1]
    '- certified on every QP at every profile: `native`, `osqp-direct`'
    """
    groups: dict[tuple[str, str], list[BackendSummary]] = defaultdict(list)
    for s in result.summaries:
        groups[(s.kind, s.profile)].append(s)
    lines: list[str] = []
    for key in sorted(groups):
        lines += _profile_lines(groups[key])
    qp = [s for s in result.summaries if s.kind == "qp"]
    everywhere = sorted({s.backend for s in qp}
                        - {s.backend for s in qp if s.successes < s.runs})
    if qp:
        lines.append("- certified on every QP at every profile: "
                     + (", ".join(f"`{b}`" for b in everywhere) if everywhere else "none"))
    boot = defaultdict(list)
    for r in result.records:
        if r.family == "bootstrap":
            boot[r.backend].append(r)
    complete = {b: sum(r.runtime for r in rs) for b, rs in boot.items()
                if all(r.success for r in rs)}
    if complete:
        b = min(complete, key=complete.get)
        lines.append(f"- bootstrap refits: `{b}` certified every batch fastest "
                     f"({_fmt(complete[b])} for all batches and profiles)")
    for box in ("all", "observed"):
        lines += _scaling_lines(result, box)
    return lines
