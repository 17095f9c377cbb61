"""Benchmark the IRT estimators against mirt (PyPI) and girth (a script, not a test).

Shapes (models x items, optional share of missing cells after ``@``): Rasch at
1000 x 200 and 100 x 5000; 2PL at 100 x 5000 (the LLM shape); the
missing-cell shape 300 x 20000 with 50% missing (Rasch CML/JML/MML, 2PL MML).
Every run, evalcert's and each peer's, happens in its own forked child process,
is timed inside it (best of ``--repeat``, after an untimed warm-up fit on a
40 x 30 corner that pays for imports) and is stopped after ``--timeout``
seconds. Columns: wall time, time over the fastest peer's on the same shape and
model, correlation (Pearson, Spearman) and regression slope of the difficulties
against the truth.

Like for like: girth computes no standard errors, and mirt is run with
``compute_standard_errors=False``; against them evalcert runs with
``standard_errors=False`` (rows ``evalcert jml|cml|mml``). evalcert's default,
with standard errors, is timed too (rows ``... +SE``: for ``mml`` the observed
information by Louis's identity) against mirt with
``compute_standard_errors=True`` (row ``mirt (PyPI) mml +SE``, when it finishes
within ``--timeout``). "vs best peer" divides by the fastest peer of the same
kind (no SEs, or with SEs). A verdict per shape says whether evalcert is faster
than the fastest peer of its kind and recovers the difficulties at least as
well; the issue's absolute targets are checked at the end on the default
(``+SE``) runs.

Peers are benchmark-only, never dependencies: install them outside the
project environment and point ``--peers`` at that folder::

    pip install --target /tmp/peers mirt girth
    python benchmarks/bench_irt.py [--peers /tmp/peers] [--repeat 3] [--timeout 120]
        [--shapes rasch:1000x200 2pl:100x5000 rasch:300x20000@0.5 ...] [--real]
        [--real-only --datasets ChemBench]

``--real`` adds the two few-model LLM matrices of ``../shared/data/irt`` (skipped
when absent; never copied into the project): PSN-IRT (12 x 41,871) and
ChemBench (22 x 2,854), 2PL MML by evalcert (default slope prior, and pure ML
``slope_prior=0``) and by mirt, each without and with standard errors
(``+SE``) as above, with the time, the Kendall correlation of the abilities
with raw accuracy, the count of negative slopes and the status.

Model differences: mirt's (PyPI) ``1PL`` fixes every slope at 1 *and* the
ability variance at 1 (``theta ~ N(0, 1)``); evalcert's Rasch MML fixes the
slopes at 1 and estimates the ability sd (``population_sd_``), the usual
Rasch MML (as eRm/TAM), so its log-likelihood is at least mirt's on the same
data. The 2PL is the same model in both (``theta ~ N(0, 1)``, free slopes), but
evalcert's default adds a log-normal slope prior (sd 0.5); ``slope_prior=0``
rows are pure ML like mirt's.

After the tables, each shape's hot kernel, the MML E-step at the starting
values (:mod:`irt_kernels`), is timed against its floor measured in the same
run: one ``exp`` and one ``log`` pass over the observed cells x quadrature nodes.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import queue as queue_module
import resource
import sys
import time
import warnings

import numpy as np
from scipy.stats import kendalltau, spearmanr

from evalcert.results import format_table
from evalcert.irt import Rasch, TwoPL

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from irt_kernels import KERNEL_HEADERS, binary_estep, kernel_row  # noqa: E402

HEADERS = ["shape", "runner", "seconds", "CPU s", "vs best peer", "corr(b)", "rank corr(b)",
           "slope(b)", "peak RSS MiB", "status"]
SHAPES = ["rasch:1000x200", "rasch:100x5000", "2pl:100x5000", "rasch:300x20000@0.5",
          "2pl:300x20000@0.5"]
METHODS = {"rasch": ("jml", "cml", "mml"), "2pl": ("mml",)}
#: absolute targets of issue 12 (seconds), by (shape, runner)
TARGETS = {("rasch:300x20000@0.5", f"evalcert {m} +SE"): 10.0 for m in ("cml", "jml", "mml")}
TARGETS[("2pl:300x20000@0.5", "evalcert mml +SE")] = 15.0
SE = " +SE"     #: suffix of the runs that compute standard errors


def simulate(model: str, n_models: int, n_items: int, missing: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=n_models), rng.normal(size=n_items)
    a = rng.lognormal(0, 0.3, n_items) if model == "2pl" else np.ones(n_items)
    p = 1 / (1 + np.exp(-a * (theta[:, None] - b)))
    Y = (rng.random(p.shape) < p).astype(float)
    if missing:
        Y[rng.random(Y.shape) < missing] = np.nan
    return Y, b


def parse_shape(text: str) -> tuple[str, int, int, float]:
    model, _, rest = text.partition(":")
    size, _, missing = rest.partition("@")
    n, m = (int(v) for v in size.split("x"))
    return model, n, m, float(missing or 0.0)


def runners(model: str, missing: bool) -> dict:
    """Name -> function(Y) returning difficulties (NaN where not estimated)."""
    def evalcert_run(method, se):
        def run(Y):
            cls = Rasch if model == "rasch" else TwoPL
            return cls(method=method, standard_errors=se).fit(Y).difficulties_
        return run

    out = {f"evalcert {m}{SE * se}": evalcert_run(m, se) for se in (False, True)
           for m in METHODS[model]}

    def mirt_run(se):
        def run(Y):
            import mirt
            res = mirt.fit_mirt(Y, model="1PL" if model == "rasch" else "2PL",
                                compute_standard_errors=se)
            return res.coef()["difficulty"].to_numpy(float)
        return run
    out["mirt (PyPI) mml"] = mirt_run(False)
    out["mirt (PyPI) mml" + SE] = mirt_run(True)
    if not missing:                 # girth takes complete items x persons matrices
        def girth_run(name):
            def run(Y):
                import girth
                return np.asarray(getattr(girth, name)(Y.T.astype(int))["Difficulty"], float)
            return run
        names = (("rasch_jml", "rasch_conditional", "rasch_mml") if model == "rasch"
                 else ("twopl_mml",))
        out.update({f"girth {n}": girth_run(n) for n in names})
    return out


def _child(run, Y: np.ndarray, repeat: int, peers: str, queue) -> None:
    if peers:
        sys.path.insert(0, peers)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        with warnings.catch_warnings():     # imports and first-call set-up are not timed
            warnings.simplefilter("ignore")
            try:
                run(Y[:40, :30])
            except ImportError:
                raise
            except Exception:
                pass
        best, cpu, out = np.inf, np.inf, None
        for _ in range(repeat):
            start, start_cpu = time.perf_counter(), time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = run(Y)
            best = min(best, time.perf_counter() - start)
            cpu = min(cpu, time.process_time() - start_cpu)
            if best > 5.0:
                break
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        queue.put(("ok", best, np.asarray(out, float), rss, cpu))
    except ImportError as exc:
        queue.put(("not installed", np.nan, str(exc), 0.0, np.nan))
    except Exception as exc:                # a peer's failure is a row, not a crash
        queue.put((f"{type(exc).__name__}: {str(exc)[:60]}", np.nan, None, 0.0, np.nan))


def run_in_child(run, Y: np.ndarray, repeat: int, timeout: float, peers: str):
    """``(status, seconds, output, peak RSS MiB, CPU seconds)`` of ``run(Y)`` in a forked child."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(run, Y, repeat, peers, queue))
    proc.start()
    try:
        result = queue.get(timeout=timeout)     # read before join: a full pipe blocks the child
    except queue_module.Empty:
        proc.kill()
        proc.join()
        return f"stopped after {timeout:g} s", np.nan, None, 0.0, np.nan
    proc.join()
    return result


