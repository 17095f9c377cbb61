"""GRM (judge scores) and pure-ML 3PL against mirt (PyPI), with the E-step against its floor.

Issue 26 item 4. Runs, each in its own forked child, timed inside it (best of
``--repeat`` after an untimed warm-up; ``bench_irt.run_in_child``):

- ``grm 60x400 K=10``: simulated 10-point judge scores (60 models x 400 items,
  slopes log-normal(0, 0.3), nine thresholds per item drawn N(0, 1.5^2) and
  sorted, so most items leave some middle category unused), evalcert's
  ``GradedResponse`` without SEs against ``mirt.fit_mirt(model="GRM",
  compute_standard_errors=False)``; same model (logistic GRM, ``theta ~ N(0,
  1)``), evalcert adds its weak default priors (log-normal slope sd 0.5,
  intercepts N(0, 10^2)). Columns: seconds, ratio to mirt, marginal log-likelihood
  reported by each, correlation of the slopes with the truth.
- ``3pl pure ML ChemBench``: ``ThreePL(slope_prior=0)`` with a fixed floor 1/4
  and with estimated floors, which must stop early naming the items whose slope
  MLE does not exist, against mirt's ``3PL`` fit (which clips slopes and returns).

- ``2pl 2000x20``: marginal and empirical reliability (``marginal_rxx``,
  ``empirical_rxx`` with information and with posterior-sd errors) of a
  pure-ML 2PL fit (``slope_prior=0``: the same model as mirt's 2PL), by each
  library on its own fit.

- ``4pl 3000x20``: simulated 4PL (floors U(0.1, 0.3), ceilings U(0.8, 0.97)),
  evalcert's ``FourPL`` with its Beta priors and pure ML, and mirt's ``4PL``:
  log-likelihood and mean absolute errors of the floors and ceilings.

- ``density 2000x20 bimodal``: a 2PL whose abilities are a standardised mixture
  of N(-1.2, 0.5^2) and N(1.2, 0.5^2). evalcert's ``TwoPL(slope_prior=0,
  density=...)`` (normal, histogram, davidian-4, all on the same 61-node grid)
  against mirt's ``EMEstimator(latent_density="gaussian" | "empirical" |
  "davidian")`` on a pure-ML 2PL (21 Gauss-Hermite nodes). The models differ:
  mirt's histogram is unstandardised masses on its 21 nodes (N - 1 parameters),
  ours has mean 0 / variance 1 on 61 nodes; mirt's Davidian step is a weighted
  least-squares fit of ``sqrt(N_q / phi)`` (not a likelihood step) without
  standardisation. Columns: CPU seconds, ratio to mirt's CPU (same density
  name), log-likelihood, density parameters, BIC.

Then the E-step of each (the GRM's, and the 2PL's on ChemBench) against one
``exp`` and one ``log`` pass over its cells x nodes (``irt_kernels``).

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_irt_models.py [--peers DIR]``
(mirt installed with ``pip install --target DIR --no-deps mirt``).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_irt import read_real, run_in_child  # noqa: E402
from irt_kernels import KERNEL_HEADERS, binary_estep, graded_estep, kernel_row  # noqa: E402

from evalcert.results import format_table  # noqa: E402

HEADERS = ["data", "runner", "seconds", "CPU s", "vs mirt", "loglik", "corr(a)",
           "peak RSS MiB", "status"]
RXX_HEADERS = ["data", "runner", "seconds", "loglik", "marginal_rxx", "empirical_rxx",
               "empirical_rxx (posterior sd)", "status"]
FOURPL_HEADERS = ["data", "runner", "seconds", "CPU s", "loglik", "MAE floor c",
                  "MAE upper u", "status"]
ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "irt")


def simulate_grm(n: int = 60, m: int = 400, K: int = 10, seed: int = 0):
    rng = np.random.default_rng(seed)
    theta, a = rng.normal(size=n), rng.lognormal(0, 0.3, m)
    cuts = np.sort(rng.normal(size=(m, K - 1)), axis=1) * 1.5
    S = 1 / (1 + np.exp(-a[None, :, None] * (theta[:, None, None] - cuts[None])))
    return (rng.random((n, m, 1)) < S).sum(2).astype(float), a


def grm_runners() -> dict:
    def mine(Y):
        from evalcert.irt import GradedResponse
        est = GradedResponse(standard_errors=False).fit(Y)
        return np.concatenate([[est.loglik_], est.discriminations_])

    def mirt_run(Y):
        import mirt
        res = mirt.fit_mirt(Y.astype(int), model="GRM", compute_standard_errors=False)
        return np.concatenate([[res.log_likelihood],
                               res.coef()["discrimination"].to_numpy(float)])
    return {"evalcert GradedResponse": mine, "mirt (PyPI) GRM": mirt_run}


def threepl_runners() -> dict:
    def mine(guessing):
        def run(Y):
            from evalcert.errors import ConvergenceError
            from evalcert.irt import ThreePL
            try:
                est = ThreePL(guessing=guessing, slope_prior=0, standard_errors=False).fit(Y)
            except ConvergenceError as exc:
                if "does not exist" in str(exc):       # the expected, early answer
                    return np.array([np.nan])
                raise
            return np.concatenate([[est.loglik_], est.discriminations_])
        return run

    def mirt_run(Y):
        import mirt
        res = mirt.fit_mirt(Y, model="3PL", compute_standard_errors=False)
        return np.concatenate([[res.log_likelihood],
                               res.coef()["discrimination"].to_numpy(float)])
    return {"evalcert ThreePL c=1/4 slope_prior=0": mine(0.25),
            "evalcert ThreePL slope_prior=0": mine(None), "mirt (PyPI) 3PL": mirt_run}


def simulate_4pl(n: int = 3000, m: int = 20, seed: int = 0):
    rng = np.random.default_rng(seed)
    theta, b, a = rng.normal(size=n), rng.normal(size=m), rng.lognormal(0, 0.3, m)
    c, u = rng.uniform(0.1, 0.3, m), rng.uniform(0.8, 0.97, m)
    p = c + (u - c) / (1 + np.exp(-a * (theta[:, None] - b)))
    return (rng.random(p.shape) < p).astype(float), c, u


def fourpl_runners() -> dict:
    """``(loglik, floors..., ceilings...)`` of 4PL fits: evalcert with its priors, pure ML, mirt."""
    def mine(**options):
        def run(Y):
            from evalcert.irt import FourPL
            est = FourPL(standard_errors=False, **options).fit(Y)
            return np.concatenate([[est.loglik_], est.guessing_, est.upper_])
        return run

    def mirt_run(Y):
        import mirt
        res = mirt.fit_mirt(Y, model="4PL", compute_standard_errors=False)
        co = res.coef()
        return np.concatenate([[res.log_likelihood], co["guessing"].to_numpy(float),
                               co["upper"].to_numpy(float)])
    return {"evalcert FourPL (Beta priors)": mine(),
            "evalcert FourPL pure ML": mine(guessing_prior=None, upper_prior=None),
            "mirt (PyPI) 4PL": mirt_run}


def run_fourpl(args) -> list:
    Y, c, u = simulate_4pl()
    rows = []
    for name, run in fourpl_runners().items():
        if args.skip_peers and not name.startswith("evalcert"):
            continue
        status, took, out, rss, cpu = run_in_child(run, Y, 1, args.timeout, args.peers)
        if status == "ok":
            m = c.size
            rows.append(("4pl 3000x20", name, took, cpu, out[0],
                         float(np.abs(out[1:m + 1] - c).mean()),
                         float(np.abs(out[m + 1:] - u).mean()), status))
        else:
            rows.append(("4pl 3000x20", name, took, cpu, *[np.nan] * 3, status))
        print(f"4pl {name:38s} {status}", file=sys.stderr, flush=True)
    return rows


DENSITY_HEADERS = ["data", "runner", "seconds", "CPU s", "vs mirt CPU", "loglik",
                   "density params", "BIC", "status"]


def simulate_bimodal(n: int = 2000, m: int = 20, seed: int = 0):
    rng = np.random.default_rng(seed)
    theta = np.where(rng.random(n) < 0.5, rng.normal(-1.2, 0.5, n), rng.normal(1.2, 0.5, n))
    theta /= np.sqrt(1.2 ** 2 + 0.25)
    a, b = rng.lognormal(0, 0.3, m), rng.normal(size=m)
    return (rng.random((n, m)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)


def density_runners() -> dict:
    """``(loglik, density parameters)`` of pure-ML 2PL fits with each latent density."""
    def mine(density):
        def run(Y):
            from evalcert.irt import TwoPL
            est = TwoPL(slope_prior=0, density=density, standard_errors=False)
            est._on_grid = True
            est.fit(Y)
            return np.array([est.loglik_, est.latent_density_.n_parameters])
        return run

    def theirs(density):
        def run(Y):
            from mirt.estimation.em import EMEstimator
            from mirt.models._factory import build_item_model
            model = build_item_model("2PL", Y.shape[1], responses=Y.astype(int))
            est = EMEstimator(latent_density=density, compute_standard_errors=False)
            res = est.fit(model, Y.astype(int))
            return np.array([res.log_likelihood, res.n_parameters - 2 * Y.shape[1]])
        return run
    return {f"{who} {name}": (run(name if who == "evalcert" else peer), peer)
            for name, peer in (("normal", "gaussian"), ("histogram", "empirical"),
                               ("davidian-4", "davidian"))
            for who, run in (("evalcert", mine), ("mirt (PyPI)", theirs))}


def run_density(args) -> list:
    Y = simulate_bimodal()
    rows, cpu_of = [], {}
    for name, (run, _) in density_runners().items():
        if args.skip_peers and not name.startswith("evalcert"):
            continue
        status, took, out, rss, cpu = run_in_child(run, Y, 1, args.timeout, args.peers)
        cpu_of[name] = cpu if status == "ok" else np.nan
        ll, k = out if status == "ok" else (np.nan, np.nan)
        bic = (2 * Y.shape[1] + k) * np.log(Y.shape[0]) - 2 * ll
        rows.append(["2000x20 bimodal", name, took, cpu, np.nan, ll, k, bic, status])
        print(f"density {name:38s} {status}", file=sys.stderr, flush=True)
    for row in rows:                        # ratio of each evalcert fit to mirt's same density
        row[4] = row[3] / cpu_of.get(row[1].replace("evalcert", "mirt (PyPI)"), np.nan)
    return [tuple(r) for r in rows]


def reliability_runners() -> dict:
    """Pure-ML 2PL fits (no priors: the same model) and their reliabilities, both libraries."""
    def mine(Y):
        from evalcert.irt import TwoPL
        from evalcert.irt.reliability import empirical_rxx, marginal_rxx
        est = TwoPL(method="mml", slope_prior=0).fit(Y)
        return np.array([est.loglik_, marginal_rxx(est), empirical_rxx(est),
                         empirical_rxx(est, method="posterior")])

    def mirt_run(Y):
        import mirt
        res = mirt.fit_mirt(Y, model="2PL", compute_standard_errors=False)
        scores = mirt.fscores(res, Y)
        return np.array([res.log_likelihood, mirt.marginal_rxx(res),
                         mirt.empirical_rxx(res.model, scores.theta),
                         mirt.empirical_rxx(res.model, scores.theta, method="posterior_variance",
                                            standard_errors=scores.standard_error)])
    return {"evalcert TwoPL(slope_prior=0) + rxx": mine, "mirt (PyPI) 2PL + rxx": mirt_run}


def run_reliability(args) -> list:
    rng = np.random.default_rng(1)
    theta, a, b = rng.normal(size=2000), rng.lognormal(0, 0.3, 20), rng.normal(size=20)
    Y = (rng.random((2000, 20)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)
    rows = []
    for name, run in reliability_runners().items():
        if args.skip_peers and not name.startswith("evalcert"):
            continue
        status, took, out, rss, cpu = run_in_child(run, Y, 1, args.timeout, args.peers)
        out = out if status == "ok" else np.full(4, np.nan)
        rows.append(("2pl 2000x20", name, took, *out, status))
        print(f"reliability {name:38s} {status}", file=sys.stderr, flush=True)
    return rows


def run_group(label: str, Y: np.ndarray, runs: dict, truth, args) -> list:
    results = {}
    for name, run in runs.items():
        if args.skip_peers and not name.startswith("evalcert"):
            continue
        status, took, out, rss, cpu = run_in_child(run, Y, args.repeat, args.timeout,
                                                   args.peers)
        loglik, corr = np.nan, np.nan
        if status == "ok" and out.size > 1:
            loglik = out[0]
            if truth is not None:
                corr = float(np.corrcoef(out[1:], truth)[0, 1])
        elif status == "ok":
            status = "ok: slope MLE does not exist (named)"
        results[name] = (took, cpu, loglik, corr, rss, status)
        print(f"{label:24s} {name:38s} {took:8.3g} s  {status}", file=sys.stderr, flush=True)
    peer = min((v[0] for k, v in results.items() if not k.startswith("evalcert")
                and np.isfinite(v[0])), default=np.nan)
    return [(label, k, v[0], v[1], v[0] / peer, v[2], v[3], v[4], v[5])
            for k, v in results.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--peers", default="/tmp/peers" if os.path.isdir("/tmp/peers") else "")
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--only", choices=["density", "4pl"], default=None,
                        help="run one section (the latent densities or the 4PL)")
    parser.add_argument("--data", default=ROOT, help="folder holding irt-on-bench/ (shared data)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.only:
        print(format_table(run_density(args), DENSITY_HEADERS) if args.only == "density"
              else format_table(run_fourpl(args), FOURPL_HEADERS))
        return
    rows, kernels = [], []
    Y, a = simulate_grm()
    rows += run_group("grm 60x400 K=10", Y, grm_runners(), a, args)
    kernels.append(kernel_row("grm 60x400 K=10", graded_estep(Y.astype(int), 10)))
    path = os.path.join(args.data, "irt-on-bench", "binary_matrix.csv")
    if os.path.exists(path):
        C = read_real(args.data, "irt-on-bench/binary_matrix.csv", True)
        rows += run_group(f"ChemBench {C.shape[0]}x{C.shape[1]}", C, threepl_runners(), None,
                          args)
        kernels.append(kernel_row("ChemBench 2pl", binary_estep(C)))
    else:
        print(f"{path} not found; ChemBench skipped", file=sys.stderr)
    print(format_table(rows, HEADERS))
    print()
    print(format_table(run_reliability(args), RXX_HEADERS))
    print()
    print(format_table(run_fourpl(args), FOURPL_HEADERS))
    print()
    print(format_table(run_density(args), DENSITY_HEADERS))
    print()
    print(format_table(kernels, KERNEL_HEADERS))


if __name__ == "__main__":
    main()
