"""Rasch CML against eRm, and eRm's raschdat2 under the 2PL (issue 12, items 2-3): a script.

For eRm's own data sets (``raschdat1`` .. ``raschdat4``, loaded in R at run
time and passed through a temporary CSV: eRm is GPL, its data are never
stored here) and simulated matrices of growing size, both identifications are
fitted by eRm and by evalcert; each R fit is, in a fresh ``Rscript``::

    library(eRm)
    X <- as.matrix(read.csv(path))
    fit <- RM(X)                  # sum-zero easiness; then RM(X, sum0 = FALSE)
    fit$betapar; fit$se.beta      # evalcert: -difficulties_, difficulties_se_

and evalcert runs ``Rasch(method="cml", tol=1e-10)`` (``anchor_item=0`` for
``sum0 = FALSE``). Printed per data set and identification: the largest
absolute difference of the estimates, the largest relative difference of the
SEs (the anchor's SE, 0 in both, left out), evalcert's conditional
log-likelihood minus eRm's (>= 0: evalcert's optimum is at least as high, so
estimate differences are eRm's ``nlm`` stopping early), CPU and wall seconds of each and
their ratio evalcert / eRm (R's ``system.time`` of ``RM`` alone, without
start-up), and the peak RSS of this process and of the R children. For the
largest simulated matrix the anchor SEs of both are also compared with the
inverse of a central finite difference of the exact CML gradient: at 5000 x 100
evalcert agrees with it to 4e-8 and eRm's ``RM(X, sum0 = FALSE)`` SEs are 1.4%
low (``nlm``'s Hessian from second differences of a log-likelihood near -2.5e5),
while its sum-zero SEs agree with evalcert to 1e-4.

Then raschdat2 (25 persons, 6 items in a linked design) under the 2PL by
marginal ML: ``TwoPL(method="mml", slope_prior=0)`` and the default prior, and
a profile of the marginal log-likelihood over the slope evalcert names,
computed here on a fixed 1601-node grid with the other 11 parameters maximised
(L-BFGS, the best of several starts, then warm-started): it keeps rising as
the slope grows, so the ML slope does not exist (the item becomes a step), and
the posterior puts exactly the models that failed the item below its threshold.

Before any of this (and without R) it prints the CML's hot kernel
(``esf.conditional_cells``) on each simulated size against a floor measured in the same run:
one ``exp`` and one ``log`` pass over the same cells x circle nodes
(:func:`irt_kernels.cml_terms`), so the distance to the machine's limit is on record.

Usage (skips the eRm comparison with a message when ``Rscript`` or eRm is missing)::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_erm.py [--sizes 500x20 2000x50 5000x100]
    python benchmarks/bench_erm.py --reference   # eRm on the matrices of the eRm tests
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

from evalcert.results import format_table
from evalcert.irt import Rasch, TwoPL
from evalcert.io.tables import read_table

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from irt_kernels import KERNEL_HEADERS, cml_terms, kernel_row  # noqa: E402

R_FIT = r"""
suppressMessages(library(eRm))
args <- commandArgs(TRUE)
X <- as.matrix(read.csv(args[1], check.names = FALSE))
for (s0 in c(TRUE, FALSE)) {
  t <- system.time(fit <- suppressWarnings(RM(X, sum0 = s0)))
  write.csv(data.frame(item = sub("^beta ", "", names(fit$betapar)), beta = fit$betapar,
                       se = fit$se.beta), sprintf("%s.%s.csv", args[2], s0), row.names = FALSE)
  cat(s0, t[["user.self"]] + t[["sys.self"]], t[["elapsed"]], sprintf("%.12g", fit$loglik), "\n")
}
"""
R_DATA = r"""
suppressMessages(library(eRm))
args <- commandArgs(TRUE)
for (name in args[-1]) write.csv(get(name), file.path(args[1], paste0(name, ".csv")),
                                 row.names = FALSE, na = "")
