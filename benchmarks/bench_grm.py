"""The graded response model against mirt (PyPI): speed, likelihood, estimates, E-step floor.

Issue 26 item 4 ("speed where mirt is ahead"). Each fit runs in its own forked
child, timed inside it (best of ``--repeat`` after an untimed warm-up,
``bench_irt.run_in_child``); the ratio is evalcert's CPU seconds over mirt's,
both measured by this script in the same run. The load average of the machine
is printed with the tables.

- ``speed``: simulated 10-point judge scores, 60 models x 400 items
  (``bench_irt_models.simulate_grm``: slopes log-normal(0, 0.3), nine
  thresholds per item N(0, 1.5^2) sorted, so most items leave a middle category
  unused), evalcert's ``GradedResponse(standard_errors=False)`` (its defaults:
  61 nodes on [-6, 6], log-normal slope prior sd 0.5, intercepts N(0, 10^2))
  against ``mirt.fit_mirt(model="GRM", compute_standard_errors=False)`` (its
  defaults: 21 Gauss-Hermite nodes, tol 1e-4, no priors). The models differ in
  the priors and in the grid; with 400 items each model's posterior is narrower
  than a node spacing, so each library's marginal log-likelihood is that of its
  own grid (a higher one is not "more accurate" here, only higher).
- ``same optimum``: pure ML on both sides (``slope_prior=0,
  threshold_prior=0``; mirt without priors), 61 nodes each, on a shape where
  both quadratures are exact to many digits (2,000 models x 10 items, 5
  categories, all used): the largest absolute difference of slopes and
  thresholds, and the log-likelihoods.
- ``kernel``: the GRM E-step at the fitted parameters against one ``exp`` and
  one ``log`` pass over the cells x nodes it evaluates (``irt_kernels``).

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_grm.py --peers DIR`` (DIR
holds ``mirt``: ``pip install --target DIR --no-deps mirt``; without it the
mirt rows say why).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_irt import child_arguments, load_line, run_in_child  # noqa: E402
from bench_irt_models import simulate_grm  # noqa: E402
from irt_kernels import KERNEL_HEADERS, graded_estep, kernel_row  # noqa: E402

from evalcert.results import format_table  # noqa: E402

SPEED_HEADERS = ["data", "runner", "seconds", "CPU s", "CPU vs mirt", "loglik", "EM cycles",
                 "corr(a, truth)", "peak RSS MiB", "status"]
SAME_HEADERS = ["data", "runner", "CPU s", "loglik", "max |a - mirt a|",
                "max |b - mirt b|", "status"]


def _mine(**options):
    def run(Y):
        from evalcert.irt import GradedResponse
        est = GradedResponse(standard_errors=False, **options).fit(Y)
        return np.concatenate([[est.loglik_, est.result_.n_iter], est.discriminations_,
                               est.thresholds_.ravel()])
    return run


def _mirt(**options):
    def run(Y):
        import mirt
        res = mirt.fit_mirt(Y.astype(int), model="GRM", compute_standard_errors=False,
                            **options)
        co = res.coef()
        b = co[[c for c in co.columns if c.startswith("thresholds")]].to_numpy(float)
        return np.concatenate([[res.log_likelihood, res.n_iterations],
                               co["discrimination"].to_numpy(float), b.ravel()])
    return run


def simulate_all_used(n: int = 2000, m: int = 10, K: int = 5, seed: int = 1):
    rng = np.random.default_rng(seed)
    theta, a = rng.normal(size=n), rng.lognormal(0, 0.3, m)
    cuts = np.sort(rng.normal(size=(m, K - 1)), axis=1)
    S = 1 / (1 + np.exp(-a[None, :, None] * (theta[:, None, None] - cuts[None])))
    return (rng.random((n, m, 1)) < S).sum(2).astype(float)


def run_speed(args) -> tuple[list, np.ndarray | None]:
    Y, a = simulate_grm()
    runs = {"evalcert GradedResponse": _mine(), "mirt (PyPI) GRM": _mirt()}
    rows, cpu, fitted = [], {}, None
    for name, run in runs.items():
        status, took, out, rss, seconds = run_in_child(run, Y, args.repeat, args.timeout,
                                                       args.peers)
        cpu[name] = seconds if status == "ok" else np.nan
        if status == "ok":
            m = Y.shape[1]
            corr = float(np.corrcoef(out[2:2 + m], a)[0, 1])
            rows.append(["grm 60x400 K=10", name, took, seconds, np.nan, out[0], int(out[1]),
                         corr, rss, status])
            if name.startswith("evalcert"):
                fitted = out
        else:
            rows.append(["grm 60x400 K=10", name, took, seconds, np.nan, np.nan, np.nan,
                         np.nan, rss, status])
        print(f"speed {name:28s} {status}", file=sys.stderr, flush=True)
    for row in rows:
        row[4] = row[3] / cpu["mirt (PyPI) GRM"]
    return [tuple(r) for r in rows], fitted


def run_same(args) -> list:
    Y = simulate_all_used()
    m, K = Y.shape[1], int(Y.max()) + 1
    runs = {"evalcert GradedResponse pure ML": _mine(slope_prior=0, threshold_prior=0,
                                                     tol=1e-7),
            "mirt (PyPI) GRM, 61 nodes": _mirt(n_quadpts=61, tol=1e-6, max_iter=5000)}
    outs, rows = {}, []
    for name, run in runs.items():
        status, took, out, rss, seconds = run_in_child(run, Y, 1, args.timeout, args.peers)
        outs[name] = (status, seconds, out)
        print(f"same {name:28s} {status}", file=sys.stderr, flush=True)
    ref = outs["mirt (PyPI) GRM, 61 nodes"]
    for name, (status, seconds, out) in outs.items():
        da = db = np.nan
        if status == "ok" and ref[0] == "ok":
            da = float(np.max(np.abs(out[2:2 + m] - ref[2][2:2 + m])))
            db = float(np.max(np.abs(out[2 + m:] - ref[2][2 + m:])))
        rows.append((f"{Y.shape[0]}x{m} K={K}", name, seconds,
                     out[0] if status == "ok" else np.nan, da, db, status))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    child_arguments(parser, repeat=3, timeout=300.0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    load = os.getloadavg()
    speed, fitted = run_speed(args)
    print(format_table(speed, SPEED_HEADERS))
    print()
    print(format_table(run_same(args), SAME_HEADERS))
    print()
    Y, _ = simulate_grm()
    m, K = Y.shape[1], 10
    a = d = None
    if fitted is not None:                    # the E-step at the fitted parameters
        a = fitted[2:2 + m]
        d = -fitted[2 + m:].reshape(m, K - 1) * a[:, None]
        d = np.maximum(d, -30.0)
    print(format_table([kernel_row("grm 60x400 K=10",
                                   graded_estep(Y.astype(int), K, a=a, d=d))], KERNEL_HEADERS))
    print("\n" + load_line(load))


if __name__ == "__main__":
    main()
