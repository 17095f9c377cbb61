"""Rasch CML and JML with missing cells: fast paths against their references (a script).

In one process, for each shape: evalcert's CML as shipped, CML with the
reference paths switched on (node-by-node Fourier sums instead of Chebyshev,
diagonal Newton steps instead of Schur steps, one thread), JML, and mirt's
1PL (PyPI, multi-threaded Rust) when ``--peers`` holds it. CPU seconds (all
threads) and wall seconds of one fit after an untimed warm-up, the ratio of
each to evalcert CML's, the largest difference of the difficulties from
evalcert CML's and the peak RSS.

Then each shape's hot kernels, timed in this process against a floor measured in
the same run (``irt_kernels``): CML's ``esf.conditional_cells`` (every model's
``log gamma`` and conditional probabilities, by Fourier inversion on the circle
nodes each model keeps; CPU seconds of all threads, at difficulties from the item
proportions) against one ``exp`` and one ``log`` pass over the observed cells x
kept nodes (below 1 where the Chebyshev sums replace the transcendental functions
at every cell and node), and the Rasch MML E-step (the model of mirt's 1PL row;
wall, one thread, at the starting values) against one ``exp`` and one ``log`` pass
over the observed cells x quadrature nodes it evaluates. JML's Newton sweeps touch
each observed cell once per step and have no row::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_rasch_missing.py \\
        [--shapes 300x20000@0.5 1000x200@0.3 1000x200 100x5000] [--peers /tmp/peers]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_irt import load_line  # noqa: E402
from irt_kernels import KERNEL_HEADERS, binary_estep, cml_terms, kernel_row  # noqa: E402

from evalcert.results import format_table  # noqa: E402
from evalcert.irt import Rasch  # noqa: E402
from evalcert.irt.estimation import esf  # noqa: E402
from evalcert.irt import rasch as rasch_module  # noqa: E402

HEADERS = ["shape", "runner", "cpu s", "wall s", "cpu vs cml", "wall vs cml",
           "max |b - b_cml|", "peak RSS MiB"]


def simulate(n_models: int, n_items: int, missing: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=n_models), rng.normal(size=n_items)
    Y = (rng.random((n_models, n_items)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(float)
    Y[rng.random(Y.shape) < missing] = np.nan
    return Y


def reference_cml(Y):
    """CML with node-by-node sums, diagonal Newton steps and one thread."""
    saved = esf._CHEB_MAX, rasch_module._SCHUR_FLOPS, esf._THREADED
    esf._CHEB_MAX, rasch_module._SCHUR_FLOPS, esf._THREADED = 0, 0.0, np.inf
    try:
        return Rasch(method="cml").fit(Y).difficulties_
    finally:
        esf._CHEB_MAX, rasch_module._SCHUR_FLOPS, esf._THREADED = saved


def mirt_1pl(Y):
    import mirt
    res = mirt.fit_mirt(Y, model="1PL", compute_standard_errors=False)
    return res.coef()["difficulty"].to_numpy(float)


def timed(run, Y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(Y[:40, :30])                           # imports and set-up are not timed
        wall, cpu = time.perf_counter(), time.process_time()
        out = run(Y)
        return time.process_time() - cpu, time.perf_counter() - wall, np.asarray(out, float)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+",
                        default=["300x20000@0.5", "1000x200@0.3", "1000x200", "100x5000"])
    parser.add_argument("--peers", default="/tmp/peers" if os.path.isdir("/tmp/peers") else "")
    args = parser.parse_args()
    if args.peers:
        sys.path.insert(0, args.peers)
    rows, kernels, load = [], [], os.getloadavg()
    for shape in args.shapes:
        size, _, missing = shape.partition("@")
        n, m = (int(v) for v in size.split("x"))
        Y = simulate(n, m, float(missing or 0.0))
        kernels += [kernel_row(shape, cml_terms(Y)), kernel_row(shape, binary_estep(Y, True))]
        runners = {"evalcert cml": lambda Y: Rasch(method="cml").fit(Y).difficulties_,
                   "cml reference paths": reference_cml,
                   "evalcert jml": lambda Y: Rasch(method="jml").fit(Y).difficulties_,
                   "mirt (PyPI) 1PL mml": mirt_1pl}
        results = {}
        for name, run in runners.items():
            try:
                results[name] = timed(run, Y)
            except ImportError:
                continue
            cpu, wall, b = results[name]
            ref_cpu, ref_wall, ref_b = results["evalcert cml"]
            ok = np.isfinite(b) & np.isfinite(ref_b)
            diff = np.max(np.abs((b - b[ok].mean()) - (ref_b - ref_b[ok].mean()))[ok])
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            rows.append((shape, name, cpu, wall, cpu / ref_cpu, wall / ref_wall, diff, rss))
            print(f"{shape:16s} {name:22s} cpu {cpu:7.3f} s  wall {wall:7.3f} s",
                  file=sys.stderr, flush=True)
    print(format_table(rows, HEADERS))
    print()
    print(format_table(kernels, KERNEL_HEADERS))
    print(load_line(load))


if __name__ == "__main__":
    main()
