"""Benchmark of the exact no-knowledge alarms (issues 3 and 11). A script, not a test.

Prints one table: case, measured median time, target, ratio target/measured (> 1 meets
the target), and peak RSS after the case. ILP rows compare HiGHS and CBC, fresh model vs a
model built once and re-solved. Real size (issue 11): the M=1 curve over 475,800 keys
(Q = 974, R = 3), and M=2 and the full joint on a simulated log with Q = 1000, R = 3, N = 5
(:mod:`evalcert.logic.simulate`, seed 0) with the M=1 time on the same log as the
reference. Run: ``python benchmarks/bench_alarms.py [--quick]`` (``--quick`` skips the
real-size ILP rows).

``--sweep`` (issue 11, item 3) runs instead, per simulated log, the M=1 alarm (reference),
M=2 and the full joint, and prints T, the number of MILPs, wall and CPU seconds and the
slowest single solve: seeds 0-9 at Q = 1000, R = 3, N = 5 with varied grader accuracies and
label balance, plus 200-item, 4-grader logs with 10% of decisions skipped (M=1 and M=2 on
the items everyone decided, ``on_missing="drop"``; the full joint keeps every item and
judges each grader on its own, ``on_missing="keep"``). ``--sweep --levels`` adds the old
whole-Q-complex level search (``search="levels"``) as the in-process reference
(slow: minutes per case); ``--skip-only`` runs only the skipped-items logs (with
``--levels``: the level search, the previous path for them, beside the key search, both with
binding pairs at the witness key). Example:
``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_alarms.py --sweep``.

``--issue25 [--limit=120] [--only=keep]`` (issue 25, item 4) prints, per size the issue
names (R = 6 and R = 10 labels, half credit, Q = 100,000 included), the target, the CPU
seconds and peak RSS of one ``evalcert audit FILE --json`` process on a CSV of a simulated
log with correlated judges (:func:`correlated_log`), their ratio, and the M=1 audit of the
same file as the in-run reference; a run past the time limit prints its proven bounds
``[lo, hi]``.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import statistics
import sys
import time
from typing import Callable

import numpy as np

from evalcert.datasets.mtbench import paper_summaries
from evalcert.logic import alarm, alarm_threshold, consistent_ilp, label_counts, minmax_curve
from evalcert.logic.ilp import M1Model, best_min_accuracy_ilp, solve_model
from evalcert.logic.joint import alarm_full
from evalcert.logic.pairs import alarm_m2
from evalcert.logic.simulate import simulate_decisions
from evalcert.results import format_table


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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


#: (seed, acc_low, acc_high, alpha) of the Q = 1000, R = 3, N = 5 sweep
SWEEP = [(0, 0.55, 0.85, 3.0), (1, 0.55, 0.85, 3.0), (2, 0.55, 0.85, 3.0),
         (3, 0.4, 0.7, 3.0), (4, 0.4, 0.7, 0.7), (5, 0.7, 0.95, 3.0), (6, 0.7, 0.95, 0.7),
         (7, 0.55, 0.85, 0.7), (8, 0.35, 0.6, 3.0), (9, 0.6, 0.9, 1.5)]


def timed(fn: Callable[[], object]) -> tuple[object, float, float, float]:
    """(result, wall s, CPU s, slowest single HiGHS solve in CPU s) of one call."""
    from evalcert.logic import exact, ilp

    slowest = [0.0]
    solve, run_solver = ilp.HighsModel.solve, exact.run_solver

    def track(fn: Callable) -> Callable:
        def tracked(*args, **kwargs):
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                slowest[0] = max(slowest[0], time.process_time() - start)
        return tracked

    ilp.HighsModel.solve, exact.run_solver = track(solve), track(run_solver)
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn()
        return out, time.perf_counter() - wall, time.process_time() - cpu, slowest[0]
    finally:
        ilp.HighsModel.solve, exact.run_solver = solve, run_solver


def sweep(levels: bool) -> None:
    """The issue-11 sweep: one row per (log, method)."""
    from fractions import Fraction

    from evalcert.logic.exact import exact_alarm
    from evalcert.logic.splits import _joint_builder, joint_start

    cases = [] if "--skip-only" in sys.argv else [
        (f"Q=1000 N=5 seed={s} acc={lo}-{hi} alpha={a}",
         simulate_decisions(1000, 3, 5, seed=s, acc_low=lo, acc_high=hi, alpha=a), None)
        for s, lo, hi, a in SWEEP]
    cases += [] if "--no-skip" in sys.argv else [(f"Q=200 N=4 skip=0.1 seed={s}",
               simulate_decisions(200, 3, 4, seed=s, skip=0.1, on_missing="drop"),
               simulate_decisions(200, 3, 4, seed=s, skip=0.1, on_missing="keep"))
              for s in range(3)]
    rows = []
    for name, dec, kept in cases:
        m1, w1, c1, _ = timed(lambda: alarm(dec, "0.5", curves=False))
        runs = [("M=1", m1, w1, c1, 0.0, len(dec.items))]
        res, w, c, slow = timed(lambda: alarm_m2(dec, "0.5"))
        runs.append(("M=2", res, w, c, slow, len(dec.items)))
        full_dec = kept if kept is not None else dec
        res, w, c, slow = timed(lambda: alarm_full(full_dec, "0.5"))
        runs.append(("full", res, w, c, slow, len(full_dec.items)))
        if levels:  # the previous search over levels, same start point
            top = m1.T if kept is None else Fraction(1)
            res, w, c, slow = timed(lambda: exact_alarm(
                _joint_builder(full_dec), full_dec, "0.5", upper=top, m="full",
                method="full-joint ILP", search="levels", max_checks=0,
                max_binding_keys=0 if kept is None else 3,
                start=joint_start(full_dec, top, "highs")))
            runs.append(("full (levels)", res, w, c, slow, len(full_dec.items)))
        for method, res, w, c, slow, q in runs:
            rows.append([name, method, q, str(res.T), getattr(res, "n_solves", 0) or 0,
                         f"{w:.2f}", f"{c:.2f}", f"{slow:.2f}", f"{w / max(w1, 1e-9):,.0f}x",
                         f"{peak_mb():.0f} MB"])
        print(format_table(rows[-len(runs):], HEAD), flush=True)
    print("\nall cases:")
    print(format_table(rows, HEAD))
    worst = max((r for r in rows if r[1] != "M=1"), key=lambda r: float(r[5]))
    print(f"worst wall: {worst[0]} {worst[1]}: {worst[5]} s wall, {worst[6]} CPU-s "
          f"(target: under 60 s on 2 cores)")


HEAD = ["log", "method", "items", "T", "MILPs", "wall s", "CPU s", "slowest solve CPU s",
        "wall / M=1", "peak RSS"]


def correlated_log(n_items: int, n_labels: int, n_graders: int, *, seed: int = 0,
                   items_with_skips: float = 0.0):
    """Decisions of judges whose errors are correlated: each item is hard with probability
    0.3 (then every judge is right with probability 0.45, else 0.9) and a wrong judge picks
    the item's shared decoy label with probability 0.7; ``items_with_skips`` of the items
    miss one or two judges' decisions (kept as skipped)."""
    from evalcert.logic.summaries import Decisions

    rng = np.random.default_rng(seed)
    truth = rng.choice(n_labels, size=n_items, p=rng.dirichlet(np.full(n_labels, 3.0)))
    decoy = (truth + rng.integers(1, n_labels, size=n_items)) % n_labels
    hard = rng.random(n_items) < 0.3
    codes = np.empty((n_items, n_graders), dtype=np.int64)
    for i in range(n_graders):
        right = rng.random(n_items) < np.where(hard, 0.45, 0.9) * rng.uniform(0.9, 1.0)
        other = (truth + rng.integers(1, n_labels, size=n_items)) % n_labels
        wrong = np.where(rng.random(n_items) < 0.7, decoy, other)
        codes[:, i] = np.where(right, truth, wrong)
    skip = np.flatnonzero(rng.random(n_items) < items_with_skips)
    for k in skip:
        codes[k, rng.choice(n_graders, size=rng.integers(1, 3), replace=False)] = -1
    return Decisions(tuple(f"q{k}" for k in range(n_items)),
                     tuple(f"judge{i}" for i in range(n_graders)),
                     tuple(f"l{t}" for t in range(n_labels)), tuple(map(tuple, codes.tolist())))