"""
HEADERS = ["data", "shape", "ident.", "max |b - eRm|", "max SE rel. diff", "loglik - eRm's",
           "evalcert cpu s", "eRm cpu s", "cpu ratio", "evalcert wall s", "eRm wall s",
           "wall ratio"]


def r_available() -> str | None:
    """Why eRm cannot run here, or None."""
    if shutil.which("Rscript") is None:
        return "Rscript not found (install R and the eRm package, e.g. apt install r-cran-erm)"
    probe = subprocess.run(["Rscript", "-e", "library(eRm)"], capture_output=True, text=True)
    if probe.returncode != 0:
        return "the R package eRm is not installed (install.packages('eRm'))"
    return None


def read_csv(path: str) -> tuple[list[str], np.ndarray]:
    """Item names and the 0/1/NaN matrix of a CSV written by R or :func:`_write`."""
    table = read_table(path)
    names = list(table.columns)
    Y = np.array([[np.nan if v in ("", "NA") else float(v) for v in table[c]] for c in names]).T
    return names, Y


def erm_fit(path: str, tmp: str) -> dict[bool, dict]:
    """eRm's RM() on a CSV file, both identifications: {sum0: {item: (beta, se), times}}."""
    out = subprocess.run(["Rscript", "-e", R_FIT, path, os.path.join(tmp, "fit")],
                         capture_output=True, text=True, check=True).stdout.split()
    fits = {}
    for k, s0 in enumerate((True, False)):
        table = read_table(os.path.join(tmp, f"fit.{'TRUE' if s0 else 'FALSE'}.csv"),
                           required=["item", "beta", "se"])
        fits[s0] = {"items": {i: (float(b), float(se))
                              for i, b, se in zip(table["item"], table["beta"], table["se"])},
                    "cpu": float(out[4 * k + 1]), "wall": float(out[4 * k + 2]),
                    "loglik": float(out[4 * k + 3])}
    return fits


def compare(name: str, path: str, tmp: str):
    """Rows per identification (evalcert CML against eRm), the data, the SEs of both."""
    items, Y = read_csv(path)
    erm = erm_fit(path, tmp)
    rows, ses = [], {}
    for s0 in (True, False):
        kwargs = {} if s0 else {"anchor_item": 0}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cpu, wall = time.process_time(), time.perf_counter()
            est = Rasch(method="cml", tol=1e-10, **kwargs).fit(Y)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        ref = erm[s0]["items"]
        index = [items.index(i) for i in ref]
        b = est.difficulties_[index]
        se = est.difficulties_se_[index]
        beta = np.array([v[0] for v in ref.values()])
        se_ref = np.array([v[1] for v in ref.values()])
        free = se_ref > 0
        ses[s0] = (se, se_ref)
        rows.append([name, f"{Y.shape[0]}x{Y.shape[1]}", "sum-zero" if s0 else "anchor I1",
                     f"{np.max(np.abs(b + beta)):.2g}",
                     f"{np.max(np.abs(se[free] / se_ref[free] - 1)):.2g}",
                     f"{est.loglik_ - erm[s0]['loglik']:.2g}",
                     f"{cpu:.3f}", f"{erm[s0]['cpu']:.3f}",
                     f"{cpu / max(erm[s0]['cpu'], 1e-3):.3g}", f"{wall:.3f}",
                     f"{erm[s0]['wall']:.3f}", f"{wall / max(erm[s0]['wall'], 1e-3):.3g}"])
    return rows, Y, ses


