"""Clipped-linear fits at scale: time and peak memory against the observed cells.

A script, not a test:
``python benchmarks/bench_scale.py [--quick] [--huge] [--only N] [--out DIR]``.

Each case runs in a fresh child process, so its peak resident memory is its
own. A case generates a random sparse design (every agent and item observed,
scores saturated at the +-1 box so the box binds), writes it as a long Parquet
file (agent, item, score as plain string and float columns, one row group per
block of about 2 x 10^6 cells, written block by block, so generating 10^8
cells does not hold them all), and then, in the child:

* ``read``: ``read_scores(path, format="long")`` (Parquet scanned in batches);
* ``one pass``: the reference, one pass over the cells (per-agent and
  per-item means by ``np.bincount``): nothing can fit the model faster;
* ``fit``: ``ClippedLinear(solver="native").fit(S)`` end to end (connectivity,
  build, solve, certificate), box on all cells; ``cert`` is the certificate's
  share of it (``qp_certificate``, timed inside the fit);
* ``osqp-direct``: the same fit by OSQP on the same data, where the cost
  estimate lets it run within ``--osqp-limit`` seconds.

What is timed, per case: ``read`` and ``fit`` (so read + validation of the
names and cells + connectivity + build + solve + certificate, the column
``read+fit``); ``cert`` is part of ``fit``. Not timed: generating and writing
the file, and the child's start-up: its imports and a first read and fit of a
tiny file of the same layout (``WARMUP``, by both paths of ``native``), so
that lazy imports (tqdm, the native backend) and first calls, a fixed cost of
~0.1 s per process, are not charged to the cells (at 10^5 cells they were
half of read+fit); the start-up's seconds are printed on the second line.
Nothing is cached between the start-up and the case (another file, another
design).

Every phase is timed in wall seconds AND the process's CPU seconds
(``time.process_time``; single-threaded numerics with
``OPENBLAS_NUM_THREADS=1``, so CPU is close to what an idle machine's wall
clock would be when other jobs share the cores). Memory: the peak resident
set of the child (``VmHWM``, before the osqp-direct reference) minus its
resident set after the imports, per observed cell (also after the read and
before the certificate), and the peak against
:func:`evalcert.memory.estimate_fit_from_file_bytes`. The last columns give
the CPU time per cell of read + fit relative to the smallest case (the
target: flat within 2x from 10^5 to 10^8 cells).

Targets (issue 13 item 2): 10^4 x 10^6 with 2 x 10^7 cells end to end (read +
fit) in < 60 s and < 4 GB; 5000 x 5000 complete (fit) in < 20 s; time per
cell flat (within 2x) from 10^5 to 10^8 cells. ``--huge`` adds 10^8 cells,
run only when the memory estimate fits in what this machine has available
(otherwise the estimate is printed and the case skipped).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import queue as queue_module
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: (agents, items, observed cells or None for complete)
CASES = [(1_000, 10_000, 100_000), (3_000, 100_000, 1_000_000), (2_000, 100_000, 2_000_000),
         (10_000, 1_000_000, 5_000_000), (10_000, 1_000_000, 20_000_000), (5_000, 5_000, None)]
QUICK = [(300, 3_000, 100_000), (1_000, 30_000, 1_000_000), (2_000, 100_000, 2_000_000),
         (1_000, 1_000, None)]
HUGE = [(10_000, 1_000_000, 100_000_000)]
#: the start-up run's design (agents, items, cells): imports and first calls, untimed
WARMUP = (600, 1_000, 6_000)
#: items generated (and written as one Parquet row group) at a time
BLOCK_CELLS = 2_000_000


def _block(K: int, J: int, n: int | None, j0: int, j1: int, theta: np.ndarray,
           rng: np.random.Generator):
    """Cells of items ``j0..j1`` of the design (see :func:`write_parquet`)."""
    width = j1 - j0
    if n is None:
        rows = np.tile(np.arange(K, dtype=np.int64), width)
        cols = np.repeat(np.arange(j0, j1, dtype=np.int64), K)
    else:
        # d = n // J distinct agents per item: the k-th drawn from the k-th of d
        # disjoint windows of K // d agents after a random start (no repeated
        # pair, no sort); every agent is hit when d J >= K
        d = max(1, min(K, n // J))
        cols = np.repeat(np.arange(j0, j1, dtype=np.int64), d)
        start = rng.integers(0, K, width)
        first = np.arange(j0, min(j1, K))            # every agent observed at least once
        start[:len(first)] = first
        rows = np.repeat(start, d) + np.tile(np.arange(d, dtype=np.int64) * (K // d), width)
        rows += rng.integers(0, K // d, width * d)
        rows %= K
    b = rng.normal(0, 0.25, width)
    scores = theta[rows] - b[cols - j0]
    scores += 0.1 * rng.standard_normal(len(rows))
    scores *= 2.0
    np.clip(scores, -1.0, 1.0, out=scores)
    return rows, cols, scores


def write_parquet(path: Path, K: int, J: int, n: int | None, seed: int = 0) -> int:
    """Write the design as a long Parquet file, a block of items at a time; return its cells."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    theta = rng.normal(0.25, 0.35, K)
    agents = pa.array([f"m{k}" for k in range(K)])
    items = pa.array([f"q{j}" for j in range(J)])
    per_item = K if n is None else max(1, min(K, n // J))
    step = max(1, BLOCK_CELLS // per_item)
    schema = pa.schema([("agent", pa.string()), ("item", pa.string()), ("score", pa.float64())])
    total = 0
    # plain string columns, as pandas or any Arrow writer stores names (Parquet
    # dictionary-encodes each row group's pages itself)
    with pq.ParquetWriter(path, schema) as writer:
        for j0 in range(0, J, step):
            rows, cols, scores = _block(K, J, n, j0, min(J, j0 + step), theta, rng)
            writer.write_table(pa.table({"agent": agents.take(pa.array(rows)),
                                         "item": items.take(pa.array(cols)), "score": scores},
                                        schema=schema))
            total += len(rows)
    return total


class _Phases:
    """Wall and CPU seconds per phase, and the process's peak resident set
    (``VmHWM``, exact, unlike sampling: scipy's C loops hold the GIL; not
    ``ru_maxrss``, which after fork + exec starts at the parent's size) at the
    end of each phase: the peak up to and including it."""

    def __init__(self):
        self.peaks, self.times = {}, {}

    @staticmethod
    def rss() -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    @staticmethod
    def maxrss() -> int:
        from evalcert.memory import peak_rss

        return peak_rss()

    def run(self, name, func, *args, **kwargs):
        self.peaks.setdefault(f"before {name}", self.maxrss())
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return func(*args, **kwargs)
        finally:
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            prev = self.times.get(name, (0.0, 0.0))
            self.times[name] = (prev[0] + wall, prev[1] + cpu)
            self.peaks[name] = self.maxrss()


def run_case(path: str, osqp_limit: float, queue) -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    phases = _Phases()
    import evalcert.solvers.clipped_linear as clipped_linear
    from evalcert.io.scores import read_scores
    from evalcert.errors import EvalcertError
    from evalcert.solvers import ClippedLinear
    from evalcert.solvers.backends.base import estimate_cost
    import pyarrow.dataset  # noqa: F401  (imports in the baseline, not in "read")

    # start-up, once per process and not per cell: the lazy imports and first
    # calls of the read and the fit (both native paths), on a tiny file of the
    # same layout
    warm = Path(path).with_suffix(".warmup.parquet")
    phases.run("start-up", lambda: [
        ClippedLinear(solver="native", verbose=True, solver_options={"path": route}).fit(
            read_scores(warm, format="long")) for route in ("direct", "pcg")])
    certificate = clipped_linear.qp_certificate
    clipped_linear.qp_certificate = lambda *a, **k: phases.run("cert", certificate, *a, **k)
    base = phases.rss()
    out = {"base": base}
    S = phases.run("read", read_scores, path, format="long")
    rows, cols, scores = S.cells()
    t0 = time.perf_counter()
    K, J = S.shape
    agent_mean = np.bincount(rows, scores, K) / np.bincount(rows, minlength=K)
    item_mean = np.bincount(cols, scores, J) / np.bincount(cols, minlength=J)
    out["one_pass"] = time.perf_counter() - t0
    del agent_mean, item_mean, rows, cols, scores
    model = phases.run("fit", ClippedLinear(solver="native", verbose=True).fit, S)
    res = model.result_
    out.update(cells=S.n_observed, shape=S.shape, solver=res.solver, iterations=res.iterations,
               certified=bool(res.certificate.passed), gap=res.certificate.relative_gap,
               binding=len(res.certificate.binding), timings=res.timings.summary())
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
    out["times"], out["peaks"] = phases.times, phases.peaks
    queue.put(out)


def _estimate(K: int, J: int, n: int) -> int:
    from evalcert.memory import estimate_fit_from_file_bytes
    return estimate_fit_from_file_bytes(n, K, J)


def _run_child(ctx, path: Path, osqp_limit: float, name: str) -> dict:
    queue = ctx.Queue()
    proc = ctx.Process(target=run_case, args=(str(path), osqp_limit, queue))
    proc.start()
    while True:
        try:
            out = queue.get(timeout=5)
            break
        except queue_module.Empty:
            if not proc.is_alive():
                raise SystemExit(f"the case {name} died (exit code {proc.exitcode})")
    proc.join()
    return out


def main(argv=None) -> None:
    from evalcert.memory import format_bytes, memory_available

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (~1 minute)")
    parser.add_argument("--huge", action="store_true",
                        help="add 10^8 cells when the memory estimate fits (~15 GiB)")
    parser.add_argument("--only", type=int, default=None,
                        help="run only the cases with this many observed cells (e.g. 20000000)")
    parser.add_argument("--osqp-limit", type=float, default=120.0,
                        help="time limit of the osqp-direct reference run (seconds)")
    parser.add_argument("--out", default=None, help="folder for the Parquet files (default: "
                        "a temporary folder, removed afterwards)")
    args = parser.parse_args(argv)
    cases = QUICK if args.quick else CASES + (HUGE if args.huge else [])
    if args.only is not None:
        cases = [c for c in CASES + QUICK + HUGE if (c[2] or c[0] * c[1]) == args.only][:1]
    ctx = mp.get_context("spawn")
    smallest = None
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.out or tmp)
        print(f"{'case':>24} {'cells':>11} | {'read':>13} | {'fit':>13} | {'cert':>11} | "
              f"{'read+fit':>13} | {'CPU/cell':>8} {'ratio':>5} | {'peak RSS':>8} "
              f"{'B/cell':>6} {'est.':>8}  (seconds: wall/CPU; ratio = CPU per cell over the "
              "first case's)")
        for K, J, n in cases:
            cells_expected = n if n is not None else K * J
            name = f"{K} x {J} ({'complete' if n is None else 'sparse'})"
            est = _estimate(K, J, cells_expected)
            avail = memory_available()
            if est > 0.8 * avail:
                print(f"{name:>24} {cells_expected:>11,} | skipped: the estimate "
                      f"{format_bytes(est)} exceeds 80% of the {format_bytes(avail)} available "
                      "(evalcert.memory.estimate_fit_from_file_bytes)", flush=True)
                continue
            path = folder / f"scale_{K}x{J}_{n or 'full'}.parquet"
            t0 = time.perf_counter()
            cells = write_parquet(path, K, J, n)
            write_parquet(path.with_suffix(".warmup.parquet"), *WARMUP)
            gen = time.perf_counter() - t0
            out = _run_child(ctx, path, args.osqp_limit, name)
            path.unlink()
            path.with_suffix(".warmup.parquet").unlink()
            times, peaks = out["times"], out["peaks"]
            (rw, rc), (fw, fc) = times["read"], times["fit"]
            cw, cc = times.get("cert", (0.0, 0.0))
            peak = peaks["fit"]
            per_cell = (rc + fc) / cells
            smallest = smallest or per_cell
            print(f"{name:>24} {cells:>11,} | {rw:>5.1f}/{rc:>5.1f} s | {fw:>5.1f}/{fc:>5.1f} s | "
                  f"{cw:>4.1f}/{cc:>4.1f} s | {rw + fw:>5.1f}/{rc + fc:>5.1f} s | "
                  f"{1e9 * per_cell:>6.0f}ns {per_cell / smallest:>5.2f} | "
                  f"{peak / 2 ** 30:>6.2f}GB {(peak - out['base']) / cells:>6.0f} "
                  f"{est / 2 ** 30:>6.2f}GB", flush=True)
            phase_peaks = ", ".join(f"{k} {(peaks[k] - out['base']) / cells:.0f}" for k in
                                    ("read", "before cert", "cert", "fit"))
            sw, sc = times["start-up"]
            print(f"{'':>24}   start-up (untimed) {sw:.2f}/{sc:.2f} s; "
                  f"{out['solver']}, {out['iterations']} active-set steps, certified="
                  f"{out['certified']} (gap {out['gap']:.1e}, {out['binding']} binding); peak "
                  f"B/cell over the imports ({format_bytes(out['base'])}) after: "
                  f"{phase_peaks}; measured/estimated peak {peak / est:.2f}; 1 pass "
                  f"{out['one_pass']:.2f} s (fit/pass {fw / out['one_pass']:.0f}x); osqp-direct: "
                  f"{out['osqp']}  [generated in {gen:.0f} s; {out['timings']}]", flush=True)


if __name__ == "__main__":
    sys.exit(main())