def child_arguments(parser, repeat: int, timeout: float) -> None:
    """The options every benchmark running its fits through :func:`run_in_child` takes:
    ``--repeat`` (best of), ``--timeout`` (seconds per run) and ``--peers`` (the folder
    holding mirt, default ``/tmp/peers`` when it exists)."""
    parser.add_argument("--repeat", type=int, default=repeat, help="best of this many runs")
    parser.add_argument("--timeout", type=float, default=timeout,
                        help="seconds before a run (any runner) is stopped")
    parser.add_argument("--peers", default="/tmp/peers" if os.path.isdir("/tmp/peers") else "",
                        help="folder holding mirt/girth (pip install --target)")


def load_line(start: tuple[float, float, float]) -> str:
    """The machine's load average at the start (``os.getloadavg()`` then) and now."""
    return (f"load average (1, 5, 15 min) at the start: {start[0]:.2f} {start[1]:.2f} "
            f"{start[2]:.2f}; at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())} "
            f"on {os.cpu_count()} cores")


def recovery(est_b, b: np.ndarray) -> tuple[float, float, float]:
    """Pearson and Spearman correlation with the truth, and regression slope (scale)."""
    est_b = np.asarray(est_b, float)
    ok = np.isfinite(est_b)
    return (float(np.corrcoef(est_b[ok], b[ok])[0, 1]), float(spearmanr(est_b[ok], b[ok])[0]),
            float(np.polyfit(b[ok], est_b[ok], 1)[0]))


