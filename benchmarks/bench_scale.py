"""Clipped-linear fits at scale: time and peak memory against the observed cells.

A script, not a test: ``python benchmarks/bench_scale.py [--quick] [--huge] [--out DIR]``.

Each case runs in a fresh child process, so its peak resident memory
(``ru_maxrss``) is its own. A case generates a random sparse design (every
agent and item observed, scores saturated at the +-1 box so the box binds),
writes it as a long Parquet file (agent, item, score), and then times, in the
child:

* ``read``: ``read_scores(path, format="long")`` (Parquet scanned in batches);
* ``one pass``: the reference, one pass over the cells (per-agent and
  per-item means by ``np.bincount``): nothing can fit the model faster;
* ``fit``: ``ClippedLinear(solver="native").fit(S)`` end to end (connectivity,
  build, solve, certificate), box on all cells;
* ``osqp-direct``: the same fit by OSQP on the same data, where the cost
  estimate lets it run within ``--osqp-limit`` seconds.

It prints, per case, the seconds, the ratio of the fit to the one pass, the
time per observed cell, the fit's CPU time (the process's own, single-threaded
with ``OPENBLAS_NUM_THREADS=1``: close to what an idle machine would take when
other jobs share the cores) and the peak RSS. Targets (issue 13 item 2):
10^4 x 10^6 with 2 x 10^7 cells end to end (read + fit) in < 60 s and < 4 GB;
5000 x 5000 complete (fit) in < 20 s; time per cell flat (within 2x) from 10^5
to 10^8 cells (10^8 needs ~12 GB: behind ``--huge``).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: (agents, items, observed cells or None for complete)
CASES = [(1_000, 10_000, 100_000), (3_000, 100_000, 1_000_000),
         (10_000, 1_000_000, 5_000_000), (10_000, 1_000_000, 20_000_000), (5_000, 5_000, None)]
QUICK = [(300, 3_000, 100_000), (1_000, 30_000, 1_000_000), (1_000, 1_000, None)]
HUGE = [(10_000, 1_000_000, 100_000_000)]


def generate(K: int, J: int, n: int | None, seed: int = 0):
    """Cells of a random design: ``n // J`` cells per item (or all K x J), each
    agent and item observed, saturated additive scores."""
    rng = np.random.default_rng(seed)
    if n is None:
        rows = np.repeat(np.arange(K, dtype=np.int64), J)
        cols = np.tile(np.arange(J, dtype=np.int64), K)
    else:
        # d = n // J distinct agents per item: the k-th drawn from the k-th of d
        # disjoint windows of K // d agents after a random start (no repeated
        # pair, no sort); every agent is hit when d J >= K
        d = max(1, min(K, n // J))
        cols = np.repeat(np.arange(J, dtype=np.int64), d)
        start = rng.integers(0, K, J)
        start[:K] = np.arange(min(K, J))            # every agent observed at least once
        rows = np.repeat(start, d) + np.tile(np.arange(d, dtype=np.int64) * (K // d), J)
        rows += rng.integers(0, K // d, J * d)
        rows %= K
    theta, b = rng.normal(0.25, 0.35, K), rng.normal(0, 0.25, J)
    scores = theta[rows] - b[cols]
    scores += 0.1 * rng.standard_normal(len(rows))
    scores *= 2.0
    np.clip(scores, -1.0, 1.0, out=scores)
    return rows, cols, scores


def write_parquet(path: Path, K: int, J: int, n: int | None) -> int:
    """Write the design as a long Parquet file; return its number of cells."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows, cols, scores = generate(K, J, n)
    agents = pa.array([f"m{k}" for k in range(K)])
    items = pa.array([f"q{j}" for j in range(J)])
    table = pa.table({"agent": pa.DictionaryArray.from_arrays(pa.array(rows.astype(np.int32)),
                                                              agents),
                      "item": pa.DictionaryArray.from_arrays(pa.array(cols.astype(np.int32)),
                                                             items),
                      "score": scores})
    pq.write_table(table, path, row_group_size=2_000_000)
    return len(rows)


