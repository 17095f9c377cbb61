"""Benchmark the IRT estimators on synthetic data (a script, not a test).

Rasch and 2PL data at 1000 models x 200 items and 100 x 5000 (the LLM shape);
for every method: wall time, correlation of difficulties with the truth and
the slope (scale) of that regression. girth runs side by side when it is
importable (girth takes items x persons). Targets: Rasch CML at 100 x 5000
< 3 s; 2PL MML at 100 x 5000 < 20 s; JML/MML at 1000 x 200 no slower than girth.

    python benchmarks/bench_irt.py [--skip-girth]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
import warnings

import numpy as np
from scipy.stats import spearmanr

from evalcert.errors import ConvergenceError
from evalcert.results import format_table
from evalcert.solvers.irt import Rasch, TwoPL


HEADERS = ["model", "size", "method", "seconds", "corr(b)", "rank corr(b)", "slope(b)", "status"]


def simulate(n_models: int, n_items: int, slopes: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=n_models), rng.normal(size=n_items)
    a = rng.lognormal(0, 0.3, n_items) if slopes else np.ones(n_items)
    Y = (rng.random((n_models, n_items)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(float)
    return Y, b


def recovery(est_b: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """Pearson and Spearman correlation with the truth, and regression slope (scale)."""
    ok = np.isfinite(est_b)
    return (float(np.corrcoef(est_b[ok], b[ok])[0, 1]), float(spearmanr(est_b[ok], b[ok])[0]),
            float(np.polyfit(b[ok], est_b[ok], 1)[0]))


def girth_runs(slopes: bool):
    try:
        import girth
    except ImportError:
        return {}
    if slopes:
        return {"girth twopl_mml": lambda Y: girth.twopl_mml(Y.T.astype(int))["Difficulty"],
                "girth twopl_jml": lambda Y: girth.twopl_jml(Y.T.astype(int))["Difficulty"]}
    return {"girth rasch_jml": lambda Y: girth.rasch_jml(Y.T.astype(int))["Difficulty"],
            "girth rasch_mml": lambda Y: girth.rasch_mml(Y.T.astype(int))["Difficulty"],
            "girth rasch_conditional":
                lambda Y: girth.rasch_conditional(Y.T.astype(int))["Difficulty"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-girth", action="store_true")
    parser.add_argument("--models", nargs="+", default=["rasch", "2pl"])
    parser.add_argument("--sizes", nargs="+", default=["1000x200", "100x5000"])
    parser.add_argument("--girth-timeout", type=float, default=120.0,
                        help="seconds before a girth run is stopped")
    args = parser.parse_args()
    rows = []
    for slopes, model in ((False, "rasch"), (True, "2pl")):
        if model not in args.models:
            continue
        for shape in (tuple(int(v) for v in size.split("x")) for size in args.sizes):
            Y, b = simulate(*shape, slopes=slopes)
            keep = (Y.mean(0) > 0) & (Y.mean(0) < 1)
            runs = ({f"evalcert {m}": (lambda Y, m=m: Rasch(method=m).fit(Y).difficulties_)
                     for m in ("jml", "cml", "mml", "map")} if not slopes else
                    {f"evalcert {m}": (lambda Y, m=m: TwoPL(method=m, max_iter=500).fit(Y).difficulties_)
                     for m in ("jml", "mml", "map")})
            if not args.skip_girth:
                for name, f in girth_runs(slopes).items():
                    runs[name] = lambda Y, name=name: _scatter(
                        _with_timeout(name, Y[:, keep], args.girth_timeout), keep)
            for name, run in runs.items():
                start = time.perf_counter()
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est_b = np.asarray(run(Y), dtype=float)
                    r, rho, slope = recovery(est_b, b)
                    status = "ok"
                except ConvergenceError as exc:
                    r = rho = slope = float("nan")
                    status = f"ConvergenceError ({str(exc)[:40]}...)"
                except TimeoutError as exc:
                    r = rho = slope = float("nan")
                    status = str(exc)
                seconds = time.perf_counter() - start
                rows.append((model, f"{shape[0]}x{shape[1]}", name, seconds, r, rho, slope,
                             status))
                print(format_table(rows[-1:], HEADERS).splitlines()[-1], flush=True)
    print()
    print(format_table(rows, HEADERS))


def _girth_worker(name: str, Y: np.ndarray, queue) -> None:
    slopes = "twopl" in name
    queue.put(np.asarray(girth_runs(slopes)[name](Y), dtype=float))


def _with_timeout(name: str, Y: np.ndarray, timeout: float) -> np.ndarray:
    """Run one girth estimator in a child process; stop it after ``timeout`` s."""
    queue = mp.get_context("fork").Queue()
    proc = mp.get_context("fork").Process(target=_girth_worker, args=(name, Y, queue))
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.terminate()
        proc.join()
        raise TimeoutError(f"stopped after {timeout:g} s")
    return queue.get()


def _scatter(values, keep):
    out = np.full(keep.size, np.nan)
    out[keep] = values
    return out


if __name__ == "__main__":
    main()