def _verdict(results: dict, mine_keys: list, peer_keys: list) -> str:
    """met when evalcert's fastest run beats the fastest peer's and its corr(b) is no lower."""
    def fastest(keys):
        done = [k for k in keys if k in results and np.isfinite(results[k][0])]
        return min(done, key=lambda k: results[k][0]) if done else None

    mine, theirs = fastest(mine_keys), fastest(peer_keys)
    if mine is None:
        return "MISSED: evalcert did not finish"
    (t1, f1, *_), text = results[mine], f"{mine} {results[mine][0]:.3g} s"
    if theirs is None:
        return f"no peer finished; {text} (corr {f1[0]:.3f})"
    t2, f2, *_ = results[theirs]
    ok = t1 < t2 and f1[0] >= f2[0] - 0.01
    return (f"{'met' if ok else 'MISSED'}: {text} (corr {f1[0]:.3f}) vs {theirs} {t2:.3g} s "
            f"(corr {f2[0]:.3f})")


def _peers(results: dict, with_se: bool) -> list:
    """Peer runs that finished, of one kind: with standard errors or without."""
    return [k for k, v in results.items() if not k.startswith("evalcert")
            and k.endswith(SE) == with_se and np.isfinite(v[0])]


def table_rows(shape: str, results: dict) -> list:
    """One row per run; "vs best peer" against the fastest peer of the same kind (SEs or not)."""
    rows = []
    for name, (took, fit, status, rss, cpu) in results.items():
        peers = _peers(results, name.endswith(SE))
        best = min((results[k][0] for k in peers), default=np.nan)
        rows.append((shape, name, took, cpu, took / best, *fit, rss, status))
    return rows


def shape_verdicts(shape: str, model: str, results: dict) -> list:
    """Like-for-like verdicts: evalcert without SEs vs peers without, and with vs with."""
    out = []
    for se in (False, True):
        kind = SE * se
        peers = [k for k in results if not k.startswith("evalcert") and k.endswith(SE) == se]
        mine = [k for k in results if k.startswith("evalcert") and k.endswith(SE) == se]
        if not peers:
            out.append((shape, f"evalcert{kind} vs the peers{kind}", "no peer run"))
            continue
        out.append((shape, f"evalcert mml{kind} vs the fastest peer mml{kind}, recovery as good",
                    _verdict(results, [f"evalcert mml{kind}"],
                             [k for k in peers if k.removesuffix(SE).endswith("mml")])))
        out.append((shape, f"fastest evalcert method{kind} vs the fastest peer{kind}, "
                    "recovery as good", _verdict(results, mine, peers)))
        for name in [k for k in mine if model == "rasch" and k != f"evalcert mml{kind}"]:
            out.append((shape, f"{name} vs the fastest peer{kind}, recovery as good",
                        _verdict(results, [name], peers)))
    return out


REAL = {"PSN-IRT 2pl": ("PSN-IRT/combine.csv", False),
        "ChemBench 2pl": ("irt-on-bench/binary_matrix.csv", True)}
REAL_HEADERS = ["data", "runner", "seconds", "CPU s", "Kendall(ability, accuracy)",
                "negative slopes", "peak RSS MiB", "status"]


def read_real(root: str, path: str, transposed: bool) -> np.ndarray:
    """Models x items 0/1 matrix; items every model got right (or wrong) dropped."""
    import pandas as pd

    full = os.path.join(root, path)
    frame = (pd.read_csv(full, index_col=0).T if transposed
             else pd.read_csv(full, header=None))
    Y = frame.to_numpy(float)
    share = Y.mean(0)
    return Y[:, (share > 0) & (share < 1)]


