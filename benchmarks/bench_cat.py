"""Adaptive testing vs random items and static anchors on a simulated 2PL bank (a script).

Issue 26's criterion: 400 models x 3,000 items (slopes lognormal(0, 0.5),
difficulties and abilities N(0, 1)); a 2PL is fitted by marginal ML on 320
models, and the other 80 are tested on 50 items each. Printed: the mean
absolute error of each held-out model's predicted full-bank accuracy after
``n`` items, by adaptive selection (each ``--selection``), by ``n`` random
items and by ``n`` static information anchors (the same EAP posterior
prediction for all three), the ratio adaptive / random at 50 items (issue 26
asks for <= 0.9, with EAP and with MAP updates: ``--update``), wall and CPU
seconds of the fit and of each replay, and peak RSS::

    python benchmarks/bench_cat.py [--models 400] [--items 3000] [--max-items 50]
        [--selection mfi kl astrat random] [--update eap map] [--seed 0]
        [--peers SITE_PACKAGES]

Per-step updates (issue 26 item 2): one held-out model is tested by
:func:`~evalcert.irt.cat.run_cat` (``mfi``, ``--max-items`` items) with EAP
and with MAP updates; the CPU time of the ability updates alone (the CAT
engine's ``record``, best of 3 tests) is divided by the number of steps. Beside
it, one scoring of the same model's row (its administered answers, NaN
elsewhere, on the whole fitted bank) by mirt's ``fscores`` (EAP and MAP, frozen
items; best of 3) when mirt is importable (``--peers``: a folder holding it),
and by evalcert's :func:`~evalcert.irt.scoring.score_abilities`. A CAT update
re-scores the model after every answer, so it is compared with one such call
(issue 26 asks for MAP at most 0.5x mirt's CPU).

Hot kernel against a floor measured in the same run: the updates of that test
against the fewest ``exp`` calls they cannot do without, each over as many
values as the update evaluates, for every step of the test (best of 3).
An EAP update re-weights the grid posterior: one ``exp`` over its nodes per
step. A MAP update takes Newton steps one after the other, each evaluating
every answered item: one ``exp`` over the answered items per pass over them
(the passes of each step counted by the engine). The calls are tiny (50 values
at most), so the floor is mostly numpy's per-call cost, which a sequential
Newton step pays at least once.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from evalcert.results import format_table  # noqa: E402
from evalcert.irt import TwoPL  # noqa: E402
from evalcert.irt.cat import simulate_cat  # noqa: E402
from evalcert.irt.information import item_parameters  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from irt_kernels import best_of  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=400)
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--max-items", type=int, default=50)
    parser.add_argument("--selection", nargs="+", default=["mfi", "kl", "astrat"])
    parser.add_argument("--update", nargs="+", default=["eap", "map"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--peers", default="/tmp/peers" if os.path.isdir("/tmp/peers") else "",
                        help="folder holding mirt (a site-packages or pip --target folder)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    a, b = rng.lognormal(0, 0.5, args.items), rng.normal(size=args.items)
    theta = rng.normal(size=args.models)
    P = 1 / (1 + np.exp(-a * (theta[:, None] - b)))
    Y = (rng.random(P.shape) < P).astype(float)
    test = np.zeros(args.models, bool)
    test[rng.choice(args.models, int(round(0.2 * args.models)), replace=False)] = True
    t0, c0 = time.perf_counter(), time.process_time()
    fit = TwoPL(method="mml", standard_errors=False).fit(Y[~test])
    fit_wall, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"2PL fit on {int((~test).sum())} x {args.items}: {fit_wall:.1f} s "
          f"(CPU {fit_cpu:.1f} s); corr(a) with truth "
          f"{np.corrcoef(item_parameters(fit).a, a)[0, 1]:.3f}", flush=True)
    rows, verdicts = [], []
    for update in args.update:
        for selection in args.selection:
            t0, c0 = time.perf_counter(), time.process_time()
            res = simulate_cat(fit, Y[test], holdout=None, max_items=args.max_items,
                               selection=selection, update=update, seed=args.seed)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            for c in res.curve:
                rows.append((selection, update, c["n_items"], c["mae_accuracy"],
                             c["mae_random"], c["mae_anchors"],
                             c["mae_accuracy"] / c["mae_random"]))
            final = res.curve[-1]
            ratio = final["mae_accuracy"] / final["mae_random"]
            verdicts.append(f"{selection} {update}: {final['n_items']} items, MAE adaptive "
                            f"{final['mae_accuracy']:.4f}, random {final['mae_random']:.4f}, "
                            f"anchors {final['mae_anchors']:.4f}; adaptive / random "
                            f"{ratio:.3f} ({'met' if ratio <= 0.9 else 'NOT met'}: <= 0.9); "
                            f"replay of {len(res.models)} models {wall:.1f} s "
                            f"(CPU {cpu:.1f} s)")
    print(format_table(rows, ["selection", "update", "items", "MAE adaptive", "MAE random",
                              "MAE anchors", "adaptive / random"]))
    print("\n" + "\n".join(verdicts))
    print()
    steps, kernels = step_rows(fit, Y[np.flatnonzero(test)[0]], args.max_items, args.peers)
    print(format_table(steps, ["update", "steps", "evalcert CPU ms / step",
                               "evalcert score_abilities CPU ms", "mirt fscores CPU ms",
                               "step / mirt"]))
    for update, _, step, _, theirs, ratio in steps:
        if update == "map" and np.isfinite(ratio):
            print(f"MAP update {step:.4f} ms / step vs mirt fscores MAP {theirs:.4f} ms: "
                  f"{ratio:.2f}x ({'met' if ratio <= 0.5 else 'NOT met'}: <= 0.5x)")
    print()
    print(format_table(kernels, ["update", "exp calls", "values", "kernel CPU ms",
                                 "floor CPU ms (exp calls)", "kernel / floor"]))
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def _best_cpu(fn, repeat: int = 3) -> float:
    return best_of(fn, repeat, clock=time.process_time)


def exp_floor(sizes: list[int], repeat: int = 3) -> float:
    """CPU seconds of one ``np.exp`` call per entry of ``sizes``, each over that many values,
    in turn (best of ``repeat``)."""
    arrays = [np.random.default_rng(0).uniform(-3, 3, k) for k in sizes]

    def calls():
        for x in arrays:
            np.exp(x)
    return best_of(calls, repeat, clock=time.process_time)


def step_rows(fit, row: np.ndarray, max_items: int, peers: str) -> tuple[list, list]:
    """Per-step CPU of the CAT's ability updates against one scoring call, and the updates
    of one test against their ``exp`` floor (see the docstring)."""
    import evalcert.irt.cat as cat
    from evalcert.irt.scoring import score_abilities

    params = item_parameters(fit)
    keep = np.flatnonzero(params.usable)        # items the fit kept (finite parameters)
    params, row = params.take(keep), row[keep]
    names = {name: j for j, name in enumerate(params.item_names)}
    spent, sizes = [0.0], []
    record = cat._Engine.record

    def timed_record(self, idx, *args):         # the update alone, not the item selection
        passes = self.passes
        c0 = time.process_time()
        record(self, idx, *args)
        spent[0] += time.process_time() - c0
        answered = len(self.items[idx[0]])
        sizes.extend([answered] * (self.passes - passes) if self.update == "map"
                     else [self.nodes.size])

    mirt_fscores = None
    if peers:
        sys.path.insert(0, peers)
    try:
        from mirt import fscores as mirt_fscores
        from mirt.models.dichotomous import TwoParameterLogistic
    except ImportError:
        pass
    rows, kernels = [], []
    cat._Engine.record = timed_record
    try:
        for update in cat.CAT_UPDATES:
            best, session = np.inf, None
            for _ in range(3):
                spent[0], sizes[:] = 0.0, []
                session = cat.run_cat(params, lambda item: float(row[names[item]]),
                                      max_items=max_items, update=update)
                best = min(best, spent[0])
            steps = session.items_used
            floor = exp_floor(sizes)
            kernels.append((update, len(sizes), sum(sizes), 1e3 * best, 1e3 * floor,
                            best / floor))
            seen = np.full(row.size, np.nan)
            asked = [names[i] for i in session.items]
            seen[asked] = row[asked]
            one = seen[None, :]
            ours = _best_cpu(lambda: score_abilities(params, np.nan_to_num(one), ~np.isnan(one),
                                                     method=update, prior=(0.0, 1.0)))
            theirs = np.nan
            if mirt_fscores is not None:
                model = TwoParameterLogistic(n_items=params.a.size)
                model.set_parameters(discrimination=params.a, difficulty=params.b)
                model._is_fitted = True             # frozen items: no fit
                mirt_fscores(model, one, method=update.upper())     # warm-up
                theirs = _best_cpu(lambda: mirt_fscores(model, one, method=update.upper()))
            rows.append((update, steps, 1e3 * best / steps, 1e3 * ours, 1e3 * theirs,
                         (best / steps) / theirs))
    finally:
        cat._Engine.record = record
    if mirt_fscores is None:
        print("mirt not importable (--peers): evalcert's per-step CPU only")
    return rows, kernels

if __name__ == "__main__":
    main()
