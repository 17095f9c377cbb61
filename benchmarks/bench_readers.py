"""Benchmark of the readers of users' files (issue 23). A script, not a test.

Two cases, each measured in a fresh child process (so peak RSS is the case's own) against a
reference in the same run:

1. ``read_scores`` on a complete wide Parquet file of K x K float scores against
   ``pyarrow.parquet.read_table`` of the same file (target: within 3x);
2. ``read_lm_eval`` on a folder of lm-eval sample logs (M models x 2 tasks x N docs, made
   by repeating the rows of the real lm-eval log in tests/data/formats/lm_eval_real with new
   doc ids and hashes) against ``pandas.read_json(lines=True)`` of the same files (target:
   at least 2x faster), with peak RSS beside the bytes of the logs.

3. the whole ``evalcert fit`` of the wide file (the CLI verb in a child process, as a user
   runs it), with the CPU seconds of each stage (imports, read, connectivity check, QP
   build, solve, certificate, the rest: printing) and the peak RSS, against
   ``pyarrow.parquet.read_table`` of the file in the same run (target: the whole fit
   under 20 s). CPU seconds, not only wall: the machine may be shared (the load average
   is printed).

Run: ``python benchmarks/bench_readers.py [--size K] [--models M] [--docs N] [--fit-only]``
(defaults 2000, 10, 2000: about a minute; ``--size 5000`` is the issue's 228 MB file).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "formats" / "lm_eval_real"

CHILD = """
import resource, sys, time
sys.path.insert(0, {root!r})
{setup}
t = time.perf_counter()
{body}
elapsed = time.perf_counter() - t
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""

#: case -> (imports, timed statement); imports are not timed
CASES = {
    "pyarrow.read_table": ("import pyarrow.parquet as pq", "T = pq.read_table({path!r})"),
    "read_scores": ("from evalcert.io.scores import read_scores\nimport pyarrow.parquet",
                    "S = read_scores({path!r})"),
    "pandas.read_json": ("import pandas as pd, pathlib",
                         "frames = [pd.read_json(p, lines=True) for p in "
                         "sorted(pathlib.Path({path!r}).rglob('samples_*.jsonl'))]"),
    "read_lm_eval": ("from evalcert.io.lm_eval import read_lm_eval\nimport evalcert.data",
                     "R = read_lm_eval({path!r})"),
}


#: the whole CLI fit, each stage's process CPU seconds measured by wrapping the function
#: that does it (imports: everything before the verb starts reading)
FIT_CHILD = """
import resource, sys, time
c0, w0 = time.process_time(), time.perf_counter()
sys.path.insert(0, {root!r})
import contextlib, io, json
from evalcert.cli import main
import evalcert.commands._sources as sources
import evalcert.solvers.clipped_linear as cl
import evalcert.solvers.backends.native as native
cpu = {{}}
def timed(name, func):
    def wrapper(*args, **kwargs):
        c = time.process_time()
        try:
            return func(*args, **kwargs)
        finally:
            cpu[name] = cpu.get(name, 0.0) + time.process_time() - c
    return wrapper
sources.read_score_matrix = timed("read", sources.read_score_matrix)
cl._require_connected = timed("connectivity", cl._require_connected)
cl.build_qp = timed("QP build", cl.build_qp)
native.solve = timed("solve", native.solve)
cl.qp_certificate = timed("certificate", cl.qp_certificate)
cpu["imports"] = time.process_time() - c0
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main(["fit", {path!r}])
total = time.process_time() - c0
cpu["rest (cells, output)"] = total - sum(cpu.values())
objective = [line for line in out.getvalue().splitlines() if "objective" in line][0]
print(json.dumps({{"cpu": cpu, "total": total, "wall": time.perf_counter() - w0,
                   "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                   "status": status, "objective": objective.strip()}}))
"""


def measure_fit(path: Path) -> dict:
    """The whole ``evalcert fit`` of ``path`` in a child: CPU seconds per stage, peak RSS."""
    code = FIT_CHILD.format(root=str(ROOT), path=str(path))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env).stdout.splitlines()
    return json.loads(out[-1])