def write_log(dec, path: str) -> None:
    """A simulated log as the long CSV (item, grader, label) a user would hand the CLI;
    skipped decisions are absent rows."""
    import csv

    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["item", "grader", "label"])
        for item, row in zip(dec.items, dec.codes):
            out.writerows([item, g, dec.labels[c]] for g, c in zip(dec.graders, row) if c >= 0)


def audit_process(args: list[str]) -> tuple[float, float, float]:
    """Run ``python -m evalcert audit ARGS`` as its own process: (CPU s of that process and
    its threads, wall s, its peak RSS in MB), from ``os.wait4``'s resource usage."""
    import subprocess

    wall = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "evalcert", "audit", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - wall
    if proc.returncode != 0:
        raise RuntimeError(f"evalcert audit {' '.join(args)} exited {proc.returncode}: "
                           f"{err.decode()[-400:]}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024


#: issue 25's sizes: (case, Q, R, N, items with skips, extra audit flags, target CPU-s,
#: before). One row per line so that rows added on other branches merge line by line.
ISSUE25 = [
    ("keep Q=1000 N=5 10% skips", 1000, 3, 5, 0.10, ["--m", "full", "--on-missing", "keep"],
     30, "no answer in 600 s"),
    ("keep Q=1000 N=5 30% skips", 1000, 3, 5, 0.30, ["--m", "full", "--on-missing", "keep"],
     30, "minutes"),
    ("keep Q=5000 N=5 10% skips", 5000, 3, 5, 0.10, ["--m", "full", "--on-missing", "keep"],
     120, "minutes"),
    ("keep Q=5000 N=5 30% skips", 5000, 3, 5, 0.30, ["--m", "full", "--on-missing", "keep"],
     120, "-"),
    ("full joint N=8 Q=1000", 1000, 3, 8, 0.0, ["--m", "full"], 10, "42 (last session 11.2-12.1)"),
    ("full joint R=4 N=5 Q=1000", 1000, 4, 5, 0.0, ["--m", "full"], 5, "12.5 (last 5.2)"),
    ("M=2 R=6 N=5 Q=1000", 1000, 6, 5, 0.0, ["--m", "2"], 30, "no answer in 300 s"),
    ("full joint R=6 N=5 Q=1000", 1000, 6, 5, 0.0, ["--m", "full"], 30, "60 CPU-s"),
    ("M=2 R=10 N=5 Q=1000", 1000, 10, 5, 0.0, ["--m", "2"], None, "no answer in 300 s"),
    ("full joint R=10 N=5 Q=1000", 1000, 10, 5, 0.0, ["--m", "full"], None,
     "no answer in 300 s"),
    ("full joint ties half Q=300 N=5", 300, 3, 5, 0.0, ["--m", "full", "--ties", "half"], None,
     "13 CPU-s (level search)"),
    ("full joint Q=100000 R=3 N=5", 100_000, 3, 5, 0.0, ["--m", "full"], 60,
     "no answer in 300 s, 923 MB (last 17.8 s)"),
]


def issue25(limit: float) -> None:
    """The walls issue 25 asks for: each case is one ``evalcert audit FILE --json OUT
    --time-limit LIMIT`` process on a CSV of a simulated log with correlated judges
    (:func:`correlated_log`), as a user runs it (reading, M=1, the judge table's default
    columns, the exact alarm with attaining keys and binding pairs, writing); CPU s are that
    process's (HiGHS's threads included), peak RSS its own. A run stopped at the time
    limit prints the proven bounds ``[lo, hi]`` and does not meet its target. ``ratio`` =
    target / measured (> 1 meets it); ``before`` is the wall issue 25 (or the last session)
    measured on the same case. The M=1 audit of the same file is the in-run reference
    (``/ M=1``); each ``--on-missing keep`` case (skipped decisions kept,
    :class:`~evalcert.logic.missing.SkipKeySearch`) is followed by the same file with
    ``--on-missing drop`` (only the items every judge decided)."""
    import json
    import tempfile

    only = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--only=")]
    head = ["case", "T (or proven bounds)", "CPU s", "target CPU s", "target/measured",
            "wall s", "/ M=1 CPU", "MILPs", "before", "peak RSS"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, q, r, n, skips, flags, target, before in ISSUE25:
            if only and not any(o in name for o in only):
                continue
            dec = correlated_log(q, r, n, items_with_skips=skips)
            if "--ties" in flags:  # half credit needs a tie label
                dec = dataclasses.replace(dec, labels=(*dec.labels[:-1], "tie"))
            log = os.path.join(tmp, f"log_{len(rows)}.csv")
            write_log(dec, log)
            ref_flags = ["--on-missing", "drop"] if skips else []
            ref, _, _ = audit_process([log, "--m", "1", "--json", log + ".m1.json",
                                       "--no-progress", *ref_flags])
            out = log + ".json"
            cpu, wall, rss = audit_process([log, *flags, "--json", out, "--time-limit",
                                            f"{limit:g}", "--no-progress"])
            res = json.load(open(out))
            done = res.get("T_upper") is None
            t = res["T"] if done else f"[{res['T']}, {res['T_upper']}]"
            ratio = "-" if target is None else (f"{target / cpu:.2f}x" if done else
                                                f"< {target / cpu:.2f}x (stopped)")
            rows.append([name, t, f"{cpu:.1f}", "-" if target is None else f"{target}", ratio,
                         f"{wall:.1f}", f"{cpu / max(ref, 1e-9):.1f}x", res.get("n_solves"),
                         before, f"{rss:.0f} MB"])
            print(format_table(rows[-1:], head), flush=True)
            if skips:  # the same file with --on-missing drop: the items every judge decided
                cpu, wall, rss = audit_process([log, *flags[:2], "--on-missing", "drop",
                                                "--json", out, "--time-limit", f"{limit:g}",
                                                "--no-progress", "--force"])
                res = json.load(open(out))
                t = res["T"] if res.get("T_upper") is None else f"[{res['T']}, {res['T_upper']}]"
                rows.append(["  same file, --on-missing drop", t, f"{cpu:.1f}", "-", "-",
                             f"{wall:.1f}", f"{cpu / max(ref, 1e-9):.1f}x", res.get("n_solves"),
                             "-", f"{rss:.0f} MB"])
                print(format_table(rows[-1:], head), flush=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          f"(CPU s is each audit process's own; wall s depends on the load)")
    print(format_table(rows, head))


def main() -> None:
    if "--sweep" in sys.argv:
        sweep("--levels" in sys.argv)
        return
    if "--issue25" in sys.argv:
        limits = [float(a.split("=", 1)[1]) for a in sys.argv if a.startswith("--limit=")]
        issue25(limits[0] if limits else 120.0)
        return
    mt = paper_summaries()
    big = random_counts(1000, 3, 10)
    huge = random_counts(10**6, 3, 10)
    rows = []

    def add(case: str, seconds: float, target: float | None) -> None:
        ratio = f"{target / seconds:.1f}x" if target else "-"
        rows.append([case, f"{seconds * 1e3:.3f} ms", f"{target * 1e3:.0f} ms" if target
                     else "-", ratio, f"{peak_mb():.0f} MB"])

    fig7 = label_counts({"g0": {"a": 300, "b": 400, "c": 274},
                         "g1": {"a": 350, "b": 324, "c": 300},
                         "g2": {"a": 200, "b": 500, "c": 274}})
    add("M=1 curve Q=974 R=3 (475800 keys), first case", median_seconds(
        lambda: minmax_curve(fig7), 3), 1.0)

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
    if "--quick" not in sys.argv:
        dec = simulate_decisions(1000, 3, 5, seed=0)
        start = time.perf_counter()
        m1 = alarm(dec, "0.5", curves=False)
        t1 = time.perf_counter() - start
        add("M=1 alarm Q=1000 R=3 N=5 (reference)", t1, None)
        for name, fn in (("M=2", alarm_m2), ("full joint", alarm_full)):
            start = time.perf_counter()
            res = fn(dec, "0.5")
            sec = time.perf_counter() - start
            add(f"{name} alarm Q=1000 R=3 N=5: T = {res.T}, {res.n_solves} ILPs, "
                f"{sec / t1:,.0f}x M=1", sec, 60.0)
        print(f"Q=1000 R=3 N=5: T_1 = {m1.T}")
    print("reference: the best public implementation needs ~144 s for one MT-Bench key")
    print(f"T(MT-Bench) = {alarm_threshold(mt)}, T(Q=10^6 random) = {alarm_threshold(huge)}")
    print(format_table(rows, ["case", "median", "target", "target/measured", "peak RSS"]))


if __name__ == "__main__":
    main()