def run_case(path: str, osqp_limit: float, queue) -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from evalcert.data import read_scores
    from evalcert.errors import EvalcertError
    from evalcert.solvers import ClippedLinear
    from evalcert.solvers.backends.base import estimate_cost

    out = {}
    t0, c0 = time.perf_counter(), time.process_time()
    S = read_scores(path, format="long")
    out["read"], out["read_cpu"] = time.perf_counter() - t0, time.process_time() - c0
    rows, cols, scores = S.cells()
    t0 = time.perf_counter()
    K, J = S.shape
    agent_mean = np.bincount(rows, scores, K) / np.bincount(rows, minlength=K)
    item_mean = np.bincount(cols, scores, J) / np.bincount(cols, minlength=J)
    out["one_pass"] = time.perf_counter() - t0
    del agent_mean, item_mean, rows, cols, scores
    t0, c0 = time.perf_counter(), time.process_time()
    model = ClippedLinear(solver="native", verbose=True).fit(S)
    out["fit"], out["fit_cpu"] = time.perf_counter() - t0, time.process_time() - c0
    res = model.result_
    out.update(cells=S.n_observed, solver=res.solver, iterations=res.iterations,
               certified=bool(res.certificate.passed), gap=res.certificate.relative_gap,
               binding=len(res.certificate.binding), timings=res.timings.summary(),
               rss_fit=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    est = estimate_cost("osqp-direct", K, J, S.n_observed)
    if est.seconds > 2 * osqp_limit:
        out["osqp"] = f"not run (estimate {est.seconds:.0f} s > 2 x {osqp_limit:g} s)"
    else:
        t0 = time.perf_counter()
        try:
            ClippedLinear(solver="osqp-direct", time_limit=osqp_limit).fit(S)
            out["osqp"] = f"{time.perf_counter() - t0:.2f} s"
        except EvalcertError as exc:
            out["osqp"] = f"{type(exc).__name__} ({getattr(exc, 'status', '')}) after " \
                          f"{time.perf_counter() - t0:.1f} s"
    out["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    queue.put(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (~1 minute)")
    parser.add_argument("--huge", action="store_true", help="add 10^8 cells (~12 GB of memory)")
    parser.add_argument("--osqp-limit", type=float, default=120.0,
                        help="time limit of the osqp-direct reference run (seconds)")
    parser.add_argument("--out", default=None, help="folder for the Parquet files (default: "
                        "a temporary folder, removed afterwards)")
    args = parser.parse_args(argv)
    cases = QUICK if args.quick else CASES + (HUGE if args.huge else [])
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.out or tmp)
        print(f"{'case':>28} {'cells':>11} {'read':>7} {'1 pass':>7} {'fit':>7} {'fit/pass':>8} "
              f"{'ns/cell':>8} {'fit CPU':>8} {'CPU ns/cell':>11} {'peak RSS':>9}  "
              "native path / certificate / osqp-direct")
        for K, J, n in cases:
            path = folder / f"scale_{K}x{J}_{n or 'full'}.parquet"
            t0 = time.perf_counter()
            cells = write_parquet(path, K, J, n)
            gen = time.perf_counter() - t0
            queue = ctx.Queue()
            proc = ctx.Process(target=run_case, args=(str(path), args.osqp_limit, queue))
            proc.start()
            while True:
                try:
                    out = queue.get(timeout=5)
                    break
                except Exception:          # queue.Empty: is the child still alive?
                    if not proc.is_alive():
                        raise SystemExit(f"the case {K} x {J} died (exit code {proc.exitcode})")
            proc.join()
            path.unlink()
            name = f"{K} x {J} ({'complete' if n is None else 'sparse'})"
            end_to_end = out["read"] + out["fit"]
            print(f"{name:>28} {cells:>11,} {out['read']:>6.1f}s {out['one_pass']:>6.2f}s "
                  f"{out['fit']:>6.1f}s {out['fit'] / out['one_pass']:>7.0f}x "
                  f"{1e9 * out['fit'] / cells:>8.0f} {out['fit_cpu']:>7.1f}s "
                  f"{1e9 * out['fit_cpu'] / cells:>11.0f} {out['rss'] / 2 ** 30:>7.2f}GB  "
                  f"{out['solver']}, {out['iterations']} active-set steps, certified="
                  f"{out['certified']} (gap {out['gap']:.1e}, {out['binding']} binding); "
                  f"read+fit {end_to_end:.1f} s (CPU {out['read_cpu'] + out['fit_cpu']:.1f} s); "
                  f"fit-only peak {out['rss_fit'] / 2 ** 30:.2f} GB;"
                  f" osqp-direct: {out['osqp']}  [generated in {gen:.0f} s; {out['timings']}]",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
