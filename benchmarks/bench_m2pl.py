"""The multidimensional 2PL (``MultidimensionalTwoPL``) against mirt (PyPI) ``n_factors=K``.

Issue 26 item 3. Each run in its own forked child, timed inside it (best of
``--repeat`` after an untimed warm-up; ``bench_irt.run_in_child``), one BLAS thread:

- ``fit NxJ K``: simulated M2PL (slopes |N(1, 0.4^2)|, intercepts N(0, 1), theta ~
  N(0, I_K), a share of cells missing at random); evalcert's fit against
  ``mirt.fit_mirt(model="2PL", n_factors=K, compute_standard_errors=False)`` with
  the same Gauss-Hermite grid (``n_quadpts`` = evalcert's ``n_points``). Same model
  and likelihood; mirt parameterises the logit as ``theta . a - (sum a) b`` and leaves
  the rotation free, evalcert fixes it (triangular slopes). Columns: seconds, CPU
  seconds, CPU ratio to mirt, the marginal log-likelihood each reports, each fit's
  log-likelihood recomputed by evalcert on the same grid and on a fine grid (121, 61^2,
  25^3 nodes). A product grid is not rotation invariant: at K=2 on 21^2 nodes the
  log-likelihood of one fit moves by up to ~0.6 units as its slopes are rotated (it is
  constant on 61^2), so an unrotated fit can score a few hundredths higher on the
  coarse grid than the triangular one; the fine-grid column compares the models.
- ``score``: EAP of 1,000 new models on each library's own K=2 fit (evalcert: an
  oblique lattice along the typical posterior, then a uniform box and adaptive
  Gauss-Hermite for the models it does not resolve, to 1e-6 posterior sds (see
  ``bench_scoring.py`` for the same items side by side); mirt ``fscores(method="EAP")``: a fixed
  49^2 Gauss-Hermite grid, no accuracy check); CPU-s of the scoring call only; RMSE of
  the abilities to the truth after the best rotation (Procrustes).

Then the fit's hot kernel, the E-step (log-likelihood and expected counts on the
product grid, at the starting values; ``irt_kernels.m2pl_estep``; best of 5, wall, in
this process) of each fit shape, twice against floors measured in the same run: one
``exp`` and one ``log`` pass over the observed cells x nodes (the E-step's floor
of issue 26; this E-step is below it, as it sums over items by BLAS products
instead of one transcendental function per cell and node), and the BLAS products it
makes (responses and mask forward, the counts back: four with missing cells) plus
one ``exp`` and one ``log`` pass over the item table and over models x nodes
(``irt_kernels.grid_floor_seconds``).

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_m2pl.py [--peers DIR]``, DIR
holding mirt (default: /work/venvs/irtmodels's site-packages when present).
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_irt import run_in_child  # noqa: E402
from irt_kernels import KERNEL_HEADERS, kernel_row, m2pl_estep  # noqa: E402

from evalcert.results import format_table  # noqa: E402

HEADERS = ["data", "runner", "seconds", "CPU s", "CPU vs mirt", "loglik (own)",
           "loglik (evalcert, same grid)", "loglik (fine grid)", "peak RSS MiB", "status"]
#: points per dimension of the fine grid the two fits' likelihoods are recomputed on
FINE = {1: 121, 2: 61, 3: 25}
SCORE_HEADERS = ["data", "runner", "seconds", "CPU s", "CPU vs mirt", "RMSE theta",
                 "status"]


def simulate(seed: int, n: int, m: int, k: int, missing: float):
    rng = np.random.default_rng(seed)
    A = np.abs(rng.normal(1.0, 0.4, (m, k)))
    d = rng.normal(0.0, 1.0, m)
    theta = rng.normal(size=(n, k))
    Y = (rng.random((n, m)) < 1 / (1 + np.exp(-(theta @ A.T + d)))).astype(float)
    Y[rng.random(Y.shape) < missing] = np.nan
    return Y, A, d, theta


def fit_runners(k: int, n_points: int) -> dict:
    def mine(Y):
        from evalcert.irt import MultidimensionalTwoPL
        est = MultidimensionalTwoPL(dims=k, n_points=n_points, standard_errors=False).fit(Y)
        return np.concatenate([[est.loglik_], est.loadings_.ravel(), est.intercepts_])

    def mirt_run(Y):
        import mirt
        res = mirt.fit_mirt(Y, model="2PL", n_factors=k, n_quadpts=n_points,
                            compute_standard_errors=False)
        a = np.asarray(res.model.discrimination, float).reshape(Y.shape[1], -1)
        b = np.asarray(res.model.difficulty, float)
        d = -a.sum(axis=1) * b if k > 1 else -a[:, 0] * b
        return np.concatenate([[res.log_likelihood], a.ravel(), d])
    return {f"evalcert m2pl K={k}": mine, f"mirt (PyPI) 2PL n_factors={k}": mirt_run}


def score_runners(Y_train: np.ndarray, k: int) -> dict:
    def mine(Y):
        from evalcert.irt import MultidimensionalTwoPL
        est = MultidimensionalTwoPL(dims=k, standard_errors=False).fit(Y_train)
        import time
        t = time.process_time()
        theta = est.score(Y).abilities
        return np.concatenate([[time.process_time() - t], theta.ravel()])

    def mirt_run(Y):
        import time

        import mirt
        from mirt import fscores
        res = mirt.fit_mirt(Y_train, model="2PL", n_factors=k, compute_standard_errors=False)
        t = time.process_time()
        theta = np.asarray(fscores(res, Y, method="EAP").theta, float)
        return np.concatenate([[time.process_time() - t], theta.ravel()])
    return {f"evalcert m2pl K={k} score": mine, f"mirt (PyPI) fscores EAP K={k}": mirt_run}


def _default_peers() -> str:
    hits = glob.glob("/work/venvs/irtmodels/lib/python3*/site-packages")
    return hits[0] if hits else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--peers", default=_default_peers())
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--quick", action="store_true", help="the two smaller shapes only")
    parser.add_argument("--score-only", action="store_true", help="only the EAP scoring run")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from scipy.linalg import orthogonal_procrustes

    from evalcert.irt.estimation.mml_multidim import marginal_loglik

    shapes = [] if args.score_only else [(1000, 30, 1, 0.3, 41), (1000, 30, 2, 0.3, 21)]
    if not (args.quick or args.score_only):
        shapes += [(2000, 40, 2, 0.5, 21), (500, 20, 3, 0.2, 11)]
    rows, kernels = [], []
    for n, m, k, missing, points in shapes:
        Y, *_ = simulate(0, n, m, k, missing)
        O, Y0 = ~np.isnan(Y), np.nan_to_num(Y)
        label = f"fit {n}x{m} K={k} ({missing:.0%} missing, {points}^{k} nodes)"
        kernels += [kernel_row(f"{n}x{m} K={k} {missing:.0%} missing", measured)
                    for measured in m2pl_estep(Y, k, points)]
        cpu_peer = np.nan
        found = []
        for name, run in reversed(list(fit_runners(k, points).items())):   # mirt first
            if args.skip_peers and not name.startswith("evalcert"):
                continue
            status, took, out, rss, cpu = run_in_child(run, Y, args.repeat, args.timeout,
                                                       args.peers)
            ll_own = ll_grid = ll_fine = np.nan
            if status == "ok":
                ll_own = out[0]
                A = out[1:1 + m * k].reshape(m, k)
                ll_grid = marginal_loglik(Y0, O, A, out[1 + m * k:], n_points=points)
                ll_fine = marginal_loglik(Y0, O, A, out[1 + m * k:], n_points=FINE[k])
            if name.startswith("mirt"):
                cpu_peer = cpu
            found.append((label, name, took, cpu, cpu / cpu_peer if name.startswith(
                "evalcert") else 1.0, ll_own, ll_grid, ll_fine, rss, status))
            print(f"{label} {name:34s} {status} {cpu:.3g} CPU-s", file=sys.stderr, flush=True)
        rows += found[::-1]
    if rows:
        print(format_table(rows, HEADERS))
        print("\n" + format_table(kernels, KERNEL_HEADERS))

    srows = []
    k = 2
    Y_train, A, d, _ = simulate(1, 1000, 30, k, 0.3)
    rng = np.random.default_rng(2)
    theta = rng.normal(size=(1000, k))
    Ynew = (rng.random((1000, 30)) < 1 / (1 + np.exp(-(theta @ A.T + d)))).astype(float)
    cpu_peer = np.nan
    for name, run in reversed(list(score_runners(Y_train, k).items())):
        if args.skip_peers and not name.startswith("evalcert"):
            continue
        status, took, out, rss, cpu = run_in_child(run, Ynew, args.repeat, args.timeout,
                                                   args.peers)
        rmse, cpu_score = np.nan, np.nan
        if status == "ok":
            cpu_score, est = out[0], out[1:].reshape(-1, k)
            R, _ = orthogonal_procrustes(est, theta)
            rmse = float(np.sqrt(np.mean((est @ R - theta) ** 2)))
        if name.startswith("mirt"):
            cpu_peer = cpu_score
        srows.append(("score 1000 new x 30 items K=2", name, took, cpu_score,
                      cpu_score / cpu_peer if name.startswith("evalcert") else 1.0, rmse,
                      status))
    print("\n" + format_table(srows[::-1], SCORE_HEADERS))
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
          "(CPU-s are of the child; seconds are wall)")


if __name__ == "__main__":
    main()
