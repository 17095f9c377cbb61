"""Benchmark of the population statements (issue 25, item 2). A script, not a test.

Prints CPU seconds and ratios against a reference run in the same process:

* M=1 bootstrap: multinomial draws over the distinct joint patterns and the vectorised
  integer closed form (:func:`evalcert.logic.population.m1_thresholds`) against the per-resample ``alarm_threshold`` loop of
  :func:`evalcert.logic.estimates.bootstrap_t` on the same log;
* M=2 / full-joint refits: each resample refitted exactly with the warm start from the full
  sample's item-level key against the same refit without it (``alarm_full``/``alarm_m2``
  as the audit calls them);
* the exact (Clopper-Pearson) bound, for scale;

and the peak RSS. Simulated logs (:func:`evalcert.logic.simulate.simulate_decisions`).
Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_population.py [--quick]``.
"""

from __future__ import annotations

import resource
import sys
import time

import numpy as np

from evalcert.logic.alarms import alarm_threshold
from evalcert.logic.estimates import bootstrap_t
from evalcert.logic.population import _full_split, _refit, bootstrap_upper, exact_upper
from evalcert.logic.simulate import simulate_decisions


def cpu(fn):
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


def main(quick: bool = False) -> None:
    n_boot, q_big = (200, 20_000) if quick else (1000, 100_000)
    dec = simulate_decisions(q_big, 3, 5, seed=0)
    t1 = alarm_threshold(dec.label_counts())
    _, ref = cpu(lambda: bootstrap_t(dec, n_boot, 0))
    _, new = cpu(lambda: bootstrap_upper(dec, "1", t1, resamples=n_boot))
    print(f"M=1 bootstrap, Q={q_big:,}, N=5, B={n_boot}: closed form {new:.2f} CPU-s, "
          f"per-resample loop {ref:.2f} CPU-s, ratio {ref / new:.1f}x")
    _, ex = cpu(lambda: exact_upper(dec.label_counts()))
    print(f"exact bound (Clopper-Pearson), same log: {ex * 1000:.1f} CPU-ms")
    q, n_refit = (300, 4) if quick else (1000, 8)
    small = simulate_decisions(q, 3, 5, seed=1)
    pats, split = _full_split(small, "highs")
    rng = np.random.default_rng(0)
    for m in ("full", "2"):
        warm = cold = 0.0
        fallbacks = 0
        for _ in range(n_refit):
            cells = rng.multinomial(q, (split / q).ravel()).reshape(split.shape)
            (a, _, fa), c = cpu(lambda: _refit(cells, pats, small.labels, small.graders, m,
                                              "highs", False))
            (b, _, fb), w = cpu(lambda: _refit(cells, pats, small.labels, small.graders, m,
                                              "highs", True))
            assert a == b, (a, b)
            warm, cold, fallbacks = warm + w, cold + c, fallbacks + fa + fb
        print(f"M={m} refits, Q={q}, N=5, {n_refit} resamples: warm {warm:.2f} CPU-s, cold "
              f"{cold:.2f} CPU-s, ratio cold/warm {cold / warm:.2f} ({fallbacks} refits "
              "redone by CBC after a HiGHS 'Solve error')")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main("--quick" in sys.argv)
