"""
Choose a solver backend
=======================

The job: pick the solver for your fits. Every backend solves the same QP (Eq. 7 of
paper 000 in standard form) and every answer goes through the same certificate, so the
choice is about speed, accuracy and refits, never about trusting a solver's word: an
answer that fails evalcert's own KKT check raises ``CertificateError`` instead of being
returned.

Rules of thumb (measured in the README's benchmark tables): ``native`` (evalcert's
active-set method, exact to rounding, no CVXPY, cheap refits) by default;
``osqp-direct`` for the fastest single solves at moderate accuracy on large sparse
designs; through CVXPY, Clarabel when you want an interior-point method. This tutorial
measures it on your machine.
"""

# %%
# What is installed
# -----------------
import time

# CVXPY is imported up front so that its import time is not charged to a fit.
import cvxpy  # noqa: F401
import numpy as np

from evalcert import ClippedLinear, available_backends, demo_scores
from evalcert.benchmarking import (clipped_linear_family, performance_profiles,
                                   run_benchmark, select_backends)
from evalcert.errors import SolverError
from evalcert.plots.profiles import plot_performance_profile

print("backends:", ", ".join(available_backends()))

# %%
# Every backend on the demo
# -------------------------
# Same data, same model; the table shows the wall time of the first fit, the certified
# relative suboptimality bound (how far the objective can be above the optimum), and the
# largest difference in abilities from the native answer.
S = demo_scores()
reference = ClippedLinear(lam=1e-6, solver="native").fit(S)
print(f"{'backend':<12} {'seconds':>8} {'subopt.':>9} {'max |dtheta|':>13}")
for name in available_backends():
    start = time.perf_counter()
    try:
        model = ClippedLinear(lam=1e-6, solver=name).fit(S)
    except SolverError as err:  # refused: reported, never returned
        print(f"{name:<12} refused: {type(err).__name__}")
        continue
    seconds = time.perf_counter() - start
    cert = model.result_.certificate
    gap = np.abs(model.theta_ - reference.theta_).max()
    bound = cert.relative_suboptimality_bound
    print(f"{name:<12} {seconds:8.3f} {bound:9.1e} {gap:13.2e}")

# %%
# Refits
# ------
# Bootstrap intervals refit the same design hundreds of times with new cell weights.
# The native solver keeps its factorisations and the CVXPY backends their compiled
# problem, so a refit skips the setup of the first fit; the numbers show what that
# saves on this machine (every refit is certified anew).
rng = np.random.default_rng(0)
for name in ("native", "osqp-direct"):
    model = ClippedLinear(lam=1e-6, solver=name)
    times = []
    for _ in range(11):
        weights = rng.poisson(1.0, S.n_observed).astype(float) + 1e-3
        start = time.perf_counter()
        model.fit(S, sample_weight=weights)
        times.append(time.perf_counter() - start)
    refit = np.median(times[1:])
    print(f"{name}: first fit {times[0] * 1e3:.1f} ms, "
          f"median refit {refit * 1e3:.1f} ms")

# %%
# A small benchmark and its performance profile
# ----------------------------------------------
# ``run_benchmark`` runs problem families through every backend and certifies every
# answer itself. A performance profile plots, for each backend, the share of problems
# solved within a factor ``tau`` of the fastest backend: the height at ``tau = 1`` is how
# often it was fastest, the height at the right edge its success rate. ``evalcert bench
# --quick`` runs a larger grid and writes a Markdown report with these plots.
problems = clipped_linear_family([(10, 30), (20, 60)], seeds=[0], boxes=("all",))
backends = [b for b in select_backends(None)
            if b.name in ("native", "osqp-direct", "cvxpy-clarabel")]
bench = run_benchmark(problems, backends, ["default"], n_jobs=1, memory=False,
                      progress=False)
print(f"{len(bench.records)} runs, "
      f"{sum(r.success for r in bench.records)} certified")
profile = performance_profiles(bench.records)[0]
fig_profile = plot_performance_profile(profile)

# %%
# The same from the command line
# ------------------------------
# .. code-block:: bash
#
#    evalcert fit scores.csv --solver osqp-direct
#    evalcert bench --quick --out bench_out
