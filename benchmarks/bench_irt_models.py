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

- ``4pl 3000x20`` / ``3plu 3000x20``: simulated 4PL (floors U(0.1, 0.3), ceilings
  U(0.8, 0.97)). evalcert's ``FourPL`` with its Beta priors; pure ML in mirt's box
  (no priors, slopes in [0.1, 5] as mirt's EM; its other boxes, c <= 0.5 and
  u >= 0.5, stay inactive here), with the multi-start and from one start; the
  3PLu (floors fixed at 0) the same way; mirt's ``4PL`` (guessing fixed at 0 for
  the 3PLu) at its defaults (21 nodes, tol 1e-4) and tight (61 nodes, tol 1e-7).
  Every point is also scored on evalcert's pure-ML objective (one yardstick: a
  higher value there is a higher optimum of the same likelihood), with the
  largest parameter difference from mirt's tight fit and the recovery of the
  simulated floors and ceilings. "vs mirt CPU" divides by mirt's default run.
  Runner names: "ML" = pure ML in mirt's box, "1 start" = without the
  multi-start, "mirt ... tol" = mirt with 61 nodes and tol 1e-7.

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

Then the E-step of each (the GRM's, and the 2PL's on ChemBench) and the 4PL's
log-likelihood with its gradient against one ``exp`` and one ``log`` pass over
its cells x nodes (``irt_kernels``). The 4PL's kernel on complete binary data
takes its ``exp`` over models x nodes and items x nodes and sums the cells by
two matrix products, so it runs below that "floor" (measured 0.33x at 3000 x
20): there the floor is a yardstick, not a bound.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_irt_models.py [--peers DIR]
[--only density|4pl|3pl]`` (mirt installed with ``pip install --target DIR --no-deps
mirt``); ``--only 3pl`` runs the pure-ML 3PL on ChemBench and its 2PL E-step row. The
load average at the start and at the end is printed last.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_irt import child_arguments, load_line, read_real, run_in_child  # noqa: E402
from irt_kernels import (KERNEL_HEADERS, binary_estep, graded_estep, kernel_row,  # noqa: E402
                         objective_kernel)

from evalcert.results import format_table  # noqa: E402

HEADERS = ["data", "runner", "seconds", "CPU s", "vs mirt", "loglik", "corr(a)",
           "peak RSS MiB", "status"]
RXX_HEADERS = ["data", "runner", "seconds", "loglik", "marginal_rxx", "empirical_rxx",
               "empirical_rxx (posterior sd)", "status"]
FOURPL_HEADERS = ["data", "runner", "seconds", "CPU s", "vs mirt CPU", "loglik",
                  "loglik (evalcert objective)", "max|da| vs mirt tight", "max|db|", "max|dc|",
                  "max|du|", "MAE floor c", "MAE upper u", "peak RSS MiB", "status"]
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
    """``(loglik, a, b, c, u)`` of 4PL / 3PLu fits: evalcert with its priors, pure ML, mirt."""
    pure = {"slope_prior": 0, "intercept_prior": 0, "guessing_prior": None,
            "upper_prior": None, "slope_bounds": (0.1, 5.0)}

    def mine(**options):
        def run(Y):
            from evalcert.irt import FourPL
            est = FourPL(standard_errors=False, **options).fit(Y)
            return np.concatenate([[est.loglik_], est.discriminations_, est.difficulties_,
                                   est.guessing_, est.upper_])
        return run

    def mirt_run(upper_only: bool, **options):
        def run(Y):
            import mirt
            fixed = ({"start_values": {"guessing": np.zeros(Y.shape[1])},
                      "fixed": {"guessing": True}} if upper_only else {})
            res = mirt.fit_mirt(Y, model="4PL", compute_standard_errors=False, **fixed,
                                **options)
            co = res.coef()
            return np.concatenate([[res.log_likelihood]] + [
                co[k].to_numpy(float) for k in ("discrimination", "difficulty", "guessing",
                                                "upper")])
        return run
    tight = {"n_quadpts": 61, "tol": 1e-7, "max_iter": 20000}
    return {"4pl": {"evalcert 4PL Beta priors": mine(),
                    "evalcert 4PL ML": mine(**pure),
                    "evalcert 4PL ML 1 start": mine(multistart=False, **pure),
                    "mirt 4PL": mirt_run(False),
                    "mirt 4PL tol": mirt_run(False, **tight)},
            "3plu": {"evalcert 3PLu ML": mine(guessing=0.0, **pure),
                     "evalcert 3PLu ML 1 start": mine(guessing=0.0, multistart=False, **pure),
                     "mirt 3PLu": mirt_run(True), "mirt 3PLu tol": mirt_run(True, **tight)}}


def pure_ml_loglik(Y: np.ndarray, a, b, c, u) -> float:
    """The marginal log-likelihood of ``(a, b, c, u)`` on evalcert's objective (61-node grid)."""
    from evalcert.irt import FourPL
    from evalcert.irt.estimation.mml_direct import MarginalData
    md = MarginalData(np.where(np.isnan(Y), -1, Y).astype(int), 2, 61)
    est = FourPL(guessing_prior=None, upper_prior=None, slope_prior=0, intercept_prior=0)
    est._objective(np.concatenate([a, -a * b, c, u]), md, Y.shape[1])
    return float(est._last[0])


