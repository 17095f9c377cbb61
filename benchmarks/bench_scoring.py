"""Benchmark scoring new models on frozen 2PL items against mirt's ``fscores`` (a script).

Shapes (new models x frozen items, optional share of missing cells after ``@``):
1000 x 200 and 1000 x 5000 (issue 26), and 1000 x 5000 with half the cells
missing. The items are the true ones (slopes lognormal(0, 0.4), difficulties
N(0, 1)); abilities are N(0, 1), the prior of EAP and MAP. Each runner scores
every model by EAP, MAP, WLE and ML in its own forked child process (timed
inside it, best of ``--repeat``; peak RSS of the child), one thread each.
Columns: wall and CPU seconds, mirt's time over evalcert's (``mirt /
evalcert``, wall and CPU; above 1 = evalcert faster; on a shared machine the
CPU ratio is the steadier), RMSE of the scores to the true abilities, and
peak RSS.

mirt (PyPI, the Python package, not the R one) is a benchmark-only peer:
install it outside the project environment and point ``--peers`` at its
``site-packages``::

    python3 -m venv /tmp/peers-venv && /tmp/peers-venv/bin/pip install mirt
    python benchmarks/bench_scoring.py --peers /tmp/peers-venv/lib/python3.11/site-packages

Like for like: both score with the true items and an N(0, 1) prior; mirt's
EAP uses its default 49 Gauss-Hermite nodes (less accurate than evalcert's on
5,000 items, where a posterior sd is ~0.03: compare the RMSE column), its
MAP/ML/WLE search ``[-6, 6]``.
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from bench_irt import parse_shape, run_in_child  # noqa: E402
from evalcert.results import format_table  # noqa: E402
from evalcert.irt.information import ItemParameters  # noqa: E402
from evalcert.irt.scoring import score_abilities  # noqa: E402

SHAPES = ["2pl:1000x200", "2pl:1000x5000", "2pl:1000x5000@0.5"]
METHODS = ("eap", "map", "wle", "ml")
HEADERS = ["shape", "method", "runner", "seconds", "CPU s", "mirt / evalcert",
           "mirt / evalcert CPU", "RMSE to truth", "peak RSS MiB", "status"]


def simulate(n_models: int, n_items: int, missing: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    a, b = rng.lognormal(0, 0.4, n_items), rng.normal(size=n_items)
    theta = rng.normal(size=n_models)
    p = 1 / (1 + np.exp(-a * (theta[:, None] - b)))
    Y = (rng.random(p.shape) < p).astype(float)
    if missing:
        Y[rng.random(Y.shape) < missing] = np.nan
    return Y, a, b, theta


def runners(a: np.ndarray, b: np.ndarray, method: str) -> dict:
    """Name -> function(Y) returning the abilities."""
    params = ItemParameters(a, b, np.zeros(a.size), tuple(map(str, range(a.size))), "2pl")

    def evalcert_run(Y):
        obs = ~np.isnan(Y)
        return score_abilities(params, Y if obs.all() else np.where(obs, Y, 0.0), obs,
                               method=method, prior=(0.0, 1.0))[0]

    def mirt_run(Y):
        from mirt import fscores
        from mirt.models.dichotomous import TwoParameterLogistic

        model = TwoParameterLogistic(n_items=a.size)
        model.set_parameters(discrimination=a, difficulty=b)
        model._is_fitted = True             # frozen items: no fit
        return np.asarray(fscores(model, Y, method=method.upper()).theta, float).ravel()

    return {"evalcert": evalcert_run, "mirt (PyPI)": mirt_run}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=SHAPES)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--peers", default="/tmp/peers" if os.path.isdir("/tmp/peers") else "",
                        help="folder holding mirt (a site-packages or pip --target folder)")
    args = parser.parse_args()
    rows, ratios = [], []
    for shape in args.shapes:
        _, n, m, missing = parse_shape(shape)
        Y, a, b, theta = simulate(n, m, missing)
        for method in args.methods:
            got = {}
            for name, run in runners(a, b, method).items():
                status, took, out, rss, cpu = run_in_child(run, Y, args.repeat, args.timeout,
                                                           args.peers)
                rmse = (float(np.sqrt(np.mean((np.clip(out, -6, 6) - theta) ** 2)))
                        if status == "ok" else np.nan)
                got[name] = (took, cpu, rmse, rss, status)
                print(f"{shape:18s} {method:4s} {name:12s} {took:8.3g} s  RMSE {rmse:.4f}  "
                      f"{status}", file=sys.stderr, flush=True)
            mine, mine_cpu = got["evalcert"][0], got["evalcert"][1]
            for name, (took, cpu, rmse, rss, status) in got.items():
                ratio = took / mine if name != "evalcert" else np.nan
                ratio_cpu = cpu / mine_cpu if name != "evalcert" else np.nan
                rows.append((shape, method, name, took, cpu, ratio, ratio_cpu, rmse, rss, status))
                if name != "evalcert" and np.isfinite(ratio):
                    ratios.append((shape, method, ratio, ratio_cpu))
    print(format_table(rows, HEADERS))
    for k, what in ((2, "wall"), (3, "CPU")):
        if ratios:
            worst = min(ratios, key=lambda r: r[k])
            print(f"slowest {what} ratio: mirt takes {worst[k]:.2f}x evalcert's time "
                  f"({worst[0]}, {worst[1]}); issue 26 asks for >= 2: "
                  f"{'met' if worst[k] >= 2 else 'NOT met'}")


if __name__ == "__main__":
    main()
