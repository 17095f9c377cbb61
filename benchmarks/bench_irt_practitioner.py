"""Speed of the practitioner tools: scoring, anchors, 3PL and graded fits (issue 12).

Each line prints evalcert's time beside a reference measured in the same run:

* scoring (WLE, EAP) of new models on frozen 2PL items: vectorised grid +
  bisection vs a plain per-model ``scipy.optimize.brentq`` / ``scipy.integrate.quad``
  loop (the reference the tests cross-check against);
* 3PL and graded marginal fits: time per fit, and the time of one exact
  gradient vs one central-difference gradient (what a derivative-free fit
  would pay per step);
* anchors: one tinyBenchmarks evaluation (calibration fit + selection + scoring).

At the end, each tool's hot kernel is timed against a floor measured in the same
run (``irt_kernels``; best of 5, wall): the scoring calls (WLE, EAP, each size)
against the least work of a log-likelihood on the nodes per model they evaluate
(one ``exp`` and one ``log`` pass over the items x nodes table and over models x
nodes, no mask product as nothing is missing); the 3PL and graded objectives (one
marginal log-likelihood and its exact gradient, 61 nodes) and the anchors'
calibration E-step (2PL MML on the 300 x 1000 matrix, at the starting values)
against one ``exp`` and one ``log`` pass over the observed cells x nodes.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_irt_practitioner.py``; peak RSS
and the load average are printed at the end.
"""

from __future__ import annotations

import os
import resource
import sys
import time

import numpy as np
from scipy.integrate import quad
from scipy.optimize import brentq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_irt import load_line  # noqa: E402
from irt_kernels import (KERNEL_HEADERS, binary_estep, kernel_row,  # noqa: E402
                         objective_kernel, scoring_kernel)

from evalcert.irt import GradedResponse, ThreePL, TwoPL  # noqa: E402
from evalcert.irt.anchors import evaluate_anchors  # noqa: E402
from evalcert.irt.information import item_parameters  # noqa: E402
from evalcert.irt.estimation.mml_direct import MarginalData  # noqa: E402
from evalcert.irt.scoring import score_abilities  # noqa: E402
from evalcert.results import format_table  # noqa: E402


def _timed(fn, repeat: int = 3):
    best, out = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def _simulate(n, m, seed=0):
    rng = np.random.default_rng(seed)
    theta, b, a = rng.normal(size=n), rng.normal(size=m), rng.lognormal(0, 0.3, m)
    p = 1 / (1 + np.exp(-a * (theta[:, None] - b)))
    return (rng.random(p.shape) < p).astype(float)


def _reference_scores(p, Y, mu, sd):
    """Per-model root finding (WLE) and quadrature (EAP), as a user would write them."""
    wle, eap = [], []
    for y in Y:
        def parts(t):
            s = 1 / (1 + np.exp(-p.a * (t - p.b)))
            d1 = p.a * s * (1 - s)
            return s, d1, d1 * p.a * (1 - 2 * s)

        def warm(t):
            P, d1, d2 = parts(t)
            info = np.sum(d1 ** 2 / (P * (1 - P)))
            return np.sum(d1 * (y - P) / (P * (1 - P))) + np.sum(d1 * d2 / (P * (1 - P))) / (
                2 * info)

        wle.append(brentq(warm, -8, 8, xtol=1e-12))

        def logpost(t):
            P = parts(t)[0]
            return np.sum(y * np.log(P) + (1 - y) * np.log(1 - P)) - 0.5 * ((t - mu) / sd) ** 2

        top = logpost(wle[-1])                    # scale: quad's absolute tolerance is 1.5e-8

        def post(t, k):
            return t ** k * np.exp(logpost(t) - top)

        z = quad(post, -10, 10, args=(0,))[0]
        eap.append(quad(post, -10, 10, args=(1,))[0] / z)
    return np.array(wle), np.array(eap)


def main() -> None:
    load, kernels = os.getloadavg(), []
    print("scoring new models on frozen 2PL items (vectorised vs per-model scipy loop):")
    for n_new, m in ((200, 100), (1000, 200)):
        Y = _simulate(2000 + n_new, m)
        p = item_parameters(TwoPL(method="mml").fit(Y[:2000]))
        new, O = Y[2000:], np.ones((n_new, m), bool)
        t_w, (wle, _) = _timed(lambda: score_abilities(p, new, O, method="wle"))
        t_e, (eap, _) = _timed(lambda: score_abilities(p, new, O, method="eap"))
        t_ref, (ref_w, ref_e) = _timed(lambda: _reference_scores(p, new, 0.0, 1.0), repeat=1)
        print(f"  {n_new} models x {m} items: wle {t_w:.3f} s, eap {t_e:.3f} s; reference "
              f"(brentq + quad) {t_ref:.2f} s -> {t_ref / (t_w + t_e):.0f}x; max |diff| wle "
              f"{np.max(np.abs(wle - ref_w)):.1e}, eap {np.max(np.abs(eap - ref_e)):.1e}")
        kernels += [kernel_row(f"{n_new} x {m} new", scoring_kernel(p, new, method))
                    for method in ("wle", "eap")]

    print("marginal fits (exact gradient vs a central-difference gradient):")
    for name, est, Y, K in (
            ("3pl", ThreePL(), _simulate(2000, 20, 1), 2),
            ("graded", GradedResponse(), 1 + (_simulate(1000, 10, 2) + _simulate(1000, 10, 3)),
             3)):
        t_fit, fitted = _timed(lambda: est.fit(Y), repeat=1)
        m = Y.shape[1]
        md = MarginalData((Y - Y.min()).astype(int), K, 61)
        x = np.random.default_rng(0).normal(0.5, 0.1, fitted.n_parameters_)
        f = (lambda v: est._objective(v, md, m)) if name == "3pl" else (
            lambda v: est._objective(v, md, m, K))
        t_grad, _ = _timed(lambda: f(x))
        kernels.append(kernel_row(f"{name} {Y.shape[0]} x {m}", objective_kernel(
            lambda: f(x), np.isfinite(Y), 61, f"{name} log-lik + gradient, 61 nodes")))
        t_num, _ = _timed(lambda: [f(x + e)[0] - f(x - e)[0] for e in 1e-6 * np.eye(x.size)],
                          repeat=1)
        print(f"  {name} {Y.shape[0]} x {m}: fit {t_fit:.2f} s ({fitted.n_iter_} L-BFGS steps); "
              f"one exact gradient {t_grad * 1e3:.1f} ms vs finite differences "
              f"{t_num * 1e3:.0f} ms -> {t_num / t_grad:.0f}x")

    print("tinyBenchmarks anchors (2PL mml, 30 anchors, 20% held out):")
    Y = _simulate(300, 1000, 3)
    for selection in ("information", "cluster", "random"):
        t, res = _timed(lambda: evaluate_anchors(TwoPL(method="mml"), Y, 30, selection,
                                                 seed=0), repeat=1)
        print(f"  {selection:11s} {t:.2f} s; MAE irt {res.mae['irt']:.4f}, anchor mean "
              f"{res.mae['anchor_mean']:.4f}")
    kernels.append(kernel_row("anchors 300 x 1000", binary_estep(Y)))
    print(format_table(kernels, KERNEL_HEADERS))
    print(load_line(load))
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
