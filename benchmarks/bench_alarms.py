"""Benchmark of the exact no-knowledge alarms (issue 3). A script, not a test.

Prints one table: case, measured median time, target, ratio target/measured (> 1 meets
the target). ILP rows compare HiGHS and CBC, fresh model vs a model built once and
re-solved. Run: ``python benchmarks/bench_alarms.py``.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import numpy as np

from evalcert.datasets.mtbench import paper_summaries
from evalcert.logic import alarm, alarm_threshold, consistent_ilp, label_counts, minmax_curve
from evalcert.logic.ilp import M1Model, best_min_accuracy_ilp, solve_model
from evalcert.results import format_table


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def random_counts(n_items: int, n_labels: int, n_graders: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    data = {}
    for i in range(n_graders):
        c = rng.multinomial(n_items, rng.dirichlet(np.ones(n_labels)))
        data[f"g{i}"] = {f"l{k}": int(v) for k, v in enumerate(c)}
    return label_counts(data)


def main() -> None:
    mt = paper_summaries()
    big = random_counts(1000, 3, 10)
    huge = random_counts(10**6, 3, 10)
    rows = []

    def add(case: str, seconds: float, target: float | None) -> None:
        ratio = f"{target / seconds:.1f}x" if target else "-"
        rows.append([case, f"{seconds * 1e3:.3f} ms", f"{target * 1e3:.0f} ms" if target
                     else "-", ratio])

    add("MT-Bench T only (closed form)", median_seconds(lambda: alarm_threshold(mt), 200), 0.010)
    add("MT-Bench T + argmax keys + binding",
        median_seconds(lambda: alarm(mt, "0.5", curves=False), 200), 0.010)
    add("MT-Bench full alarm with curves", median_seconds(lambda: alarm(mt, "0.5"), 50), 0.010)
    add("curve Q=1000 R=3 N=10 (501501 keys)", median_seconds(lambda: minmax_curve(big), 5), 1.0)
    add("alarm Q=1000 R=3 N=10 with curves", median_seconds(lambda: alarm(big, "0.5"), 5), 1.0)
    add("T only Q=10^6 R=3 N=10", median_seconds(lambda: alarm_threshold(huge), 50), None)
    key = (8, 9, 8)
    for solver in ("highs", "cbc"):
        add(f"ILP best-min at key, fresh model ({solver})",
            median_seconds(lambda: best_min_accuracy_ilp(mt, key, solver=solver), 20), None)
        model = M1Model(mt, key=key)
        model.prob += model.prob.add_variable("t", 0, 1)
        add(f"ILP re-solve of one built model ({solver})",
            median_seconds(lambda: solve_model(model, solver), 20), None)
        add(f"ILP whole-QC feasibility at x=2/3 ({solver})",
            median_seconds(lambda: consistent_ilp(mt, threshold="2/3", solver=solver), 20), None)
    print("reference: the best public implementation needs ~144 s for one MT-Bench key")
    print(f"T(MT-Bench) = {alarm_threshold(mt)}, T(Q=10^6 random) = {alarm_threshold(huge)}")
    print(format_table(rows, ["case", "median", "target", "target/measured"]))


if __name__ == "__main__":
    main()