def report_fit(path: Path, size: int) -> None:
    ref, ref_rss = measure("pyarrow.read_table", path)
    load = os.getloadavg()[0]
    fit = min((measure_fit(path) for _ in range(2)), key=lambda r: r["total"])
    stages = ", ".join(f"{k} {v:.2f}" for k, v in fit["cpu"].items())
    print(f"evalcert fit of the {size} x {size} wide Parquet file: {fit['total']:.1f} CPU-s "
          f"({fit['wall']:.1f} s wall at load {load:.1f} on {os.cpu_count()} cores), peak "
          f"{fit['peak']:.0f} MB; pyarrow.read_table {ref:.2f} s wall ({ref_rss:.0f} MB peak) "
          f"in the same run: fit/read_table {fit['total'] / ref:.1f}x (target: whole fit < 20 s)"
          f"\n  CPU-s per stage: {stages}\n  {fit['objective']}")


def measure(case: str, path: Path, repeat: int = 2) -> tuple[float, float]:
    """Best wall seconds of ``repeat`` child runs and the peak RSS (MB) of the fastest."""
    best = None
    for _ in range(repeat):
        setup, body = CASES[case]
        code = CHILD.format(root=str(ROOT), setup=setup, body=body.format(path=str(path)))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.split()
        run = (float(out[-2]), float(out[-1]))
        best = run if best is None or run[0] < best[0] else best
    return best


def make_wide(path: Path, size: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    columns = {"agent": pa.array([f"model_{k}" for k in range(size)])}
    for j in range(size):
        columns[f"item_{j}"] = pa.array(rng.uniform(-1, 1, size))
    pq.write_table(pa.table(columns), path)


def make_lm_eval(folder: Path, models: int, docs: int) -> int:
    """Logs built from the real rows: per model, 2 tasks x ``docs`` rows. Returns bytes."""
    rows = [json.loads(line) for line in
            next(REAL.glob("samples_*.jsonl")).read_text().splitlines()]
    total = 0
    for m in range(models):
        run = folder / f"org__model{m}"
        run.mkdir(parents=True)
        (run / "results_2024-01-01T00-00-00.000000.json").write_text(
            json.dumps({"model_name": f"org/model{m}"}))
        for task in ("math_a", "math_b"):
            path = run / f"samples_{task}_2024-01-01T00-00-00.000000.jsonl"
            with open(path, "w") as fh:
                for d in range(docs):
                    row = dict(rows[d % len(rows)])
                    row["doc_id"], row["doc_hash"] = d, f"{task}-{d}"
                    row["exact_match"] = float((d * 7 + m) % 3 == 0)
                    fh.write(json.dumps(row) + "\n")
            total += path.stat().st_size
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--fit-only", action="store_true",
                        help="only the whole evalcert fit of the wide file (case 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wide = Path(tmp) / "wide.parquet"
        make_wide(wide, args.size)
        report_fit(wide, args.size)
        if args.fit_only:
            return
        size_mb = wide.stat().st_size / 2**20
        ref, ref_rss = measure("pyarrow.read_table", wide)
        got, rss = measure("read_scores", wide)
        print(f"wide Parquet {args.size} x {args.size} ({size_mb:.0f} MB): "
              f"pyarrow.read_table {ref:.2f} s ({ref_rss:.0f} MB peak), read_scores "
              f"{got:.2f} s ({rss:.0f} MB peak): ratio {got / ref:.2f}x (target <= 3x)")
        wide.unlink()
        logs = Path(tmp) / "logs"
        nbytes = make_lm_eval(logs, args.models, args.docs)
        ref, ref_rss = measure("pandas.read_json", logs)
        got, rss = measure("read_lm_eval", logs)
        cells = args.models * 2 * args.docs
        print(f"lm-eval logs, {args.models} models x 2 tasks x {args.docs} docs "
              f"({nbytes / 2**20:.0f} MB, {cells} cells): pandas.read_json(lines=True) "
              f"{ref:.2f} s ({ref_rss:.0f} MB peak), read_lm_eval {got:.2f} s ({rss:.0f} MB "
              f"peak): speed-up {ref / got:.2f}x (target >= 2x)")


if __name__ == "__main__":
    main()