def simulate(n_models: int, n_items: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=n_models), rng.normal(size=n_items)
    return (rng.random((n_models, n_items)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(int)


def raschdat2_2pl(path: str) -> list[str]:
    """What the 2PL does on raschdat2: both fits, then the profile of the named slope."""
    _, Y = read_csv(path)
    lines = []
    for label, kwargs in (("slope_prior=0", {"slope_prior": 0}), ("default prior", {})):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                est = TwoPL(method="mml", **kwargs).fit(Y)
                lines.append(f"2PL MML {label}: converged in {est.result_.n_iter} iterations, "
                             f"slopes {np.round(est.discriminations_, 3).tolist()}, "
                             f"marginal loglik {est.loglik_:.4f}")
            except Exception as error:          # the outcome is what is reported
                lines.append(f"2PL MML {label}: {type(error).__name__}: {error}")
    lines += profile_slope(Y, item=2)
    return lines


def profile_slope(Y: np.ndarray, item: int, slopes=(2, 4, 8, 16, 32, 64, 128),
                  n_starts: int = 4) -> list[str]:
    """``max`` of the marginal loglik over the other parameters with slope ``item`` fixed.

    The best of ``n_starts`` L-BFGS runs at the first slope, then each next
    slope warm-started from the previous optimum (the surface has several
    basins: a fresh start per slope lands in different ones).
    """
    from scipy.optimize import minimize
    from scipy.special import log_expit, logsumexp
    obs, Y0 = ~np.isnan(Y), np.nan_to_num(Y)
    z = np.linspace(-8, 8, 1601)        # spacing 0.01: resolves slopes up to ~100
    log_w = -0.5 * z ** 2 - logsumexp(-0.5 * z ** 2)
    M = Y.shape[1]

    def negll(x, a_fixed):
        a, d = np.insert(x[:M - 1], item, a_fixed), x[M - 1:]
        eta = z[:, None] * a + d
        ll = (Y0 * obs) @ log_expit(eta).T + ((1 - Y0) * obs) @ log_expit(-eta).T
        return -float(logsumexp(ll + log_w, axis=1).sum())

    def run(x, a_fixed):
        return minimize(negll, x, args=(a_fixed,), method="L-BFGS-B",
                        options={"maxiter": 3000, "ftol": 1e-14, "gtol": 1e-9})

    rng = np.random.default_rng(0)
    starts = [np.concatenate([rng.uniform(-2, 2, M - 1), rng.normal(0, 0.5, M)])
              for _ in range(n_starts)]
    fit = min((run(x, slopes[0]) for x in starts), key=lambda f: f.fun)
    lines = []
    for a_fixed in slopes:
        fit = run(fit.x, a_fixed)
        others = np.round(fit.x[:M - 1], 2).tolist()
        lines.append(f"  profile: slope of item {item} fixed at {a_fixed:>5g}: max marginal "
                     f"loglik {-fit.fun:.6f}, its threshold {-fit.x[M - 1 + item] / a_fixed:+.3f}"
                     f", other slopes {others}")
    # why: the posterior puts the models that failed the item below its threshold
    a, d = np.insert(fit.x[:M - 1], item, slopes[-1]), fit.x[M - 1:]
    eta = z[:, None] * a + d
    post = (Y0 * obs) @ log_expit(eta).T + ((1 - Y0) * obs) @ log_expit(-eta).T + log_w
    post = np.exp(post - logsumexp(post, axis=1, keepdims=True))
    below = post[:, z < -d[item] / a[item]].sum(1)
    for label, who in (("failed", obs[:, item] & (Y0[:, item] == 0)),
                       ("passed", obs[:, item] & (Y0[:, item] == 1))):
        lines.append(f"  at slope {slopes[-1]:g}: P(ability below the threshold | responses) "
                     f"of the {who.sum()} models that {label} item {item}: "
                     f"{np.round(below[who], 4).tolist()}")
    return lines


def fd_check(Y: np.ndarray, anchor_ses: np.ndarray, erm_ses: np.ndarray) -> str:
    """Anchor-item SEs from a central difference of the exact CML gradient (complete data).

    ``d loglik / d b_j = sum_r n_r pi_j(r) - x_j`` by the summation algorithm
    (:func:`~evalcert.irt.log_esf`), differenced in ``b_2..b_M``: an
    arbiter independent of both programs' Hessians.
    """
    from evalcert.irt import log_esf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = Rasch(method="cml", tol=1e-10, anchor_item=0).fit(Y).difficulties_
    M = Y.shape[1]
    n_r = np.bincount(Y.sum(1).astype(int), minlength=M + 1)[1:M]
    scores = np.arange(1, M)

    def grad(b):
        lg = log_esf(b)[scores]
        return np.array([n_r @ np.exp(-b[j] + log_esf(np.delete(b, j))[scores - 1] - lg)
                         for j in range(M)]) - Y.sum(0)

    h, H = 1e-5, np.empty((M - 1, M - 1))
    for k in range(1, M):
        e = np.zeros(M)
        e[k] = h
        H[:, k - 1] = -(grad(b + e) - grad(b - e))[1:] / (2 * h)
    se = np.sqrt(np.diag(np.linalg.inv((H + H.T) / 2)))
    return (f"anchor SEs vs a finite difference of the exact gradient: evalcert "
            f"{np.max(np.abs(anchor_ses[1:] / se - 1)):.2g}, eRm "
            f"{np.max(np.abs(erm_ses[1:] / se - 1)):.2g} (max relative difference)")


def reference(tmp: str) -> None:
    """Print eRm's estimates and SEs on the matrices pinned in tests/…/test_erm_reference.py."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from tests.irt.test_erm_reference import DATA
    for name, Y in DATA.items():
        path = os.path.join(tmp, f"{name}.csv")
        _write(path, Y)
        for s0, fit in erm_fit(path, tmp).items():
            beta = ", ".join(f"{v[0]:.10g}" for v in fit["items"].values())
            se = ", ".join(f"{v[1]:.10g}" for v in fit["items"].values())
            print(f"{name} sum0={s0}\n  betapar [{beta}]\n  se.beta [{se}]")


def _write(path: str, Y: np.ndarray) -> None:
    header = ",".join(f"I{j + 1}" for j in range(Y.shape[1]))
    Y = np.asarray(Y, float)
    cells = np.where(np.isnan(Y), "", np.nan_to_num(Y).astype(int).astype(str))
    with open(path, "w") as handle:
        handle.write(header + "\n" + "\n".join(",".join(row) for row in cells) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", default=["500x20", "2000x50", "5000x100"],
                        help="simulated complete matrices, models x items")
    parser.add_argument("--reference", action="store_true",
                        help="print eRm's values for the matrices of the eRm tests and stop")
    args = parser.parse_args(argv)
    # the CML's hot kernel against an exp + log floor over the same cells x nodes (needs no R)
    kernels = [kernel_row(f"simulated {size}", cml_terms(simulate(*map(int, size.split("x")))
                                                          .astype(float)))
               for size in args.sizes]
    print(format_table(kernels, KERNEL_HEADERS) + "\n")
    why = r_available()
    if why:
        print(f"skipped: {why}", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        if args.reference:
            reference(tmp)
            return 0
        names = ["raschdat1", "raschdat2", "raschdat3", "raschdat4"]
        subprocess.run(["Rscript", "-e", R_DATA, tmp, *names], check=True)
        rows = []
        for name in names:
            rows += compare(name, os.path.join(tmp, f"{name}.csv"), tmp)[0]
        for size in args.sizes:
            n, m = map(int, size.split("x"))
            path = os.path.join(tmp, f"sim{size}.csv")
            _write(path, simulate(n, m).astype(float))
            new_rows, Y, ses = compare("simulated", path, tmp)
            rows += new_rows
        print(format_table(rows, HEADERS))
        if args.sizes:
            print(f"\nsimulated {args.sizes[-1]}: {fd_check(Y, *ses[False])}")
        print("\nraschdat2 under the 2PL (marginal ML):")
        print("\n".join(raschdat2_2pl(os.path.join(tmp, "raschdat2.csv"))))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    r_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"\npeak RSS: evalcert (this process) {rss:.0f} MiB, largest R child {r_rss:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
