"""The 3PL on ChemBench (22 models x 2,720 items; issue 12, item 4): convergence and speed.

For a fixed floor (1/4) and estimated floors it fits ``ThreePL`` twice in the
same process: as shipped (log-normal slope prior, weak ``N(0, 100)``
intercept prior) and, as the reference, without the intercept prior
(``intercept_prior=0``), where items the data push to their floor have no
finite intercept. It prints L-BFGS iterations, CPU and wall seconds, whether
the fit converged, the largest difficulty, the floor items, Kendall's tau of
the abilities with raw accuracy, the CPU ratio reference / shipped, and the
peak RSS, and the objective's time against an ``exp + log`` floor over the same
cells x nodes (:func:`format_kernel`). (girth's ``threepl_mml``, the only PyPI peer, fails on current NumPy:
"setting an array element with a sequence".)

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_threepl_chembench.py [path]``,
path defaulting to ``../shared/data/irt/irt-on-bench/binary_matrix.csv``.
"""

from __future__ import annotations

import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from irt_kernels import KERNEL_HEADERS, kernel_row, objective_kernel  # noqa: E402


def _fit(Y, **options):
    from scipy.stats import kendalltau

    from evalcert.errors import ConvergenceError
    from evalcert.irt import ThreePL

    cpu, wall = time.process_time(), time.perf_counter()
    try:
        est = ThreePL(**options).fit(Y)
    except ConvergenceError as exc:
        return {"ok": False, "cpu": time.process_time() - cpu,
                "wall": time.perf_counter() - wall, "why": str(exc)[:120]}
    tau = kendalltau(est.abilities_, np.nanmean(Y, axis=1))[0]
    return {"ok": True, "cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall,
            "iter": est.n_iter_, "bmax": float(np.nanmax(np.abs(est.difficulties_))),
            "floor": len(est.floor_items_), "tau": float(tau)}


def _line(name, r):
    if not r["ok"]:
        return f"{name:<42} FAILED cpu {r['cpu']:6.1f} s wall {r['wall']:6.1f} s: {r['why']}"
    return (f"{name:<42} {r['iter']:5d} it  cpu {r['cpu']:6.1f} s  wall {r['wall']:6.1f} s  "
            f"max |b| {r['bmax']:8.3g}  floor items {r['floor']:4d}  tau {r['tau']:.3f}")


def format_kernel(Y: np.ndarray) -> str:
    """The fit's hot kernel, one log-likelihood and its exact gradient (E-step included) of
    the shipped 3PL with a fixed floor, against one ``exp`` and one ``log`` pass over the
    same observed cells x quadrature nodes, measured in this run."""
    from evalcert.irt import ThreePL
    from evalcert.irt.estimation.mml_direct import MarginalData
    from evalcert.results import format_table

    est = ThreePL(guessing=0.25).fit(Y)
    md = MarginalData(np.where(np.isfinite(Y), Y, -1).astype(int), 2, est.n_quad)
    md.logw = est._density.log_weights(md.z)
    x = np.random.default_rng(0).normal(0.5, 0.1, est.n_parameters_)
    row = kernel_row(f"ChemBench {Y.shape[0]} x {Y.shape[1]}", objective_kernel(
        lambda: est._objective(x, md, Y.shape[1]), np.isfinite(Y), est.n_quad,
        f"3pl log-lik + gradient, {est.n_quad} nodes"))
    return format_table([row], KERNEL_HEADERS)


def main(path: str) -> None:
    import pandas as pd

    if not Path(path).exists():
        sys.exit(f"{path} not found: pass the ChemBench binary_matrix.csv (irt-on-bench)")
    frame = pd.read_csv(path, index_col=0).T                      # models x items
    Y = frame.to_numpy(float)
    Y = Y[:, (Y.sum(0) > 0) & (Y.sum(0) < Y.shape[0])]             # the 2,720 non-extreme
    print(f"ChemBench: {Y.shape[0]} models x {Y.shape[1]} items")
    warnings.simplefilter("ignore")
    for label, options in (("fixed floor 1/4", {"guessing": 0.25}),
                           ("estimated floors", {})):
        new = _fit(Y, **options)
        ref = _fit(Y, intercept_prior=0.0, **options)
        print(_line(f"{label}", new))
        print(_line(f"{label}, intercept_prior=0 (ref)", ref))
        print(f"{'':<42} CPU ratio reference / shipped: {ref['cpu'] / new['cpu']:.1f}x")
    print(format_kernel(Y))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else
         str(Path(__file__).resolve().parents[2] / "shared" / "data" / "irt" / "irt-on-bench"
             / "binary_matrix.csv"))
