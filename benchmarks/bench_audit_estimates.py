"""``audit --estimates ds`` at scale: where the time goes, step by step (issue 21, item 3).

A pairwise judge log of N rows (N/3 comparisons, 3 judges) is written to a temporary
folder, then each step of ``run_audit(..., estimators=("ds",))`` is timed in this process:
reading the log into Decisions, the M=1 alarm, crowd-kit's Dawid-Skene fit, and evalcert's
mapping of its labels back onto the items. The reference for that last step is the
per-item Python loop it replaced (``labels[item]`` for every item), run on the same
labels in the same process, so the printed ratio holds on a loaded machine too. Peak RSS
is the process's VmHWM.

    python benchmarks/bench_audit_estimates.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd


def write_log(path: Path, rows: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    n = rows // 3
    truth = rng.integers(0, 3, n)
    winners = np.array(["model_a", "model_b", "tie"])
    frames = []
    for j in range(3):
        said = np.where(rng.random(n) < 0.7, truth, rng.integers(0, 3, n))
        frames.append(pd.DataFrame({"question_id": np.arange(n), "model_a": "m1",
                                    "model_b": "m2", "winner": winners[said],
                                    "judge": f"j{j}"}))
    pd.concat(frames).to_csv(path, index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the log")
    args = parser.parse_args()
    from crowdkit.aggregation import DawidSkene

    from evalcert.io.decisions import load_audit_input
    from evalcert.logic import alarm
    from evalcert.logic.estimates import _long
    from evalcert.memory import format_bytes, peak_rss

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pairwise.csv"
        write_log(path, args.rows)
        times = {}
        start = time.perf_counter()
        data = load_audit_input(path)
        times["read the log into Decisions"] = time.perf_counter() - start
    start = time.perf_counter()
    result = alarm(data, Fraction(1, 2), curves=False)
    times["M=1 alarm (closed form)"] = time.perf_counter() - start
    start = time.perf_counter()
    labels = DawidSkene(n_iter=100).fit(_long(data)).labels_
    times["Dawid-Skene fit (crowd-kit)"] = time.perf_counter() - start
    start = time.perf_counter()
    new = pd.Index(data.labels).get_indexer(
        labels.reindex(pd.Index(data.items, dtype=object)).to_numpy(dtype=object))
    times["labels -> items (evalcert, vectorised)"] = fast = time.perf_counter() - start
    index = {lab: t for t, lab in enumerate(data.labels)}
    start = time.perf_counter()
    old = np.array([index[labels[item]] for item in data.items], dtype=np.int64)
    slow = time.perf_counter() - start
    assert np.array_equal(old, new)
    print(f"{args.rows:,} rows, {len(data.items):,} items, {len(data.graders)} judges; "
          f"T = {result.T}")
    for step, seconds in times.items():
        print(f"  {step:<42} {seconds:8.2f} s")
    print(f"  {'labels -> items, the per-item loop it replaced':<42} {slow:8.2f} s "
          f"(ratio {slow / max(fast, 1e-9):.0f}x)")
    print(f"peak RSS {format_bytes(peak_rss())}")


if __name__ == "__main__":
    main()
