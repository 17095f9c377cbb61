"""Bootstrap and sparse recovery on a Dask cluster: speed-up from 1 to 2 workers, and at scale.

A script, not a test:
``python benchmarks/bench_dask.py [--quick] [--size K J COV N_BOOT SEEDS] [--scheduler ADDRESS]``
or, at scale, ``python benchmarks/bench_dask.py --cells K J N [--n-boot B] [--seeds S]
[--check M] [--C C] [--only bootstrap|recovery]``.

Default mode: runs the bootstrap of the training cells (paper 000, App. D.4)
and the sparse-recovery experiment (Sec. 5) three ways in one process and
prints the wall times and ratios:

* ``loky n_jobs=1``: the in-process reference (every refit reuses one model);
* ``dask, 1 worker`` and ``dask, 2 workers``: a ``distributed.LocalCluster``
  with one thread per worker process, reached through its scheduler address
  (``scheduler=``), exactly as a remote cluster would be. The score matrix
  travels once per worker (``client.scatter(..., broadcast=True)``). Cluster
  start-up is not timed; scattering is.

Every Dask result is checked against the reference, replicate for replicate:
equal for the sparse recovery; for the bootstrap, each worker keeps one model
for the whole run (warm starts from the previous replicate, as the reference
does, but from a different previous one), so replicates agree to the solver's
tolerance (the largest difference is printed).

``--cells K J N`` (e.g. ``10000 1000000 20000000``): a design of N observed
cells generated block by block with the generator of ``bench_scale.py``
(d = N / J agents per item, never a K x J array), then

1. the cost of one bootstrap refit, CPU and wall seconds: the full-data fit
   (cold), then the refit on replicate 0's weights warm-started from it (what
   every refit is, in process and on Dask) and cold (a fresh model);
2. the in-process reference on the first ``--check`` replicates / seeds only
   (replicate b depends only on the seed, so these are the Dask run's first
   ones), then the Dask run on a 2-worker ``LocalCluster`` (or ``--scheduler``)
   with progress on stderr, the largest difference on the checked subset, and
   each worker's CPU seconds (``client.run`` + ``resource.getrusage``) per refit.

``--scheduler tcp://host:8786`` runs the Dask part on an existing cluster
instead (its worker count is whatever that cluster has). Peak RSS of this
process and of every worker (``VmHWM``, :func:`evalcert.memory.peak_rss`; ``ru_maxrss``
would report a spawned worker at least at its parent's size) is printed at the end. Under load
wall times are inflated; CPU seconds are the comparable figure.
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


def on_cells(K: int, J: int, n: int, seed: int = 0):
    """The sparse design of ``bench_scale.py`` (N // J agents per item), built on cells:
    the cells its ``write_parquet`` writes for the same seed, without the file."""
    from bench_scale import BLOCK_CELLS, _block

    from evalcert.data import ScoreMatrix

    rng = np.random.default_rng(seed)
    theta = rng.normal(0.25, 0.35, K)
    step = max(1, BLOCK_CELLS // max(1, min(K, n // J)))
    parts = [_block(K, J, n, j0, min(J, j0 + step), theta, rng) for j0 in range(0, J, step)]
    rows, cols, scores = (np.concatenate(p) for p in zip(*parts))
    del parts
    return ScoreMatrix.from_cells(rows, cols, scores, [f"m{k}" for k in range(K)],
                                  [f"q{j}" for j in range(J)])


def jobs(S, n_boot: int, seeds: int, chunk: int | None = None, C: float = 1.6,
         progress: bool = False):
    """The two experiments as functions of the backend arguments (``n_boot=`` / ``seeds=``
    override the run's size, e.g. for the reference on a subset)."""
    from evalcert.diagnostics.bootstrap import bootstrap_fidelity
    from evalcert.diagnostics.experiments import sparse_recovery
    from evalcert.diagnostics.sampling import holdout_on_cells
    from evalcert.solvers import ClippedLinear

    hold = holdout_on_cells(S, 0.2, seed=0)
    chunk = chunk or max(1, n_boot // 8)

    def boot(n=n_boot, **kw):
        return bootstrap_fidelity(ClippedLinear(solver="native"), S, ~hold, hold, n_boot=n,
                                  seed=1, chunk_size=chunk, progress=progress, **kw)

    def recovery(n=seeds, **kw):
        return sparse_recovery(S, "nlogn", C=C, seeds=n, progress=progress, **kw)

    return {"bootstrap": boot, "sparse recovery": recovery}


def _warm() -> None:
    import evalcert.diagnostics  # noqa: F401
    import evalcert.solvers  # noqa: F401


def _usage() -> tuple[float, float]:
    """CPU seconds and peak RSS (MiB, :func:`evalcert.memory.peak_rss`) of this process."""
    from evalcert.memory import peak_rss

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime, peak_rss() / 2 ** 20


def _cpu() -> float:
    return _usage()[0]


def difference(a, b) -> float:
    """Largest absolute difference between the per-replicate (or per-seed) metrics of the
    first ``len(b)`` replicates (or seeds) of ``a`` and those of ``b``."""
    if hasattr(a, "replicates"):
        m = len(next(iter(b.replicates.values())))
        return max(float(np.max(np.abs(a.replicates[k][:m] - b.replicates[k])))
                   for k in b.replicates)
    return max(abs(getattr(x, m) - getattr(y, m)) for x, y in zip(a.runs, b.runs)
               for m in ("rmse", "spearman", "kendall"))


def timed(fn, **kw):
    start, cpu = time.perf_counter(), time.process_time()
    out = fn(**kw)
    return out, time.perf_counter() - start, time.process_time() - cpu


def refit_cost(S) -> None:
    """One bootstrap refit at this size: warm-started from the full-data fit and cold."""
    from evalcert.diagnostics.bootstrap import connected_resample
    from evalcert.diagnostics.sampling import holdout_on_cells
    from evalcert.solvers import ClippedLinear

    hold = holdout_on_cells(S, 0.2, seed=0)
    S_train = S.restrict(~hold)
    n = S_train.n_observed
    child = np.random.SeedSequence(1).spawn(1)[0]        # replicate 0 of the bootstrap
    weight, _ = connected_resample(np.random.default_rng(child), S_train)
    model = ClippedLinear(solver="native")
    _, w_full, c_full = timed(model.fit, S=S_train)
    _, w_warm, c_warm = timed(model.fit, S=S_train, sample_weight=weight)
    warm_theta = model.theta_.copy()
    del model
    cold = ClippedLinear(solver="native")
    _, w_cold, c_cold = timed(cold.fit, S=S_train, sample_weight=weight)
    gap = float(np.max(np.abs(cold.theta_ - warm_theta)))
    print(f"one refit on {n:,} training cells (CPU/wall s): full-data fit (cold) "
          f"{c_full:.1f}/{w_full:.1f}; replicate 0 warm-started {c_warm:.1f}/{w_warm:.1f}, "
          f"cold {c_cold:.1f}/{w_cold:.1f} (cold/warm CPU {c_cold / c_warm:.2f}x); "
          f"max |theta_warm - theta_cold| {gap:.1e}", flush=True)


def cluster_run(fn, workers: int | None, address: str | None, **kw):
    """``fn(backend="dask", ...)`` on a fresh LocalCluster of ``workers`` (or at ``address``):
    result, wall s, CPU s of this process, and each worker's CPU s and peak RSS (MiB)."""
    from distributed import Client, LocalCluster

    cluster = None
    if address is None:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, memory_limit=0)
        address = cluster.scheduler_address
    try:
        with Client(address) as client:
            client.run(_warm)
            before = client.run(_cpu)
            out, wall, cpu = timed(fn, backend="dask", scheduler=address, **kw)
            after = client.run(_usage)
        usage = {w: (after[w][0] - before.get(w, 0.0), after[w][1]) for w in after}
    finally:
        if cluster is not None:
            cluster.close()
    return out, wall, cpu, usage


def compare(args) -> None:
    """Default mode: reference, then 1 and 2 workers (or ``--scheduler``), all replicates."""
    K, J, cov, n_boot, seeds = (60, 600, 0.3, 16, 4) if args.quick else (200, 4000, 0.2, 64, 16)
    if args.size:
        K, J, cov, n_boot, seeds = (int(args.size[0]), int(args.size[1]), float(args.size[2]),
                                    int(args.size[3]), int(args.size[4]))
    S = synthetic(K, J, cov)
    print(f"{K} x {J}, {S.n_observed} observed cells; bootstrap {n_boot} refits, "
          f"sparse recovery {seeds} seeds; ClippedLinear(native)")
    for name, fn in jobs(S, n_boot, seeds).items():
        ref, t_ref, _ = timed(fn, n_jobs=1)
        print(f"\n{name}: loky n_jobs=1 (reference) {t_ref:8.2f} s")
        clusters = [(None, args.scheduler)] if args.scheduler else [(1, None), (2, None)]
        t_one = None
        for workers, address in clusters:
            out, t, _, usage = cluster_run(fn, workers, address)
            label = f"dask, {workers} worker(s)" if workers else f"dask at {address}"
            t_one = t if workers == 1 else t_one
            ratio = f"; speed-up vs 1 worker {t_one / t:.2f}x" if workers == 2 and t_one else ""
            peaks = ", ".join(f"{rss:.0f}" for _, rss in usage.values())
            print(f"  {label:<22} {t:8.2f} s  ({t_ref / t:.2f}x the reference{ratio}); "
                  f"largest difference from the reference {difference(out, ref):.1e}; "
                  f"worker peak RSS {peaks} MiB")


def at_scale(args) -> None:
    """``--cells``: refit cost, reference on ``--check`` replicates, the full run on Dask."""
    from evalcert.memory import estimate_fit_from_file_bytes, format_bytes, memory_available

    K, J, n = args.cells
    fit = estimate_fit_from_file_bytes(n, K, J)
    workers = None if args.scheduler else args.workers
    need = (2 + (workers or 0)) * fit            # client: reference + one spare; each worker
    avail = memory_available()
    where = f"{workers} local workers" if workers else "no local worker (--scheduler)"
    print(f"memory: ~{format_bytes(fit)} per fit (evalcert.memory estimate), ~{format_bytes(need)} "
          f"for this process and {where}; {format_bytes(avail)} available", flush=True)
    if need > 0.8 * avail:
        raise SystemExit("not enough memory: run fewer workers or on a larger machine")
    S, t_gen, _ = timed(on_cells, K=K, J=J, n=n)
    print(f"{K} x {J}, {S.n_observed:,} observed cells (generated on cells in {t_gen:.0f} s); "
          f"ClippedLinear(native); load average {os.getloadavg()[0]:.1f}", flush=True)
    work = jobs(S, args.n_boot, args.seeds, chunk=args.chunk, C=args.C, progress=True)
    sizes = {"bootstrap": args.n_boot, "sparse recovery": args.seeds}
    for name in args.only:                      # in the order given
        name = "sparse recovery" if name == "recovery" else name
        fn = work[name]
        if name == "bootstrap":
            refit_cost(S)
        m = min(args.check, sizes[name])
        ref, w_ref, c_ref = timed(fn, n=m, n_jobs=1)
        print(f"\n{name}: in-process reference on the first {m} of {sizes[name]} "
              f"(incl. the full-data fit): {c_ref:.1f} CPU s / {w_ref:.1f} s", flush=True)
        out, wall, cpu, usage = cluster_run(fn, workers, args.scheduler)
        work_cpu = sum(c for c, _ in usage.values())
        print(f"  dask ({len(usage)} workers): {sizes[name]} in {wall:.0f} s wall; workers "
              f"{work_cpu:.0f} CPU s = {work_cpu / sizes[name]:.1f} CPU s per "
              + ("refit (incl. one full-data fit per worker)" if name == "bootstrap" else
                 "seed") + f"; this process {cpu:.0f} CPU s; worker peak RSS "
              + ", ".join(f"{rss:.0f}" for _, rss in usage.values())
              + f" MiB; largest difference from the reference on the first {m}: "
              f"{difference(out, ref):.1e}", flush=True)
        print(out.summary(), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small problem (about a minute)")
    parser.add_argument("--scheduler", help="address of an existing Dask scheduler")
    parser.add_argument("--size", nargs=5, metavar=("K", "J", "COVERAGE", "N_BOOT", "SEEDS"),
                        help="problem size instead of the default 200 4000 0.2 64 16 (larger "
                             "tasks amortise the scheduler on a small machine)")
    parser.add_argument("--cells", nargs=3, type=int, metavar=("K", "J", "N"),
                        help="at scale: N observed cells generated on cells (e.g. 10000 1000000 "
                             "20000000); the reference runs on --check replicates only")
    parser.add_argument("--n-boot", type=int, default=500, help="--cells: bootstrap refits")
    parser.add_argument("--seeds", type=int, default=50, help="--cells: sparse-recovery seeds")
    parser.add_argument("--check", type=int, default=3,
                        help="--cells: replicates / seeds run in process as the reference")
    parser.add_argument("--chunk", type=int, default=10, help="--cells: replicates per task")
    parser.add_argument("--C", type=float, default=0.5,
                        help="--cells: n log n constant of the sparse designs (1.6 would take "
                             "every training cell at 10^4 x 10^6 x 2 x 10^7)")
    parser.add_argument("--workers", type=int, default=2, help="--cells: LocalCluster workers")
    parser.add_argument("--only", nargs="+", choices=("bootstrap", "recovery"),
                        default=["bootstrap", "recovery"], help="--cells: which experiments")
    args = parser.parse_args()
    if args.cells:
        at_scale(args)
    else:
        compare(args)
    cpu, peak = _usage()
    print(f"\nthis process: {cpu:.0f} CPU s, peak RSS {peak:.0f} MiB; load average "
          f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