def run_fourpl(args) -> list:
    """Each fit's time, CPU over mirt's default run of the same model, its own log-likelihood,
    its point's log-likelihood on evalcert's pure-ML objective (one yardstick for all), the
    largest difference from mirt's tight fit per parameter, and the truth's recovery."""
    Y, c, u = simulate_4pl()
    m = c.size
    rows = []
    for model, runs in fourpl_runners().items():
        done = {}
        for name, run in runs.items():
            if args.skip_peers and not name.startswith("evalcert"):
                continue
            status, took, out, rss, cpu = run_in_child(run, Y, 1, args.timeout, args.peers)
            done[name] = (status, took, out, cpu, rss)
            print(f"{model} {name:48s} {status}", file=sys.stderr, flush=True)
        peer = [k for k in done if k.startswith("mirt") and "tol" not in k]
        ref = [k for k in done if k.startswith("mirt") and "tol" in k]
        peer_cpu = done[peer[0]][3] if peer and done[peer[0]][0] == "ok" else np.nan
        ref_out = done[ref[0]][2] if ref and done[ref[0]][0] == "ok" else None
        for name, (status, took, out, cpu, rss) in done.items():
            if status != "ok":
                rows.append((f"{model} 3000x20", name, took, cpu, *[np.nan] * 10, status))
                continue
            a, b, cc, uu = out[1:].reshape(4, m)
            diff = (np.abs(out[1:] - ref_out[1:]).reshape(4, m).max(1) if ref_out is not None
                    else np.full(4, np.nan))
            rows.append((f"{model} 3000x20", name, took, cpu, cpu / peer_cpu, out[0],
                         pure_ml_loglik(Y, a, b, cc, uu), *diff,
                         float(np.abs(cc - (0 if model == "3plu" else c)).mean()),
                         float(np.abs(uu - u).mean()), rss, status))
    return rows


def fourpl_objective(Y: np.ndarray, n_quad: int = 61, repeat: int = 5) -> tuple:
    """The 4PL fit's hot kernel: one marginal log-likelihood and exact gradient (E-step included)."""
    from evalcert.irt import FourPL
    from evalcert.irt.estimation.mml_direct import MarginalData
    md = MarginalData(np.where(np.isnan(Y), -1, Y).astype(int), 2, n_quad)
    est = FourPL(guessing_prior=None, upper_prior=None, slope_prior=0, intercept_prior=0)
    m = Y.shape[1]
    x = np.concatenate([np.ones(m), np.zeros(m), np.full(m, 0.2), np.full(m, 0.9)])
    return objective_kernel(lambda: est._objective(x, md, m), ~np.isnan(Y), n_quad,
                            f"4PL log-lik + gradient, {n_quad}-node grid", repeat)


def record_mirt(args) -> None:
    """Print mirt's tight 4PL and 3PLu fits of ``simulate_4pl(4000, 10, 1)`` as Python literals:
    the reference numbers pinned in ``tests/irt/test_fourpl.py`` (run in a venv with mirt)."""
    Y, *_ = simulate_4pl(4000, 10, 1)
    runs = fourpl_runners()
    for label, run in (("MIRT_4PL", runs["4pl"]["mirt 4PL tol"]),
                       ("MIRT_3PLU", runs["3plu"]["mirt 3PLu tol"])):
        status, _, out, _, _ = run_in_child(run, Y, 1, args.timeout, args.peers)
        if status != "ok":
            raise SystemExit(f"{label}: {status}")
        print(f"{label}_LOGLIK = {float(out[0])!r}")
        print(f"{label} = np.array([")
        for row in out[1:].reshape(4, -1):
            print("    [" + ", ".join(f"{v:.6f}" for v in row) + "],")
        print("])  # a, b, c, u")


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
    child_arguments(parser, repeat=3, timeout=300.0)
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--only", choices=["density", "4pl", "3pl"], default=None,
                        help="run one section (the latent densities, the 4PL, or the pure-ML "
                             "3PL on ChemBench)")
    parser.add_argument("--record-mirt", action="store_true",
                        help="print mirt's 4PL/3PLu numbers pinned in tests/irt/test_fourpl.py")
    parser.add_argument("--data", default=ROOT, help="folder holding irt-on-bench/ (shared data)")
    args = parser.parse_args()
    load = os.getloadavg()
    warnings.simplefilter("ignore")
    if args.record_mirt:
        record_mirt(args)
        return
    if args.only:
        if args.only == "3pl":
            C = read_real(args.data, "irt-on-bench/binary_matrix.csv", True)
            print(format_table(run_group(f"ChemBench {C.shape[0]}x{C.shape[1]}", C,
                                         threepl_runners(), None, args), HEADERS))
            print()
            print(format_table([kernel_row("ChemBench 2pl", binary_estep(C))], KERNEL_HEADERS))
            print(load_line(load))
            return
        if args.only == "density":
            print(format_table(run_density(args), DENSITY_HEADERS))
            return
        print(format_table(run_fourpl(args), FOURPL_HEADERS))
        print()
        print(format_table([kernel_row("4pl 3000x20", fourpl_objective(simulate_4pl()[0]))],
                           KERNEL_HEADERS))
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
    kernels.append(kernel_row("4pl 3000x20", fourpl_objective(simulate_4pl()[0])))
    print(format_table(kernels, KERNEL_HEADERS))
    print(load_line(load))


if __name__ == "__main__":
    main()