def real_runners() -> dict:
    """Name -> function(Y) returning (abilities, slopes)."""
    def evalcert_run(prior, se):
        def run(Y):
            est = TwoPL(method="mml", slope_prior=prior, standard_errors=se).fit(Y)
            return np.concatenate([est.abilities_, est.discriminations_])
        return run

    def mirt_run(se):
        def run(Y):
            import mirt
            res = mirt.fit_mirt(Y, model="2PL", compute_standard_errors=se)
            theta = np.asarray(mirt.fscores(res, Y).theta, float).ravel()
            return np.concatenate([theta, res.coef()["discrimination"].to_numpy(float)])
        return run

    out = {}
    for se in (False, True):
        out[f"evalcert mml{SE * se}"] = evalcert_run(4.0, se)
        out[f"evalcert mml slope_prior=0{SE * se}"] = evalcert_run(0.0, se)
        out[f"mirt (PyPI) mml{SE * se}"] = mirt_run(se)
    return out


def run_real(args) -> None:
    root = args.data
    rows, matrices = [], []
    for label, (path, transposed) in REAL.items():
        if args.datasets and not any(label.lower().startswith(name.lower())
                                     for name in args.datasets):
            continue
        if not os.path.exists(os.path.join(root, path)):
            print(f"{label}: {path} not found under {root}; skipped", file=sys.stderr)
            continue
        Y = read_real(root, path, transposed)
        matrices.append((label, Y))
        accuracy = Y.mean(1)
        for name, run in real_runners().items():
            if args.skip_peers and not name.startswith("evalcert"):
                continue
            status, took, out, rss, cpu = run_in_child(run, Y, args.repeat, args.timeout,
                                                       args.peers)
            tau, negative = np.nan, np.nan
            if status == "ok":
                tau = float(kendalltau(out[:Y.shape[0]], accuracy)[0])
                negative = int(np.sum(out[Y.shape[0]:] < 0))
            rows.append((f"{label} {Y.shape[0]}x{Y.shape[1]}", name, took, cpu, tau, negative,
                         rss, status))
            print(f"{label:14s} {name:28s} {took:8.3g} s  Kendall {tau:.3f}  {status}",
                  file=sys.stderr, flush=True)
    print(format_table(rows, REAL_HEADERS))
    print()
    print(format_table([kernel_row(f"{label} {Y.shape[0]}x{Y.shape[1]}", binary_estep(Y))
                        for label, Y in matrices], KERNEL_HEADERS))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=SHAPES)
    child_arguments(parser, repeat=3, timeout=120.0)
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--real", action="store_true",
                        help="also fit PSN-IRT and ChemBench from ../shared/data/irt")
    parser.add_argument("--real-only", action="store_true", help="only the real matrices")
    parser.add_argument("--datasets", nargs="+", default=None,
                        help="with --real: only these real matrices (e.g. ChemBench PSN-IRT)")
    parser.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                       "shared", "data", "irt"),
                        help="folder of the shared IRT matrices (PSN-IRT/, irt-on-bench/)")
    args = parser.parse_args()
    if args.real or args.real_only:
        run_real(args)
        if args.real_only:
            return
    rows, verdicts, kernels = [], [], []
    for shape in args.shapes:
        model, n, m, missing = parse_shape(shape)
        Y, b = simulate(model, n, m, missing)
        kernels.append(kernel_row(shape, binary_estep(Y, rasch=model == "rasch")))
        results = {}
        for name, run in runners(model, missing > 0).items():
            if args.skip_peers and not name.startswith("evalcert"):
                continue
            status, took, est, rss, cpu = run_in_child(run, Y, args.repeat, args.timeout,
                                                       args.peers)
            fit = recovery(est, b) if status == "ok" else (np.nan,) * 3
            results[name] = (took, fit, status, rss, cpu)
            print(f"{shape:22s} {name:24s} {took:8.3g} s (CPU {cpu:.3g} s)  corr(b) "
                  f"{fit[0]:.3f}  peak RSS {rss:.0f} MiB  {status}", file=sys.stderr, flush=True)
        rows += table_rows(shape, results)
        verdicts += shape_verdicts(shape, model, results)
        for (target_shape, runner), limit in TARGETS.items():
            if target_shape == shape and runner in results:
                took = results[runner][0]
                verdicts.append((shape, f"{runner} < {limit:g} s",
                                 ("met" if took < limit else "MISSED") + f": {took:.3g} s"))
    print(format_table(rows, HEADERS))
    print()
    print(format_table(verdicts, ["shape", "target", "verdict"]))
    print()
    print(format_table(kernels, KERNEL_HEADERS))


if __name__ == "__main__":
    main()
