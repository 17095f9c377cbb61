"""Start-up time of ``evalcert --help`` and of every verb's ``--help`` (issue 10, item 10).

Each command runs in a fresh interpreter; the reference, ``python -c "import numpy"``,
runs in the same loop, so the printed ratios hold on a loaded machine too. Target: every
ratio <= 3. Best of N wall-clock times and each command's peak RSS (from ``wait4``).

    python benchmarks/bench_cli.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

REFERENCE = [sys.executable, "-c", "import numpy"]
HELPS = [[], ["fit"], ["gini"], ["demo"], ["audit"], ["curl"], ["experiment"],
         ["experiment", "sparse-recovery"], ["irt"], ["irt", "fit"], ["irt", "holdout"],
         ["bench"]]


def run_once(argv: list[str]) -> tuple[float, float]:
    """Wall-clock seconds and peak RSS (MB) of one run of ``argv``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.read().decode()}")
    proc.stderr.close()
    return elapsed, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per command (best of N)")
    args = parser.parse_args()
    commands = {"python -c 'import numpy'": REFERENCE}
    for verb in HELPS:
        commands[" ".join(["evalcert", *verb, "--help"])] = [sys.executable, "-m", "evalcert",
                                                             *verb, "--help"]
    best = {name: (float("inf"), 0.0) for name in commands}
    for _ in range(args.repeat):  # interleaved, so load changes hit every command alike
        for name, argv in commands.items():
            t, rss = run_once(argv)
            best[name] = (min(best[name][0], t), max(best[name][1], rss))
    ref = best["python -c 'import numpy'"][0]
    width = max(map(len, commands))
    print(f"best of {args.repeat}, load average {os.getloadavg()[0]:.1f}")
    print(f"{'command':<{width}}  {'seconds':>8}  {'vs numpy':>8}  {'peak RSS':>9}")
    worst = 0.0
    for name, (t, rss) in best.items():
        if name.startswith("evalcert"):
            worst = max(worst, t / ref)
        print(f"{name:<{width}}  {t:8.3f}  {t / ref:7.2f}x  {rss:6.0f} MB")
    verdict = "met" if worst <= 3 else "NOT met"
    print(f"\nworst evalcert ratio {worst:.2f}x (target <= 3x): {verdict}")


if __name__ == "__main__":
    main()
