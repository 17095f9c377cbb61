"""Bootstrap and sparse recovery on a Dask cluster: speed-up from 1 to 2 workers.

A script, not a test: ``python benchmarks/bench_dask.py [--quick] [--scheduler ADDRESS]``.

Runs the bootstrap of the training cells (paper 000, App. D.4) and the
sparse-recovery experiment (Sec. 5) three ways in one process and prints the
wall times and ratios:

* ``loky n_jobs=1``: the in-process reference (every refit reuses one model);
* ``dask, 1 worker`` and ``dask, 2 workers``: a ``distributed.LocalCluster``
  with one thread per worker process, reached through its scheduler address
  (``scheduler=``), exactly as a remote cluster would be. The score matrix
  travels once per worker (``client.scatter(..., broadcast=True)``). Cluster
  start-up is not timed; scattering is.

Every Dask result is checked against the reference, replicate for replicate:
equal for the sparse recovery; for the bootstrap, each task refits its own
model copy while the reference reuses one (warm starts), so replicates agree
to rounding (the largest difference is printed). Workers import evalcert
before the clock starts.
``--scheduler tcp://host:8786`` runs the Dask part on an existing cluster
instead (its worker count is whatever that cluster has). Peak RSS of this
process (``ru_maxrss``) is printed at the end; the workers' memory is theirs.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def synthetic(K: int, J: int, coverage: float, seed: int = 0):
    """Additive scores with noise on a random design where every agent and item is observed."""
    from evalcert.data import ScoreMatrix

    rng = np.random.default_rng(seed)
    keep = rng.random((K, J)) < coverage
    keep[np.arange(K), rng.integers(0, J, K)] = True
    keep[rng.integers(0, K, J), np.arange(J)] = True
    rows, cols = np.nonzero(keep)
    theta, b = rng.normal(0.2, 0.3, K), rng.normal(0, 0.25, J)
    scores = np.clip(theta[rows] - b[cols] + 0.1 * rng.standard_normal(len(rows)), -1, 1)
    return ScoreMatrix.from_cells(rows, cols, scores, [f"m{k}" for k in range(K)],
                                  [f"q{j}" for j in range(J)])


def jobs(S, n_boot: int, seeds: int):
    from evalcert.diagnostics.bootstrap import bootstrap_fidelity
    from evalcert.diagnostics.experiments import sparse_recovery
    from evalcert.diagnostics.sampling import holdout_on_cells
    from evalcert.solvers import ClippedLinear

    hold = holdout_on_cells(S, 0.2, seed=0)

    def boot(**kw):
        return bootstrap_fidelity(ClippedLinear(solver="native"), S, ~hold, hold,
                                  n_boot=n_boot, seed=1, chunk_size=max(1, n_boot // 8), **kw)

    def recovery(**kw):
        return sparse_recovery(S, "nlogn", C=1.6, seeds=seeds, progress=False, **kw)

    return {"bootstrap": boot, "sparse recovery": recovery}


def _warm() -> None:
    import evalcert.diagnostics  # noqa: F401
    import evalcert.solvers  # noqa: F401


def difference(a, b) -> float:
    """Largest absolute difference between the per-replicate (or per-seed) metrics."""
    if hasattr(a, "replicates"):
        return max(float(np.max(np.abs(a.replicates[m] - b.replicates[m]))) for m in a.replicates)
    return max(abs(getattr(x, m) - getattr(y, m)) for x, y in zip(a.runs, b.runs)
               for m in ("rmse", "spearman", "kendall"))


def timed(fn, **kw):
    start = time.perf_counter()
    out = fn(**kw)
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small problem (about a minute)")
    parser.add_argument("--scheduler", help="address of an existing Dask scheduler")
    parser.add_argument("--size", nargs=5, metavar=("K", "J", "COVERAGE", "N_BOOT", "SEEDS"),
                        help="problem size instead of the default 200 4000 0.2 64 16 (larger "
                             "tasks amortise the scheduler on a small machine)")
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    K, J, cov, n_boot, seeds = (60, 600, 0.3, 16, 4) if args.quick else (200, 4000, 0.2, 64, 16)
    if args.size:
        K, J, cov, n_boot, seeds = (int(args.size[0]), int(args.size[1]), float(args.size[2]),
                                    int(args.size[3]), int(args.size[4]))
    S = synthetic(K, J, cov)
    print(f"{K} x {J}, {S.n_observed} observed cells; bootstrap {n_boot} refits, "
          f"sparse recovery {seeds} seeds; ClippedLinear(native)")
    work = jobs(S, n_boot, seeds)
    for name, fn in work.items():
        ref, t_ref = timed(fn, n_jobs=1)
        print(f"\n{name}: loky n_jobs=1 (reference) {t_ref:8.2f} s")
        clusters = [(None, args.scheduler)] if args.scheduler else [(1, None), (2, None)]
        t_one = None
        for workers, address in clusters:
            cluster = None
            if address is None:
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
                address = cluster.scheduler_address
            with Client(address) as client:
                client.run(_warm)
            try:
                out, t = timed(fn, backend="dask", scheduler=address)
            finally:
                if cluster is not None:
                    cluster.close()
            gap = difference(out, ref)
            label = f"dask, {workers} worker(s)" if workers else f"dask at {address}"
            t_one = t if workers == 1 else t_one
            ratio = f"; speed-up vs 1 worker {t_one / t:.2f}x" if workers == 2 and t_one else ""
            print(f"  {label:<22} {t:8.2f} s  ({t_ref / t:.2f}x the reference{ratio}); "
                  f"largest difference from the reference {gap:.1e}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS of this process: {peak:.0f} MiB; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
