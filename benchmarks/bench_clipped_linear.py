"""Benchmark of the clipped-linear fit (Eq. 7) across backends and sizes.

A script, not a test: ``python benchmarks/bench_clipped_linear.py [--quick]``.

For each size it times the first fit and warm refits (new scores on the same
design, as in a noise sweep) of every backend through the public estimator
``ClippedLinear`` (every run is certified, or it raises), and prints ratios
against the naive formulation (one box constraint per cell, OSQP through
CVXPY) measured in the same run where it fits in memory; a naive run that
does not finish within ``--naive-timeout`` seconds gives a lower bound.
Each case runs in a fresh process, so its peak resident memory (data plus
first fit, measured before the refit data is made) is its own. The
ScoreMatrix holds the observed cells only (no K x J array).

Targets (issue 2): >= 20x faster than naive at 300 x 10^4 (30%);
1000 x 10^5 (1%) in < 10 s and < 2 GB peak; 500 refits at 30 x 200 in < 1 s.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import sys
import time

import numpy as np

SIZES = [(30, 200, 0.8), (300, 10_000, 0.3), (1000, 100_000, 0.01)]


def synthetic(K: int, J: int, coverage: float, seed: int = 0):
    """A saturated additive score matrix with ``coverage`` of the cells observed."""
    from evalcert.data import ScoreMatrix

    rng = np.random.default_rng(seed)
    n = int(round(coverage * K * J))
    flat = rng.choice(K * J, size=n, replace=False)
    # one cell per item and per agent on top, so that none is left unobserved
    flat = np.union1d(flat, np.r_[rng.integers(0, K, J) * J + np.arange(J),
                                  np.arange(K) * J + rng.integers(0, J, K)])
    n = len(flat)
    rows, cols = flat // J, flat % J
    theta, b = rng.normal(0.25, 0.35, K), rng.normal(0, 0.25, J)
    scores = np.clip(theta[rows] - b[cols] + 0.1 * rng.standard_t(5, n), -1, 1)
    S = ScoreMatrix.from_cells(rows, cols, scores, [f"agent_{k}" for k in range(K)],
                               [f"item_{j}" for j in range(J)])   # cells only, no K x J array
    return S, rng


def run_case(K, J, coverage, backend, refits, queue):
    from evalcert.data import ScoreMatrix
    from evalcert.solvers import ClippedLinear
    from evalcert.solvers.reference import naive_clipped_linear

    S, rng = synthetic(K, J, coverage)
    out = {"K": K, "J": J, "cells": S.n_observed, "backend": backend, "refits": refits}
    t0 = time.perf_counter()
    if backend == "naive":
        naive_clipped_linear(S, box="all", solver="osqp")
        out["first_fit_s"] = time.perf_counter() - t0
        out["refit_total_s"] = 0.0
    else:
        model = ClippedLinear(box="all", solver=backend).fit(S)
        out["first_fit_s"] = time.perf_counter() - t0
        out["binding"] = len(model.result_.certificate.binding)
        # peak of data + first fit, before the refit data below is made
        out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        out["path"] = model.result_.solver
        rows, cols, s = S.cells()
        batch = []  # the refit data is made before the clock starts: fits are timed, not data
        for _ in range(refits):   # new scores on the same cells (a noise sweep)
            noisy = np.clip(s + 0.02 * rng.standard_normal(len(s)), -1, 1)
            batch.append(ScoreMatrix.from_cells(rows, cols, noisy, S.agents, S.items))
        t0 = time.perf_counter()
        for T in batch:
            model.fit(T)
        out["refit_total_s"] = time.perf_counter() - t0
    out.setdefault("peak_mb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
    queue.put(out)


def run_isolated(args, timeout):
    """Run one case in a fresh process; None on timeout or failure."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=run_case, args=(*args, queue))
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.terminate()
        proc.join()
        return None
    return queue.get() if not queue.empty() else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the two smaller sizes")
    parser.add_argument("--sizes", default=None,
                        help="comma-separated indices into the size list (0: 30x200, "
                             "1: 300x10^4, 2: 1000x10^5)")
    parser.add_argument("--naive-timeout", type=float, default=600.0,
                        help="seconds the naive formulation may take before it is stopped")
    parser.add_argument("--naive-limit", type=int, default=3_000_000,
                        help="skip the naive formulation above this many K*J cells")
    args = parser.parse_args(argv)
    sizes = SIZES[:2] if args.quick else SIZES
    if args.sizes:
        sizes = [SIZES[int(k)] for k in args.sizes.split(",")]
    rows = []
    for K, J, cov in sizes:
        small = K * J <= 10_000
        backends = ["native", "osqp-direct"]
        if small:
            backends += ["osqp", "clarabel", "scs"]
        elif K * J <= 3_000_000:
            backends += ["osqp", "clarabel"]
        if K * J <= args.naive_limit:
            backends.append("naive")
        for backend in backends:
            refits = 0 if backend == "naive" else (500 if small else (2 if K * J <= 3_000_000 else 1))
            if small and backend in ("clarabel", "scs"):
                refits = 50
            timeout = args.naive_timeout if backend == "naive" else 3600
            r = run_isolated((K, J, cov, backend, refits), timeout)
            if r is None:
                print(f"{K:>5}x{J:<7} {backend:<12} did not finish within {timeout:.0f} s "
                      "(or failed)", flush=True)
                rows.append({"K": K, "J": J, "backend": backend, "timeout": timeout})
                continue
            rows.append(r)
            per = r["refit_total_s"] / r["refits"] if r["refits"] else float("nan")
            print(f"{K:>5}x{J:<7} {r['cells']:>9} cells {backend:<12} first {r['first_fit_s']:8.3f}s"
                  f"  refit {per * 1e3:9.2f} ms x{r['refits']:<4} total {r['refit_total_s']:7.3f}s"
                  f"  peak {r['peak_mb']:7.0f} MB  {r.get('path', '')}", flush=True)
    print("\nfirst-fit speed-up against the naive formulation (same run, same data):")
    for K, J, _ in sizes:
        naive = [r for r in rows if r["K"] == K and r["backend"] == "naive"]
        for r in rows:
            if r["K"] != K or r["backend"] == "naive" or "first_fit_s" not in r:
                continue
            if not naive:
                ratio = "naive not run (too large for memory)"
            elif "timeout" in naive[0]:
                ratio = f">= {naive[0]['timeout'] / r['first_fit_s']:.0f}x (naive stopped at its time limit)"
            else:
                ratio = f"{naive[0]['first_fit_s'] / r['first_fit_s']:.1f}x"
            print(f"  {K}x{J} {r['backend']:<12} {ratio}")
    print("\ntargets:")
    for r in rows:
        if (r["K"], r["backend"]) == (30, "native"):
            print(f"  500 refits at 30x200 (native): {r['refit_total_s']:.3f} s (target < 1 s)")
        if (r["K"], r["backend"]) == (1000, "native") and "first_fit_s" in r:
            print(f"  1000x100000 first fit (native): {r['first_fit_s']:.2f} s, peak "
                  f"{r['peak_mb']:.0f} MB (targets < 10 s, < 2048 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
